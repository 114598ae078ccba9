"""An independent concrete simulator of the reference pipeline (brief sections 6 and 6b).

Written from the brief's words and the "Semantics" section of ``docs/check-config.md`` only
(never from ``pipeline/model.py``, ``explorer.py``, ``encode.py`` or ``solver.py``), so that
``check-config``'s verdicts can be checked against a second reading of the same text:

- :func:`run_session` plays one session (turn sizes, message counts, the appends whose spill
  writes fail) turn by turn, stages in order, and returns the findings of every append;
- :func:`search` is a bounded exhaustive search (breadth first, with states merged when their
  futures are the same) for the shortest failing session of at most ``depth`` appends.

Findings are the dynamic kinds ``hole``, ``floor`` and ``overflow``; the static ones
(``unenforceable``, notes) are not modelled: a truncate stage over its limit always drops a
turn (a hole) or overflows, so a policy whose dynamics are safe has no evicting truncator.

Where the brief is silent the choices follow docs/check-config.md "Semantics"; each is
marked ``DOC:`` below with the bullet it comes from.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import product

from tailguard.pipeline.policy import Compact, Policy, Spill, Truncate

Kind = str  # "hole" | "floor" | "overflow"


@dataclass
class Turn:
    index: int
    tokens: int
    messages: int


@dataclass
class Summary:
    tokens: int  # the summary_tokens of the stage that wrote it
    covers: frozenset[int]  # effective coverage (brief 4c): turn indices only it holds


@dataclass
class State:
    n: int = 0
    context: list[Turn] = field(default_factory=list)  # verbatim turns, oldest first
    summary: Summary | None = None
    history: list[tuple[int, int]] = field(default_factory=list)  # (tokens, messages) per turn
    spilled: set[int] = field(default_factory=set)
    halted: bool = False

    def copy(self) -> State:
        return State(self.n, list(self.context), self.summary, list(self.history),
                     set(self.spilled), self.halted)


@dataclass(frozen=True)
class Finding:
    kind: Kind
    stage: int
    offsets: tuple[int, ...] = ()  # turn indices lost (hole) or involved (floor)
    detail: str = ""


def occupancy(policy: Policy, s: State, unit: str) -> int:
    """Brief 6: tokens = base + summary + verbatim turns; turns = verbatim turns.
    DOC ("Messages"): messages = the verbatim turns' messages + one for a summary."""
    if unit == "tokens":
        return policy.base_tokens + (s.summary.tokens if s.summary else 0) + \
            sum(t.tokens for t in s.context)
    if unit == "turns":
        return len(s.context)
    return sum(t.messages for t in s.context) + (1 if s.summary else 0)


def _size(t: Turn, unit: str) -> int:
    return 1 if unit == "turns" else t.tokens if unit == "tokens" else t.messages


def _newest_fitting(turns: Sequence[Turn], unit: str, limit: int) -> int:
    """How many of the newest ``turns`` are taken: turns: ``limit`` of them; tokens/messages:
    count back from the newest, stop at the first that does not fit (brief 6, 6b)."""
    if unit == "turns":
        return min(limit, len(turns))
    total = taken = 0
    for t in reversed(turns):
        if total + _size(t, unit) > limit:
            break
        total += _size(t, unit)
        taken += 1
    return taken


def floor_turns(policy: Policy, s: State) -> set[int]:
    """The newest F units of the history; for tokens/messages every turn holding one of them."""
    f = policy.floor
    if f <= 0:
        return set()
    if policy.floor_unit == "turns":
        return set(range(max(0, s.n - f), s.n))
    k = 0 if policy.floor_unit == "tokens" else 1
    out: set[int] = set()
    remaining = f
    for i in range(s.n - 1, -1, -1):
        if remaining <= 0:
            break
        out.add(i)
        remaining -= s.history[i][k]
    return out


def _pinned(policy: Policy, t: Turn) -> bool:
    return t.index < policy.keep_first


def _truncate(policy: Policy, s: State, st: Truncate, i: int) -> list[Finding]:
    dropped: list[int] = []
    while occupancy(policy, s, st.unit) > st.limit:
        victim = next((t for t in s.context if not _pinned(policy, t)), None)
        if victim is None:
            break
        s.context.remove(victim)
        dropped.append(victim.index)  # DOC: truncate stages never drop a summary
    out = [Finding("hole", i, tuple(dropped), "truncated")] if dropped else []
    if occupancy(policy, s, st.unit) > st.limit:
        out.append(Finding("overflow", i, (), f"{st.unit} over {st.limit}"))
    return out


