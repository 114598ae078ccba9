"""Replay an event log through the ledger's core: the judgement ``tailguard audit`` reports.

Every compaction is judged against the state recorded before it, then recorded (it happened),
by the same :class:`~tailguard.runtime.ledger_core.LedgerCore` the runtime ledger decides with,
fed by the same dispatch (:func:`tailguard.runtime.dispatch.apply_events`) that
:meth:`~tailguard.runtime.ledger.Ledger.from_log` rebuilds a ledger with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from tailguard._generated.checker import Decision
from tailguard.runtime.dispatch import apply_events
from tailguard.runtime.eventlog import Adopt, Compact, Event, Refusal, Session
from tailguard.runtime.ledger_core import PROFILES, LedgerCore
from tailguard.runtime.ledger_explain import explain as _explain

__all__ = ["Verdict", "hole_truncation_lines", "replay"]


class Verdict(NamedTuple):
    """The judgement of one recorded compaction (``explanation`` and ``truncated_at`` only when
    asked for: ``truncated_at`` is the sorted log lines of the truncations that evicted offsets
    of the decision's holes while nothing else held them)."""

    line: int
    decision: Decision
    explanation: tuple[str, ...]
    override: str | None
    compaction: Compact
    history_end: int
    truncated_at: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, **self.decision.to_json()}


def hole_truncation_lines(core: LedgerCore, decision: Decision) -> tuple[int, ...]:
    """The lines of the truncations that evicted offsets of ``decision``'s holes while no
    summary, spill or tail held them (a hole whose coverage a lost summary took has none)."""
    if core.origins is None or not decision.holes:
        return ()
    lines = {line for lo, hi in decision.holes for line in core.origins.exact_lines_within(lo, hi)
             if isinstance(line, int)}
    return tuple(sorted(lines))


_hole_truncation_lines = hole_truncation_lines  # its earlier name (tests/mutation import it)


def replay(
    events: Iterable[Event], *, profile: str = "strict", explain: bool = False,
    source: str = "<trace>", narrow: Callable[[int, Decision], Decision] | None = None,
    core: LedgerCore | None = None,
) -> Iterator[Session | Verdict | Refusal | Adopt]:
    """Replay events (from :func:`tailguard.runtime.eventlog.iter_events`) through a ledger core.

    Yields the :class:`~tailguard.runtime.eventlog.Session` header first, then one
    :class:`Verdict` per compaction and each :class:`~tailguard.runtime.eventlog.Refusal` and
    :class:`~tailguard.runtime.eventlog.Adopt` (spec 1.2: offsets that predate the guard) line as it
    is, in log order; a compaction is judged against the state recorded before it and then
    recorded (it happened). Ranges are taken as they are (strict refuses inconsistent ones
    with ``well_formed``); a negative append count (SPEC.md 9.4), a summary id that names no
    summary in the context, or a repeated one, raises
    :class:`~tailguard.runtime.eventlog.EventLogError` (``source`` names the file).
    Streams: the state is the merged interval sets and the summaries in the context (plus,
    with ``explain``, which lines truncated each range and which lost summary covered it;
    for the seed profile, the seed's raw truncations reduced to non-dominated pairs).
    With ``explain``, ``narrow(line, decision)`` (if given) picks what of each refused decision
    to explain, e.g. only holes a report has not named yet; ``Verdict.decision`` stays whole.
    ``core``: record into this fresh core, built by the caller for the header (with
    ``seed=True`` for the seed profile, ``track_origins=True`` for explanations), instead of one
    of replay's own; at each :class:`Verdict` it holds the state that compaction was judged
    against, for the caller to read (the HTML session view does), never to write.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    it = iter(events)
    header = next(it)
    if not isinstance(header, Session):
        raise ValueError("the first event must be the session header")
    yield header
    if core is None:
        core = LedgerCore(
            header.recovery_floor_span,
            header.floor_unit,
            header.truncator_unit,
            track_origins=explain,
            seed=profile == "seed",
        )
    decide = core.decide
    for ev in apply_events(core, it, source):
        if not isinstance(ev, Compact):  # a refusal line, or an adoption (recorded already)
            yield ev
            continue
        decision = decide(profile, ev.tail_start, ev.summary_input, ev.summary_covers, ev.saw, ev.keeps)
        sentences: tuple[str, ...] = ()
        truncated_at: tuple[int, ...] = ()
        if explain and not decision.allowed:
            shown = decision if narrow is None else narrow(ev.line, decision)
            sentences = tuple(_explain(core, profile, shown, ev.tail_start, ev.summary_input,
                                       ev.summary_covers, ev.saw, ev.keeps))
            truncated_at = hole_truncation_lines(core, decision)
        yield Verdict(ev.line, decision, sentences, ev.override, ev, core.n, truncated_at)
