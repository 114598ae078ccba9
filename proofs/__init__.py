"""Theorems about the spec (brief section 5), one module per part of spec/clauses.toml.

- ``profile_seed``: the seed profile on its own (theorems 5, 6).
- ``profile_strict``: the strict profile on its own (theorems 1, 2, 7).
- ``profiles_compared``: seed and strict side by side (theorems 3, 4, 8, 9).
- ``profile_partitioned``: profile partitioned, against strict (theorems 10 to 13).
- ``lineage``: summary lineage, spec 1.1's prior coverage against 1.0's (theorem 14 and its
  witnesses 14w and 14k).
- ``spec_pins``: pinned facts of the spec (theorems 16 and 17; 15 is in ``profile_seed``).
- ``pipeline``: the reference pipeline's abstraction behind check-config (P1 to P6).
- ``runtime_algorithms``: the generated checker file, read back (theorem 18).
- ``ledger_decision`` and ``ledger_state``: the ledger core, read back: its decision and the
  event methods that keep the state it decides from (theorem 19).

Twenty theorems about the spec (T1 to T17, with witnesses T8w, T14w and T14k), two about the
code that runs (T18, T19) and six about the pipeline (P1 to P6): twenty-eight in all.

Every theorem takes an optional spec (default: the project's) so that tests can
break the encoding on purpose and watch the right theorem fail.

``tailguard prove`` imports every module here whose name does not start with ``_``.
"""
