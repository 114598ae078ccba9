"""Shrinking a failing session (issue 26): fewer appends, then smaller ones, in the model.

The concrete falsifier (:mod:`tailguard.pipeline.falsify`) returns the first session of its
families that loses something, often longer than needed (several compaction cycles before
the one that loses, a trunk of turns where fewer would do). :func:`shrink` makes it smaller
in the style of delta debugging, replaying every candidate through the executable model
(:func:`tailguard.pipeline.model.step`) and keeping one only when it still **finds its first
loss at its last append, with the same kinds of finding at the same stages** (the
``(kind, stage)`` set of the last append's findings):

1. **drop turns**: from each run of equal appends (oldest first) remove as many as still fail,
   trying the whole run, then half as many, and so on; then **merge** the run's appends in
   pairs (tokens and messages summed, within the policy's shape: half the appends for the same
   occupancy), repeated while it still fails;
2. **lower runs**: each run's size, then its message count, lowered together (the smallest
   that still fails, by bisection), and its spill writes made to succeed if it still fails,
   so the session still reads as runs (``2000 x97, 1, 2000``);
3. **local check**, oldest first, repeated until a pass changes nothing: remove one append
   (one probe per run: any append of a run removes to the same session), lower one append's
   size (one token less; if that fails too, the smallest by bisection), its messages (one
   fewer, then the fewest), and let its spill writes succeed.

A pass of (3) that changes nothing is the guarantee, :attr:`Shrunk.minimal`: **locally
minimal**, no single append can be removed, made one token or one message smaller, or have
its failed write succeed, and the session still lose the same way. Every probe runs the
rest of the session from a state kept along the pass (one model append a step), and all of it
is bounded by ``steps`` model appends: when they run out, the session shrunk so far is
returned (it fails as required, every candidate kept was replayed) with ``minimal`` false.
Deterministic: a function of the policy, the session and ``steps``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tailguard.pipeline.model import DEFAULT_PROFILE, Finding, Profile, Session, State, lowest_working, step
from tailguard.pipeline.policy import Policy

Row = tuple[int, int, bool]  # one append: tokens, messages, spill writes fail
Signature = frozenset[tuple[str, int]]  # (kind, stage) of the findings of the last append


@dataclass(frozen=True)
class Shrunk:
    """A session that still fails as the original did, and whether it is locally minimal."""

    session: Session
    findings: tuple[Finding, ...]
    minimal: bool  # the local check ran to the end: no single append can be removed or shrunk


class _OutOfSteps(Exception):
    """The shrink's model-append budget ran out (the session so far is returned)."""


def signature(findings: tuple[Finding, ...] | list[Finding]) -> Signature:
    """What "the same finding" means here: the kinds and stages of the last append's."""
    return frozenset((f.kind, f.stage) for f in findings)


def rows_of(policy: Policy, session: Session) -> list[Row]:
    return [(size, session.count(policy, k), k + 1 in session.failures)
            for k, size in enumerate(session.sizes)]


def session_of(policy: Policy, rows: list[Row]) -> Session:
    plain = all(m == policy.messages_per_turn[0] for _, m, _ in rows)
    return Session(tuple(r[0] for r in rows), () if plain else tuple(r[1] for r in rows),
                   frozenset(k + 1 for k, r in enumerate(rows) if r[2]))


