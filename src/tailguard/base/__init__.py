"""Ground: the vocabulary every room shares (errors, pairs and units, interval sets, strict JSON).

Standard library only, and it imports nothing of tailguard but the generated checker, so every
other room may stand on it.
"""
