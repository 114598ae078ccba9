"""Hypothesis strategies for ``tailguard check`` cases (the JSON field dict).

Built to reach the boundaries rather than to cover a wide range: small integers
(-2 .. 14), endpoints drawn from a small pool shared by every field (so intervals
touch, nest and align), ``lo == hi``, ``t == n``, ``t == n - F``, ``F > n``, empty
lists, and malformed values (negative offsets, ``lo > hi``, ``hi > n``, unknown unit
names). ``cases()`` mixes well-formed and malformed cases; ``well_formed_cases()``
only produces cases that pass strict ``well_formed``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tailguard.base.vocab import Pair

Case = dict[str, Any]

KNOWN_UNITS = ("turns", "messages", "tokens")
# Unknown names that look like known ones: case, whitespace, plural, empty.
ODD_UNITS = ("Turns", "turn", "tokens ", "", "bytes")

SMALL = st.integers(min_value=-2, max_value=14)


def _pair_from(endpoint: st.SearchStrategy[int]) -> st.SearchStrategy[Pair]:
    return st.one_of(
        st.tuples(endpoint, endpoint),                     # any order: lo > hi included
        endpoint.map(lambda x: (x, x)),                    # lo == hi (empty)
        st.tuples(endpoint, endpoint).map(lambda p: (min(p), max(p))),  # ordered
    )


@st.composite
def cases(draw: st.DrawFn, *, well_formed: bool = False, max_intervals: int = 4) -> Case:
    """A case; with ``well_formed=True`` only cases that pass strict ``well_formed``."""
    n = draw(st.integers(0, 12) if well_formed else st.one_of(st.integers(0, 12), SMALL))
    F = draw(st.one_of(
        st.integers(0, 4),
        st.sampled_from([n, n + 1, n - 1, n + 5]),         # F == n, F > n, F just below n
        st.integers(0, 14) if well_formed else SMALL,
    ))
    if well_formed:
        F = max(F, 0)
    # A pool of endpoints shared across every field: aligned and touching intervals.
    specials = [0, n, n - F, max(0, n - F), n - 1, 1]
    pool = draw(st.lists(SMALL, max_size=4)) + specials
    if well_formed:
        pool = [x for x in pool if 0 <= x <= n] or [0]
        endpoint = st.one_of(st.sampled_from(pool), st.integers(0, n))
    else:
        endpoint = st.one_of(st.sampled_from(pool), SMALL)

    t = draw(st.one_of(
        st.sampled_from([n, n - F, max(0, n - F), 0, n - 1, n - F + 1]),
        endpoint,
    ))
    if well_formed:
        t = min(max(t, 0), n)

    def pair() -> st.SearchStrategy[Pair]:
        p = _pair_from(endpoint)
        return p.map(lambda q: (min(q), max(q))) if well_formed else p

    def pairs() -> st.SearchStrategy[list[Pair]]:
        return st.lists(pair(), max_size=max_intervals)

    if well_formed:
        unit = st.sampled_from(KNOWN_UNITS)
    else:
        unit = st.one_of(st.sampled_from(KNOWN_UNITS), st.sampled_from(ODD_UNITS))
    floor_unit = draw(unit)
    # Mostly equal units, so that the later clauses (seed reports only the first) get exercised.
    same = st.just(floor_unit)
    truncator_unit = draw(st.one_of(same, same, same, unit))
    return {
        "history_end": n,
        "tail_start": t,
        "summary_input": draw(pair()),
        "summary_covers": draw(pair()),
        "recovery_floor_span": F,
        "floor_unit": floor_unit,
        "truncator_unit": truncator_unit,
        "prior_truncations": draw(pairs()),
        "prior_coverage": draw(pairs()),
        "spills": draw(pairs()),
    }


def well_formed_cases(*, max_intervals: int = 4) -> st.SearchStrategy[Case]:
    """Cases that pass strict ``well_formed`` (n >= 0, F >= 0, 0 <= t <= n, ...)."""
    return cases(well_formed=True, max_intervals=max_intervals)


def any_cases(*, max_intervals: int = 4) -> st.SearchStrategy[Case]:
    """Half well-formed, half anything (malformed values included)."""
    return st.one_of(cases(well_formed=True, max_intervals=max_intervals),
                     cases(well_formed=False, max_intervals=max_intervals))
