"""Format ``openhands``: an OpenHands SDK conversation's event log as the normative event log.

A conversation persisted by the SDK (``Conversation(..., persistence_dir=DIR)``) is a directory
``DIR/<conversation id>/`` holding ``base_state.json`` and ``events/event-NNNNN-<id>.json``,
one JSON event per file, numbered from 0. The SDK never deletes an event: a ``Condensation``
event names the events it forgets and the summary that replaces them, and the agent's context
is the SDK's own ``View.from_events`` of the log. So at every ``Condensation`` the importer
takes the view just before it (the one the condenser was given) and the view just after it:

- **appends**: events of the view the log had not shown before (one offset per event; the
  leading events no condensation ever forgets, the system prompt and ``keep_first``'s, are
  *pinned*: outside the offsets, as the adapter holds them);
- **compactions**: events the condensation forgets, replaced by its summary event. What the
  summarizer was shown is not in the record. With ``--knobs`` naming the SDK's condenser
  (``openhands.CondenserPipeline``: ``LLMSummarizingCondenser``), it is computed with the SDK's
  own rule: the prompt is ``summarizing_events.j2`` over ``str(event)`` of each forgotten event
  (cut at 500 characters, an action without its arguments), and an event counts as shown whole
  only when every text the agent's LLM is sent for it is in that prompt (the adapter's rule,
  :func:`tailguard.adapters.openhands._shown_whole`). The compaction is recorded as the
  framework committed it (``override`` when the audit refuses it);
- **truncations**: events gone from the view without a summary (a condensation with no
  summary), and ``evict_summary`` for a summary gone that way.

What the knobs cannot decide is recorded as adopted (``adopt``, SPEC.md 11.4: unverified),
never as covered: without ``--knobs``, everything up to the tail of the last condensation; a
condensation that is not ``LLMSummarizingCondenser``'s with these knobs (its forgotten events
not the run after the pinned ones, a summary elsewhere) or a hard context reset (the SDK may
have retried it with shorter event strings, which the record does not say), everything up to
its tail.

The SDK is imported when a conversation is read (the ``openhands`` extra, Python >= 3.12).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker
from tailguard.base.errors import ImportSourceError as ImportSourceError
from tailguard.importers.imported import Imported, Named, named_units, pending_holes
from tailguard.importers.knobs import Knobs
from tailguard.pipeline.presets.openhands import PRESET
from tailguard.runtime.ledger import Ledger

__all__ = ["FORMAT", "PRESET_NAME", "UNITS", "VALIDATED_ON", "conversation_dirs", "import_conversation",
           "import_events", "read_events"]

FORMAT = "openhands"
PRESET_NAME = PRESET.name
UNITS = ("messages",)
#: The versions this importer was validated on (tests/importers/test_openhands_import.py).
VALIDATED_ON: tuple[str, ...] = PRESET.validated_on
OVERRIDE = "imported: the framework committed this condensation without a guard"
_EVENT_FILE = re.compile(r"^event-(\d{5,})-(.+)\.json$")


def _missing() -> ImportError:
    return ImportError("the openhands format needs the OpenHands SDK (Python >= 3.12): pip install "
                       f"'tailguard[openhands]' (validated on {', '.join(VALIDATED_ON)})")


def _require() -> None:
    """Import the SDK, or raise ImportError naming the extra that installs it. Reading a log is
    offline: litellm's model-cost map comes from its local copy (no network fetch and its retry
    delays) and the SDK's banner stays off, unless the environment already says otherwise."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
    try:
        import openhands.sdk.context.view
        import openhands.sdk.event  # noqa: F401
    except ImportError:
        raise _missing() from None


# -- the directory ---------------------------------------------------------------------------

def _is_conversation(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "events"))


