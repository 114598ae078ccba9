"""One driver module per framework: the real package driven offline against its preset.

A driver imports its framework at module level, so importing it is the test of whether the
framework is there; nothing else in tailguard imports a driver but ``tailguard doctor``
(lazily, :mod:`tailguard.doctor.run`) and the tests. Each module defines

``cases(rng: random.Random, sessions: int) -> list[Case]``
    the checks ``doctor`` runs: ``sessions`` differential sessions of the preset (the first a
    fixed one that compacts, so the check is never vacuous, the rest drawn from ``rng`` as the
    tests' Hypothesis strategies draw them) and, where the framework has an adapter, runs of
    the adapter. Each :class:`~tailguard.doctor.harness.Case` runs one session and returns
    how many real compactions it compared, or raises
    :class:`~tailguard.doctor.harness.Mismatch` at the first disagreement.

The session runners themselves (``run`` and the like) are what the differential tests in
tests/presets call with Hypothesis's sessions: one copy, two callers.
"""