def _triggered(policy: Policy, s: State, st: Compact) -> bool:
    """A compact stage fires when occupancy reaches its trigger; with ``trigger_any`` (docs/
    check-config.md: LangChain's trigger lists) when, for some table, it reaches every
    threshold of that table."""
    if not st.trigger_any:
        return occupancy(policy, s, st.trigger_unit) >= st.trigger
    return any(all(occupancy(policy, s, unit) >= threshold for unit, threshold in table)
               for table in st.trigger_any)


def _compact(policy: Policy, s: State, st: Compact, i: int, spill: bool,
             profile: str) -> list[Finding]:
    if not _triggered(policy, s, st):
        return []
    unpinned = [t for t in s.context if not _pinned(policy, t)]
    keep = _newest_fitting(unpinned, st.keep_unit, st.keep)
    tail = unpinned[len(unpinned) - keep:] if keep else []
    cands = unpinned[:len(unpinned) - keep]
    earlier = s.summary
    # brief 6b: with summary = "message" the earlier summary is the oldest candidate.
    # DOC ("Summary placement"): it alone makes a compaction run.
    summary_cand = st.summary == "message" and earlier is not None
    if not cands and not summary_cand:
        return []
    out: list[Finding] = []
    if st.input_limit > 0:
        u = st.input_limit_unit
        nseen = _newest_fitting(cands, u, st.input_limit)
        seen = cands[len(cands) - nseen:] if nseen else []
        used = sum(_size(t, u) for t in seen)
        summary_seen = True
        if summary_cand:
            assert earlier is not None
            cost = earlier.tokens if u == "tokens" else 1
            # DOC: counting back it comes last: seen whole iff every turn is and all fit.
            summary_seen = nseen == len(cands) and used + cost <= st.input_limit
        # clip = true: the cut candidate is shown in part and counts as unseen (brief 6b):
        # no difference to the seen set.
    else:
        seen, summary_seen = list(cands), True
    seen_ids = {t.index for t in seen}
    if spill:  # brief 6b: spilled turns are never holes (DOC: the summary is no copy)
        s.spilled.update(t.index for t in cands)
    lost = [t.index for t in cands if t.index not in seen_ids and t.index not in s.spilled]
    if lost:
        out.append(Finding("hole", i, tuple(lost), "unseen candidate"))
    inherited: frozenset[int] = frozenset()
    if earlier is not None:
        if summary_seen:
            inherited = earlier.covers
        else:
            gone = sorted(x for x in earlier.covers if x not in s.spilled)
            if gone:
                out.append(Finding("hole", i, tuple(gone), "earlier summary not seen whole"))
    s.summary = Summary(st.summary_tokens, inherited | frozenset(seen_ids))
    keep_ids = {t.index for t in tail}
    s.context = [t for t in s.context if _pinned(policy, t) or t.index in keep_ids]
    floor = floor_turns(policy, s)
    in_ctx = {t.index for t in s.context}
    missing = sorted(floor - in_ctx)
    if missing:
        out.append(Finding("floor", i, tuple(missing), "floor turns not in context"))
    elif profile == "strict":
        shown = seen_ids | (keep_ids if st.input == "all" else set())  # DOC: pinned never shown
        missing = sorted(floor - shown)
        if missing:
            out.append(Finding("floor", i, tuple(missing), "floor turns not in the summarizer input"))
    return out


def step(policy: Policy, s: State, tokens: int, messages: int, fail: bool,
         profile: str = "partitioned") -> list[Finding]:
    """One append and every stage after it; ``fail``: this append's spill writes fail."""
    s.context.append(Turn(s.n, tokens, messages))
    s.history.append((tokens, messages))
    s.n += 1
    out: list[Finding] = []
    armed: Spill | None = None
    for i, st in enumerate(policy.stages):
        if isinstance(st, Spill):
            armed = st  # DOC ("Spill"): it covers the first compact stage listed after it
        elif isinstance(st, Truncate):
            out += _truncate(policy, s, st, i)
        else:
            spill = False
            if armed is not None:
                fires = _fires(policy, s, st)
                if fires and fail and armed.on_failure == "halt":
                    s.halted = True  # DOC: stop before the compaction; no window check
                    return out
                spill = fires and not (fail and armed.on_failure == "proceed")
                armed = None
            out += _compact(policy, s, st, i, spill, profile)
    if policy.window and occupancy(policy, s, "tokens") > policy.window:
        out.append(Finding("overflow", len(policy.stages), (), "window"))
    return out