def conversation_dirs(path: str) -> list[str]:
    """The conversations at ``path``: the directory itself when it is one (it holds ``events/``),
    else its subdirectories that are (a ``persistence_dir``), sorted. Raises
    :class:`ImportSourceError` when there is none."""
    if not os.path.isdir(path):
        why = "no such directory" if not os.path.exists(path) else "not a directory (an OpenHands " \
              "conversation directory, with base_state.json and events/, is expected)"
        raise ImportSourceError(path, "directory", why)
    if _is_conversation(path):
        return [path]
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise ImportSourceError(path, "directory", f"cannot list ({exc.strerror or exc})") from None
    found = [os.path.join(path, n) for n in names if _is_conversation(os.path.join(path, n))]
    if not found:
        raise ImportSourceError(path, "directory", "no conversation in it (a conversation directory holds "
                                                   "events/event-00000-<id>.json; its parent is the SDK's "
                                                   "persistence_dir)")
    return found


def read_events(path: str, source: str | None = None) -> list[Any]:
    """The events of the conversation directory ``path``, in log order, each read with the SDK's
    own model (``Event.model_validate_json``). A missing, misnumbered, unreadable or invalid event
    file raises :class:`ImportSourceError` naming it."""
    from openhands.sdk.event.base import Event

    if source is None:
        source = path
    folder = os.path.join(path, "events")
    try:
        names = os.listdir(folder)
    except OSError as exc:
        raise ImportSourceError(source, "events/", f"cannot list ({exc.strerror or exc})") from None
    numbered: dict[int, str] = {}
    for name in names:
        m = _EVENT_FILE.match(name)
        if m is None:
            continue  # the SDK's lock and length markers
        index = int(m.group(1))
        if index in numbered:
            raise ImportSourceError(source, f"events/{name}", f"a second event numbered {index} "
                                                              f"(beside {numbered[index]})")
        numbered[index] = name
    if not numbered:
        raise ImportSourceError(source, "events/", "no event file (event-00000-<id>.json)")
    events: list[Any] = []
    for index in range(max(numbered) + 1):
        if index not in numbered:
            raise ImportSourceError(source, "events/", f"event {index} is missing (the log is numbered 0 to "
                                                       f"{max(numbered)}): a truncated or damaged log")
        name = numbered[index]
        try:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ImportSourceError(source, f"events/{name}", f"cannot read ({exc.strerror or exc})") from None
        try:
            json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ImportSourceError(source, f"events/{name}", f"not JSON ({exc}): a corrupt or truncated "
                                                              "event file") from None
        try:
            event = Event.model_validate_json(data)
        except ValueError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ImportSourceError(source, f"events/{name}", f"not an OpenHands event ({first})") from None
        expected = _EVENT_FILE.match(name)
        assert expected is not None
        if str(event.id) != expected.group(2):
            raise ImportSourceError(source, f"events/{name}", f"holds event {event.id}, not the one its name says")
        events.append(event)
    return events


# -- replaying the log -----------------------------------------------------------------------

@dataclass(slots=True)
class _Condensed:
    """One condensation of the log: its index, the views before and after it."""

    index: int
    before: list[Any]
    after: list[Any]
    event: Any


def _condensations(events: Sequence[Any]) -> list[_Condensed]:
    from openhands.sdk.context.view import View
    from openhands.sdk.event import Condensation

    out: list[_Condensed] = []
    for i, ev in enumerate(events):
        if isinstance(ev, Condensation):
            out.append(_Condensed(i, list(View.from_events(events[:i]).events),
                                  list(View.from_events(events[:i + 1]).events), ev))
    return out


def _pinned(condensed: Sequence[_Condensed]) -> list[str]:
    """The leading events of the first condensed view that no condensation forgets."""
    if not condensed:
        return []
    gone: set[str] = set()
    for c in condensed:
        after = {e.id for e in c.after}
        gone |= {e.id for e in c.before if e.id not in after}
    out: list[str] = []
    for e in condensed[0].before:
        if e.id in gone or _is_summary(e):
            break
        out.append(e.id)
    return out


def _is_summary(event: Any) -> bool:
    from openhands.sdk.event.condenser import CondensationSummaryEvent

    return isinstance(event, CondensationSummaryEvent)


