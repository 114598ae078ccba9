"""The tailguard constraint language: parsing and loading of ``spec/clauses.toml``.

Standard library only. The language is parsed, never ``eval``'d.
"""
