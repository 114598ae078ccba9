"""Theorems about the spec (brief section 5), one module per part of spec/clauses.toml.

- ``profile_seed``: the seed profile on its own (theorems 5, 6).
- ``profile_strict``: the strict profile on its own (theorems 1, 2, 7).
- ``profiles_compared``: seed and strict side by side (theorems 3, 4, 8, 9).
- ``profile_partitioned``: profile partitioned, against strict (theorems 10 to 13).
- ``lineage``: summary lineage, spec 1.1's prior coverage against 1.0's (theorem 14 and its
  witness 14w).
- ``pipeline``: the reference pipeline's abstraction behind check-config (P1 to P4).

Sixteen theorems about the spec (T1 to T14, with witnesses T8w and T14w) and four about the
pipeline: twenty in all.

Every theorem takes an optional spec (default: the project's) so that tests can
break the encoding on purpose and watch the right theorem fail.

``tailguard prove`` imports every module here whose name does not start with ``_``.
"""
