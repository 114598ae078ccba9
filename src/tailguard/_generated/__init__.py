"""Generated from ``spec/clauses.toml`` by ``tailguard gen``: the runtime checker (do not edit).

``checker.py`` is one standard-library module you can vendor; ``tailguard gen --check`` fails
when it is stale.
"""