class _Shrinker:
    def __init__(self, policy: Policy, profile: Profile, want: Signature, steps: int) -> None:
        self.policy, self.profile, self.want, self.steps = policy, profile, want, steps

    def advance(self, state: State, row: Row) -> list[Finding]:
        self.steps -= 1
        if self.steps < 0:
            raise _OutOfSteps
        size, messages, fails = row
        return step(self.policy, state, size, profile=self.profile, messages=messages,
                    spill_fails=fails)

    def fails(self, state: State, suffix: list[Row]) -> list[Finding] | None:
        """The findings when ``suffix``, run from a copy of ``state``, first finds something
        at its last append and with the wanted signature; else ``None``."""
        probe = state.copy()
        for number, row in enumerate(suffix, start=1):
            found = self.advance(probe, row)
            if found:
                return found if number == len(suffix) and signature(found) == self.want else None
        return None

    def drop(self, rows: list[Row]) -> bool:
        """Phase 1: from each run (oldest first) remove as many appends as still fail."""
        changed, state, i = False, State(), 0
        while i < len(rows) - 1:  # the last append is where the loss is: never dropped
            end = i
            while end < len(rows) - 1 and rows[end] == rows[i]:
                end += 1
            k = end - i
            while k >= 1:
                if self.fails(state, rows[i + k :]) is not None:
                    del rows[i : i + k]
                    changed = True
                    end -= k
                    k = min(k, end - i)
                else:
                    k //= 2
            if self.merge(state, rows, i, end):
                changed = True
                continue  # the merged run is looked at again, from the same state
            for row in rows[i:end]:
                self.advance(state, row)
            i = end
        return changed

    def merge(self, state: State, rows: list[Row], i: int, end: int) -> bool:
        """Pairs of the run ``rows[i:end]`` merged into one append each (their tokens and
        messages summed, within the policy's shape), if the session still fails so: half the
        appends for the same occupancy."""
        size, messages, fails = rows[i]
        n = end - i
        if n < 2 or 2 * size > self.policy.turn_max:
            return False
        merged = [(2 * size, min(2 * messages, self.policy.messages_per_turn[1]), fails)] * (n // 2)
        merged += rows[i : i + n % 2]
        if self.fails(state, merged + rows[end:]) is None:
            return False
        rows[i:end] = merged
        return True

    def lower_runs(self, rows: list[Row]) -> bool:
        """Phase 2: each run's size, messages and failed writes lowered together."""
        changed, state, i = False, State(), 0
        while i < len(rows):
            end = i
            while end < len(rows) and rows[end] == rows[i]:
                end += 1
            n, rest = end - i, rows[end:]

            def works(row: Row, n: int = n, rest: list[Row] = rest, state: State = state) -> bool:
                return self.fails(state, [row] * n + rest) is not None

            size, messages, fails = self.lower(works, rows[i], nudge=False)
            if (size, messages, fails) != rows[i]:
                rows[i:end] = [(size, messages, fails)] * n
                changed = True
            for row in rows[i:end]:
                self.advance(state, row)
            i = end
        return changed

    def local(self, rows: list[Row]) -> bool:
        """Phase 3, one pass: remove, lower or un-fail each single append."""
        changed, state, i = False, State(), 0
        while i < len(rows):
            first = i == 0 or rows[i] != rows[i - 1]  # removing any append of a run: the same session
            if first and i < len(rows) - 1 and self.fails(state, rows[i + 1 :]) is not None:
                del rows[i]
                changed = True
                continue
            rest = rows[i + 1 :]

            def one(row: Row, rest: list[Row] = rest, state: State = state) -> bool:
                return self.fails(state, [row, *rest]) is not None

            size, messages, fails = self.lower(one, rows[i], nudge=True)
            if (size, messages, fails) != rows[i]:
                rows[i] = (size, messages, fails)
                changed = True
            self.advance(state, rows[i])
            i += 1
        return changed

    def lower(self, works: Callable[[Row], bool], row: Row, nudge: bool) -> Row:
        """``row``'s size, then its messages, lowered to the smallest that still works, then
        its failed write made to succeed if that works. ``nudge``: try one less first and stop
        there when that fails (the local check: one probe for an append that cannot shrink)."""
        lo, mlo = self.policy.turn_min, self.policy.messages_per_turn[0]
        size, messages, fails = row

        def by_size(v: int) -> bool:
            return works((v, messages, fails))

        if size > lo and (not nudge or by_size(size - 1)):
            size = lowest_working(lo, size - 1 if nudge else size, by_size)

        def by_count(v: int) -> bool:
            return works((size, v, fails))

        if messages > mlo and (not nudge or by_count(messages - 1)):
            messages = lowest_working(mlo, messages - 1 if nudge else messages, by_count)
        if fails and works((size, messages, False)):
            fails = False
        return size, messages, fails


def shrink(policy: Policy, session: Session, profile: Profile = DEFAULT_PROFILE,
           steps: int = 60_000) -> Shrunk | None:
    """``session`` made smaller (module doc), or ``None`` when it does not find its first loss
    at its last append (nothing to shrink: the caller's replay refuses it anyway)."""
    rows = rows_of(policy, session)
    probe = _Shrinker(policy, profile, frozenset(), len(rows))
    state, found = State(), None
    for number, row in enumerate(rows, start=1):
        found = probe.advance(state, row)
        if found:
            if number != len(rows):
                return None
            break
    if not found:
        return None
    shrinker = _Shrinker(policy, profile, signature(found), steps)
    minimal = False
    try:  # ``rows`` only ever changes to a session a probe has just seen fail as wanted
        while shrinker.drop(rows):
            pass
        shrinker.lower_runs(rows)
        while shrinker.local(rows):
            pass
        minimal = True
    except _OutOfSteps:
        pass
    final = State()
    findings: list[Finding] = []
    for size, messages, fails in rows:
        findings = step(policy, final, size, profile=profile, messages=messages, spill_fails=fails)
    return Shrunk(session_of(policy, rows), tuple(findings), minimal)