def _text(event: Any) -> str:
    from tailguard.adapters.openhands import _texts

    try:
        texts = _texts(event)
    except Exception:  # an event the installed SDK cannot render
        texts = None
    return "\n".join(texts) if texts is not None else str(event)


def _prompt(forgotten: Sequence[Any]) -> str:
    """The text ``LLMSummarizingCondenser`` sends its summarizer for ``forgotten`` (its own
    template over ``str(event)``; the first attempt, with no further cut)."""
    from openhands.sdk.context.condenser import LLMSummarizingCondenser
    from openhands.sdk.llm import TextContent

    messages = LLMSummarizingCondenser._build_summary_messages(None, [str(e) for e in forgotten])
    return "\n".join(c.text for m in messages for c in m.content if isinstance(c, TextContent))


class _Builder:
    """Replays a conversation's condensations into a ledger that writes the event log."""

    def __init__(self, source: str, sid: str, knobs: Knobs, pinned: list[str], log: io.StringIO) -> None:
        self.source, self.knobs, self.pinned = source, knobs, pinned
        self.ledger = Ledger(knobs.floor, unit=knobs.floor_unit, log=log, session_id=sid)
        self.tracker = OffsetTracker(self.ledger)
        self.names: dict[str, str] = {}
        self.tails: dict[int, tuple[int, str]] = {}  # condensation index -> (tail start, summary id)
        self.untrusted: list[tuple[int, str]] = []  # (condensation index, why the knobs do not decide it)
        self.where = ""

    def fail(self, why: str) -> ImportSourceError:
        return ImportSourceError(self.source, self.where, why)

    def observe(self, view: Sequence[Any]) -> None:
        head = [e.id for e in view[:len(self.pinned)]]
        if head != self.pinned:
            raise self.fail(f"the view does not open with the events no condensation forgets ({self.pinned[:3]})")
        entries = []
        for e in view[len(self.pinned):]:
            summary = _is_summary(e)
            entries.append(Entry(e.id, summary, 0 if summary else 1))
            self.names.setdefault(e.id, _text(e))
        self.tracker.observe(entries)

    def disagreement(self, c: _Condensed, deleted: list[Any]) -> str | None:
        """Why ``c`` is not a condensation ``LLMSummarizingCondenser`` with these knobs makes (or
        whose prompt the record cannot tell), or None."""
        if not self.knobs.given:
            return "what the summarizers were shown is not in the record and no --knobs were given"
        ev = c.event
        keep_first = int(self.knobs.values.get("keep_first", 2))
        system = next((i for i, e in enumerate(c.before) if type(e).__name__ == "SystemPromptEvent"), None)
        start = max(keep_first, 0 if system is None else system + 1)
        ids = [e.id for e in c.before]
        gone = [e.id for e in deleted]
        reset_start = 0 if system is None else system + 1
        if gone and gone == ids[reset_start:] and reset_start < start:
            return ("a hard context reset (every event after the system prompt): the SDK may have retried it "
                    "with shorter event strings, which the record does not say")
        if not gone or gone != ids[start:start + len(gone)]:
            return (f"it forgets events other than the run after the first {start} (keep_first {keep_first}): not "
                    "LLMSummarizingCondenser's condensation with these knobs")
        if ev.summary is not None and ev.summary_offset != start:
            return f"its summary goes at {ev.summary_offset}, not at {start} where the forgotten events began"
        return None

    def condense(self, c: _Condensed) -> None:
        self.observe(c.before)
        before = {e.id for e in c.before}
        after = {e.id for e in c.after}
        deleted = [e for e in c.before if e.id not in after]
        fresh = [e for e in c.after if e.id not in before]
        if len(fresh) > 1 or any(not _is_summary(e) for e in fresh):
            raise self.fail("the condensation adds events other than one summary to the view")
        if not fresh:  # no summary: the forgotten events are truncated (no knob changes that)
            self.observe(c.after)
            return
        why = self.disagreement(c, deleted)
        if why is not None:
            self.untrusted.append((c.index, why))
        summary = fresh[0]
        self.names[summary.id] = _text(summary)
        kept = [e.id for e in c.before[len(self.pinned):] if e.id in after]
        prompt = _prompt(deleted) if why is None else ""
        shown = self._shown(deleted, prompt)
        plan = self.tracker.plan(deleted=[e.id for e in deleted], shown=shown, kept=kept)
        self.tails[c.index] = (plan.tail_start, summary.id)
        self.tracker.commit(plan, key=summary.id, override=OVERRIDE)
        self.observe(c.after)

    @staticmethod
    def _shown(deleted: Sequence[Any], prompt: str) -> list[str]:
        from tailguard.adapters.openhands import _shown_whole

        return [e.id for e in deleted if prompt and _shown_whole(e, [prompt])]

    def run(self, events: Sequence[Any], condensed: Sequence[_Condensed], *, start: int = -1) -> None:
        from openhands.sdk.context.view import View

        for c in condensed:
            if c.index <= start:
                continue
            self.where = f"event {c.index} (Condensation {c.event.id})"
            try:
                self.condense(c)
            except AdapterError as exc:  # the tracker cannot place what the log holds
                raise self.fail(str(exc)) from None
        self.where = f"event {len(events) - 1} (the log's end)"
        try:
            self.observe(list(View.from_events(events).events))
        except AdapterError as exc:
            raise self.fail(str(exc)) from None

    def pending(self) -> list[tuple[int, int]]:
        return pending_holes(self.tracker)

    def named(self) -> list[Named]:
        return named_units(self.tracker, self.names)