def _fires(policy: Policy, s: State, st: Compact) -> bool:
    """Whether ``st`` would compact something now (so a covering spill writes)."""
    probe = s.copy()
    return bool(_compact_probe(policy, probe, st))


def _compact_probe(policy: Policy, s: State, st: Compact) -> bool:
    if not _triggered(policy, s, st):
        return False
    unpinned = [t for t in s.context if not _pinned(policy, t)]
    keep = _newest_fitting(unpinned, st.keep_unit, st.keep)
    return len(unpinned) > keep or (st.summary == "message" and s.summary is not None)


def run_session(policy: Policy, tokens: Sequence[int], messages: Sequence[int] | None = None,
                failures: frozenset[int] = frozenset(),
                profile: str = "partitioned") -> list[list[Finding]]:
    """Findings of each append (1-based appends in ``failures`` fail their spill writes)."""
    s = State()
    per: list[list[Finding]] = []
    for k, tok in enumerate(tokens, start=1):
        msg = messages[k - 1] if messages is not None else policy.messages_per_turn[0]
        per.append(step(policy, s, tok, msg, k in failures, profile))
        if s.halted:
            break
    return per


@dataclass(frozen=True)
class Failure:
    tokens: tuple[int, ...]
    messages: tuple[int, ...]
    failures: frozenset[int]
    findings: tuple[Finding, ...]

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(f.kind for f in self.findings)


def _key(policy: Policy, s: State) -> tuple[object, ...]:
    """What the future depends on: pinning of the next turns, the context relative to ``n``,
    the summary's size and whether it holds anything unspilled, the newest F history turns."""
    ctx = tuple((s.n - t.index, t.tokens, t.messages, _pinned(policy, t)) for t in s.context)
    summ = None if s.summary is None else (
        s.summary.tokens, any(x not in s.spilled for x in s.summary.covers))
    f = max(policy.floor, 0)
    return (min(s.n, policy.keep_first), ctx, summ, tuple(s.history[-f:]) if f else ())


def choices(policy: Policy) -> list[tuple[int, int, bool]]:
    proceed = any(isinstance(st, Spill) and st.on_failure == "proceed" for st in policy.stages)
    # a halting failure only ends the session, so it never reaches a finding success misses
    return list(product(range(policy.turn_min, policy.turn_max + 1),
                        range(policy.messages_per_turn[0], policy.messages_per_turn[1] + 1),
                        (False, True) if proceed else (False,)))


def search(policy: Policy, depth: int, profile: str = "partitioned",
           max_states: int = 200_000) -> Failure | str | None:
    """The shortest failing session of at most ``depth`` appends, None, or "budget"."""
    opts = choices(policy)
    frontier: list[tuple[State, tuple[int, ...], tuple[int, ...], frozenset[int]]] = \
        [(State(), (), (), frozenset())]
    seen: set[tuple[object, ...]] = set()
    for d in range(1, depth + 1):
        nxt = []
        for s, toks, msgs, fails in frontier:
            for tok, msg, fail in opts:
                c = s.copy()
                found = step(policy, c, tok, msg, fail, profile)
                f2 = fails | {d} if fail else fails
                if found:
                    return Failure((*toks, tok), (*msgs, msg), f2, tuple(found))
                if c.halted:
                    continue
                key = _key(policy, c)
                if key in seen:
                    continue
                seen.add(key)
                nxt.append((c, (*toks, tok), (*msgs, msg), f2))
                if len(seen) > max_states:
                    return "budget"
        frontier = nxt
        if not frontier:
            return None
    return None


def sessions(policy: Policy, depth: int) -> Iterator[tuple[tuple[int, int, bool], ...]]:
    """Every session of exactly ``depth`` appends (for small cross-checks of :func:`search`)."""
    yield from product(choices(policy), repeat=depth)
