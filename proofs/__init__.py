"""Theorems about the spec (brief section 5), one module per part of spec/clauses.toml.

- ``profile_seed``: the seed profile on its own (theorems 5, 6).
- ``profile_strict``: the strict profile on its own (theorems 1, 2, 7).
- ``profiles_compared``: the two profiles side by side (theorems 3, 4, 8, 9).

Every theorem takes an optional spec (default: the project's) so that tests can
break the encoding on purpose and watch the right theorem fail.

``tailguard prove`` imports every module here whose name does not start with ``_``.
"""
