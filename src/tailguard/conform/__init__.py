"""Conformance kit: replay the vectors (and random cases) through another implementation.

- :mod:`.protocol`: the line protocol and the child process that speaks it;
- :mod:`.vectors`: reading ``spec/vectors/`` (checked against its manifest);
- :mod:`.harness`: comparison modes, the run, the mismatch report;
- :mod:`.reference_impl`: the Python reference implementation of the protocol
  (``python -m tailguard.conform.reference_impl``), a thin wrapper around the generated checker.

Standard library only: conformance never needs a solver.
"""