def import_events(events: Sequence[Any], knobs: Knobs, source: str, sid: str, *, names: bool = True) -> Imported:
    """The event log of a conversation's ``events`` (the SDK's event objects, in log order).
    Condensations the knobs cannot decide leave everything up to the tail of the last such one
    adopted: unverified."""
    _require()
    condensed = _condensations(events)
    pinned = _pinned(condensed)
    log = io.StringIO()
    b = _Builder(source, sid, knobs, pinned, log)
    b.run(events, condensed)
    if not b.untrusted:
        return Imported(source, log.getvalue().splitlines(keepends=True), b.named() if names else [],
                        pending=b.pending())
    index, why = b.untrusted[-1]
    why = f"condensation at event {index}: {why}; what the summarizers were shown up to there is not decided"
    tail, summary_id = b.tails[index]
    scout = b
    log = io.StringIO()
    b = _Builder(source, sid, knobs, pinned, log)
    c = next(x for x in condensed if x.index == index)
    b.where = f"event {index} (Condensation {c.event.id})"
    b.tracker.adopt(summary_id, tail, reason=why)
    b.names[summary_id] = scout.names.get(summary_id, "")
    kept = [e for e in c.after[len(pinned):] if not _is_summary(e) or e.id == summary_id]
    try:
        b.observe([*c.after[:len(pinned)], *kept])
    except AdapterError as exc:
        raise b.fail(str(exc)) from None
    b.run(events, condensed, start=index)
    named = [n for n in scout.named() if n.hi <= tail] + b.named() if names else []
    return Imported(source, log.getvalue().splitlines(keepends=True), named, why, b.pending())


def import_conversation(path: str, knobs: Knobs, *, names: bool = True) -> Imported:
    """Import the conversation directory ``path`` (its events/ and, for its id, its name)."""
    _require()
    events = read_events(path)
    sid = os.path.basename(os.path.normpath(path))
    return import_events(events, knobs, path, sid, names=names)


@contextlib.contextmanager
def open_conversation_lines(locator: str, *, knobs: Knobs, source: str) -> Iterator[Iterable[bytes]]:
    """The fleet audit's opener (``Item.opener``): the imported log of one conversation, as lines."""
    del source  # named in errors by import_conversation already
    yield [line.encode("utf-8") for line in import_conversation(locator, knobs, names=False).lines]


def opener(knobs: Knobs, source: str) -> Any:
    """A picklable opener for :class:`tailguard.audit.fleet.sources.Item`."""
    return functools.partial(open_conversation_lines, knobs=knobs, source=source)
