"""Event logs of model sessions (``--emit-trace`` and the runtime agreement test).

A session the executable model runs (:mod:`tailguard.pipeline.model`) is written as the
JSONL event log ``tailguard audit`` replays (SPEC.md section 9), so that the audit under
the same profile judges every compaction exactly as the model did (brief 6b, "Agreement
with the runtime"):

- **Unit.** The log is in the floor's unit (``turns``: offsets are turn indices;
  ``tokens``: every turn appends its size, offsets are token offsets; ``messages``: every
  turn appends its messages), so the header's
  ``recovery_floor_span`` is the policy's ``floor`` itself. ``floor_unit`` and
  ``truncator_unit`` are that unit too: every eviction is written in it. A unit mismatch
  between the floor and a truncate stage is a static finding the log cannot show.
- **Pinned turns** (``keep_first``) never leave the context; the log has no word for that,
  so each is written as a ``spill`` (handle ``"pinned"``) right after its append: they are
  recoverable, and the audit must not call them holes.
- **truncate**: the dropped turns' range. **compact**: ``summary_covers`` is what the
  summarizer saw of the candidates (the newest ones within ``input_limit``; empty when it
  saw none), ``summary_input`` is the same (``input = "candidates"``) or reaches to the
  history end (``input = "all"``: the tail was shown too), ``tail_start`` the first tail
  turn. The earlier summary is not an offset range: the audit counts earlier coverage as
  prior coverage (the defaults of brief 4c: every compaction saw the summary before it),
  except where a ``summary = "message"`` compaction did not show it whole: that line says
  ``"saw": []`` and the earlier coverage leaves the context (brief 4c lineage).
- **clip** (spec 1.2, ``clip_args``): written as the adapters log an argument clip, a
  compaction that summarizes nothing with its tail at the end of the newest clipped turn.
- **spill** (spec 1.1): the candidates a spill stage wrote (handle ``"spill"``), just
  before their compaction. A failed write writes nothing; a failed ``halt`` write ends
  the log.
- A triggered compaction with nothing to summarize did nothing and is not written, except
  as the judged point of an extended log (below).

``extend=True`` (``--emit-trace``) makes the log end at the compaction that judges the
model's first loss (hole or floor violation): when no compaction follows the loss in the
trace, the session continues with maximal turns up to the next compaction attempt (a
triggered one with nothing to summarize is written as an empty compaction at the tail's
start); when none runs within :data:`MAX_EXTENSION` appends, the trace is not extended and
the log ends, right after it, with an empty compaction marked ``"forced": true``. Every
compaction before the loss is allowed by the audit; the last one is refused (an empty
compaction, having shown the summarizer nothing, also fails ``floor_in_input`` under
``strict``). Overflows are not audit-visible: a session whose only
finding is an overflow gives a log in which every compaction is allowed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tailguard.base.vocab import Pair
from tailguard.pipeline.model import DEFAULT_PROFILE, Event, Finding, Profile, Session, State, step
from tailguard.pipeline.policy import Compact, Policy

MAX_EXTENSION = 1_000


@dataclass(frozen=True)
class Loss:
    """A model finding the audit can see (hole or floor) and where the log judges it.

    ``ranges``: the finding's turns as maximal offset ranges of the log's unit;
    ``compaction``: the line of the first ``compact`` at or after the loss (``None`` when
    the log has none after it).
    """

    finding: Finding
    ranges: tuple[Pair, ...]
    compaction: int | None


@dataclass(frozen=True)
class SessionLog:
    """An event log (``lines[0]`` the header; line numbers are 1-based indices + 1)."""

    lines: list[dict[str, Any]]
    compactions: tuple[int, ...]  # line numbers of the compact lines
    losses: tuple[Loss, ...]

    @property
    def unit(self) -> str:
        return str(self.lines[0]["unit"])


def _runs(indices: tuple[int, ...]) -> list[Pair]:
    """Maximal runs ``[lo, hi)`` of sorted turn indices."""
    out: list[Pair] = []
    for i in sorted(indices):
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def _simulate(
    policy: Policy, session: Session, profile: Profile, extend: bool
) -> tuple[list[Event], State, bool]:
    """Model events of ``session`` (extended and cut when ``extend``) and whether the log
    needs a forced compaction at its end."""
    state = State()
    events: list[Event] = []
    for k, size in enumerate(session.sizes):
        step(policy, state, size, events, profile, session.count(policy, k), k + 1 in session.failures)
    first = next((k for k, e in enumerate(events) if e.kind == "loss"), None)
    if not extend or first is None:
        return [e for e in events if e.kind != "attempt"], state, False

    def judged(evs: list[Event], start: int) -> int | None:
        return next((k for k in range(start, len(evs)) if evs[k].kind in ("compact", "attempt", "clip")), None)

    end = judged(events, first)
    if end is None:  # continue the session, on a copy, up to a compaction
        trial, trial_state = list(events), state.copy()
        for _ in range(MAX_EXTENSION):
            if trial_state.halted:
                break
            scanned = len(trial)
            step(policy, trial_state, policy.turn_max, trial, profile, policy.messages_per_turn[1])
            end = judged(trial, scanned)
            if end is not None:
                events, state = trial, trial_state
                break
    if end is None:  # none would ever run: judge the loss right after the trace
        return [e for e in events if e.kind != "attempt"], state, True
    return [e for k, e in enumerate(events[: end + 1]) if e.kind != "attempt" or k == end], state, False


def session_log(
    policy: Policy,
    trace: list[int] | tuple[int, ...],
    profile: Profile = DEFAULT_PROFILE,
    *,
    extend: bool = False,
    messages: tuple[int, ...] | list[int] = (),
    failures: frozenset[int] | set[int] = frozenset(),
) -> SessionLog:
    """Run ``trace`` (turn sizes; ``messages`` and spill ``failures`` as in
    :class:`tailguard.pipeline.model.Session`) through the model under ``profile`` and
    write its event log."""
    session = Session(tuple(trace), tuple(messages), frozenset(failures))
    events, state, forced = _simulate(policy, session, profile, extend)
    unit = policy.floor_unit
    starts: list[int] = []  # log offset of each turn
    end = 0  # the history end, in log offsets

    def off(i: int) -> int:
        return starts[i] if i < len(starts) else end

    out: list[dict[str, Any]] = []
    pending: list[tuple[Finding, int]] = []  # (loss, index into out of the next line)
    compact_at: list[int] = []  # indices into out
    for event in events:
        if event.kind == "append":
            size, messages_ = event.data
            count = size if unit == "tokens" else messages_ if unit == "messages" else 1
            index = len(starts)
            starts.append(end)
            end += count
            if index < policy.keep_first:
                last = out[-2:]
                if (len(last) == 2 and last[0]["event"] == "append" and last[1].get("handle") == "pinned"
                        and last[1]["range"][1] == end - count):
                    last[0]["count"] += count
                    last[1]["range"][1] = end
                else:
                    out.append({"event": "append", "count": count})
                    out.append({"event": "spill", "range": [end - count, end], "handle": "pinned"})
            elif out and out[-1]["event"] == "append":
                out[-1]["count"] += count
            else:
                out.append({"event": "append", "count": count})
        elif event.kind == "truncate":
            lo, hi = event.data
            out.append({"event": "truncate", "range": [off(lo), off(hi)]})
        elif event.kind == "spill":
            lo, hi = event.data
            out.append({"event": "spill", "range": [off(lo), off(hi)], "handle": "spill"})
        elif event.kind == "halt":
            continue
        elif event.kind == "loss":
            assert event.finding is not None
            pending.append((event.finding, len(out)))
        elif event.kind in ("attempt", "clip"):  # a clip is logged as the adapters log it
            (t,) = event.data
            compact_at.append(len(out))
            out.append(_compaction(off(t), off(t), off(t), off(t)))
        else:
            stage, seen, t, inherited = event.data
            s = policy.stages[stage]
            assert isinstance(s, Compact)
            compact_at.append(len(out))
            line = _compaction(off(seen), end if s.input == "all" else off(t), off(t), off(t))
            if not inherited:
                line["saw"] = []
            out.append(line)
    if forced:
        t = state.verbatim[0] if state.verbatim else len(state.sizes)
        compact_at.append(len(out))
        out.append({**_compaction(off(t), off(t), off(t), off(t)), "forced": True})
    header = {"event": "session", "unit": unit, "recovery_floor_span": policy.floor,
              "floor_unit": unit, "truncator_unit": unit,
              "source": {"tool": "tailguard check-config", "policy": policy.name, "profile": profile}}
    losses = tuple(
        Loss(f, tuple((off(lo), off(hi)) for lo, hi in _runs(f.offsets)),
             next((k + 2 for k in compact_at if k >= at), None))
        for f, at in pending
    )
    return SessionLog([header, *out], tuple(k + 2 for k in compact_at), losses)


def _compaction(a: int, b: int, c: int, t: int) -> dict[str, Any]:
    """A ``compact`` line: input ``[a, b)``, covers ``[a, c)``, tail from ``t``."""
    return {"event": "compact", "summary_input": [a, b], "summary_covers": [a, c], "tail_start": t}


def session_events(
    policy: Policy,
    trace: list[int],
    profile: Profile = DEFAULT_PROFILE,
    messages: tuple[int, ...] = (),
    failures: frozenset[int] = frozenset(),
) -> list[dict[str, Any]]:
    """The ``--emit-trace`` log of a failing ``trace``: it ends at the compaction that
    judges the first loss."""
    return session_log(policy, trace, profile, extend=True, messages=messages,
                       failures=failures).lines


def render_jsonl(events: list[dict[str, Any]]) -> str:
    """One JSON object per line."""
    return "".join(json.dumps(e) + "\n" for e in events)
