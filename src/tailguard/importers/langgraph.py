"""Format ``langgraph``: a LangGraph checkpointer's thread history as the normative event log.

A thread's history is the chain of its root-namespace checkpoints, from the newest back
through each ``parent_config`` (a branch the thread left by time travel is not its history),
read through ``BaseCheckpointSaver.list`` (any saver; a SQLite file through
``langgraph-checkpoint-sqlite``'s ``SqliteSaver``, opened read-only, and there from its
``writes`` table where that provably rebuilds the same checkpoints: :mod:`.langgraph_writes`).
Each checkpoint's ``messages`` channel is the context at that point; consecutive checkpoints give:

- **appends**: messages with new ids (one offset per message, or their token count with
  ``floor_unit = "tokens"``, counted with LangChain's own counter);
- **compactions**: a new summary (``additional_kwargs["lc_source"] == "summarization"``, what
  ``SummarizationMiddleware`` writes) replacing messages. The deleted messages are what the
  middleware handed its summarizer (``messages[:cutoff]``); what it was shown *whole* is
  computed with LangChain's own rule, ``SummarizationMiddleware._trim_messages_for_summary``
  run with the user's knobs (``--knobs``: ``trim_tokens_to_summarize``) on those messages, and
  compared message by message as the adapter does (a clipped message is unseen). Whether the
  earlier summary was shown whole is the lineage's ``saw``. The compaction is recorded as the
  framework committed it (``override`` when the audit refuses it);
- **truncations** (``RemoveMessage`` deletions, trimming): messages gone without a new
  summary, and ``evict_summary`` for a summary gone that way.

Without ``--knobs`` what the summarizers were shown is not known: every offset up to the
tail of the last compaction is recorded as adopted (``adopt``, SPEC.md 11.4: unverified),
never as covered. A thread whose first context already starts with a summary is adopted the
same way. The message ids and texts at each offset are kept (:class:`Imported.units`) so that
a report can name the messages a hole lost.

LangChain and LangGraph are imported when a thread is read (the ``langchain`` extra).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker
from tailguard.audit.fleet.record import Record
from tailguard.base.errors import ImportSourceError as ImportSourceError
from tailguard.importers.gc_pause import paused
from tailguard.importers.imported import Imported, Named, named_units, pending_holes
from tailguard.importers.judged_ledger import JUDGED_PROFILES, JudgingLedger
from tailguard.importers.knobs import Knobs
from tailguard.importers.langchain_tokens import SummingCounter
from tailguard.importers.sqlite_source import open_readonly
from tailguard.pipeline.presets.langchain import PRESET
from tailguard.runtime.ledger import Ledger

__all__ = ["FORMAT", "PRESET_NAME", "UNITS", "VALIDATED_ON", "ImportSourceError", "Imported", "Named", "import_saver",
           "import_thread", "open_database", "open_thread_lines", "thread_ids"]

FORMAT = "langgraph"
PRESET_NAME = PRESET.name
UNITS = ("messages", "tokens")
#: The versions this importer was validated on (tests/importers/test_langgraph_real.py).
VALIDATED_ON: tuple[str, ...] = (*PRESET.validated_on, "langgraph-checkpoint 4.3.2",
                                 "langgraph-checkpoint-sqlite 3.1.2")
OVERRIDE = "imported: the framework committed this compaction without a guard"
_TABLES = {"checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "checkpoint"),
           "writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id")}


def _missing() -> ImportError:
    return ImportError("the langgraph format needs LangChain and LangGraph: pip install 'tailguard[langchain]' "
                       f"(validated on {', '.join(VALIDATED_ON)})")


# -- the database --------------------------------------------------------------------------

def open_database(path: str) -> sqlite3.Connection:
    """A read-only connection to a ``SqliteSaver`` database, or :class:`ImportSourceError`
    saying why ``path`` is not one (missing, not SQLite, corrupt, not a checkpointer's)."""
    return open_readonly(path, _TABLES, "a langgraph-checkpoint-sqlite SqliteSaver file",
                         "not a LangGraph checkpointer's database (SqliteSaver writes checkpoints and writes)",
                         "not a LangGraph checkpointer's database")


def thread_ids(conn: sqlite3.Connection, path: str) -> list[str]:
    """The threads of a checkpointer database (root namespace), sorted."""
    try:
        rows = conn.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
                            "ORDER BY thread_id").fetchall()
    except sqlite3.Error as exc:
        raise ImportSourceError(path, "table checkpoints", f"unreadable ({exc})") from None
    return [str(r[0]) for r in rows]


# -- reading a thread ------------------------------------------------------------------------

def _history(saver: Any, source: str, thread: str) -> list[tuple[str, list[Any]]]:
    """``(checkpoint id, messages)`` of the thread's chain, oldest first."""
    where = f"thread {thread!r}"
    try:
        tuples = list(saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}))
    except Exception as exc:  # a corrupt blob or row: the saver's own error, whatever it is
        raise ImportSourceError(source, where, f"cannot read its checkpoints ({type(exc).__name__}: {exc})") from None
    tuples = [t for t in tuples if t.config["configurable"].get("checkpoint_ns", "") == ""]
    if not tuples:
        raise ImportSourceError(source, where, "no such thread (no checkpoint of it)")
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in tuples}
    chain: list[tuple[str, list[Any]]] = []
    current: Any = tuples[0]  # list() gives the newest first
    seen: set[str] = set()
    while current is not None:
        cid = str(current.config["configurable"]["checkpoint_id"])
        if cid in seen:
            raise ImportSourceError(source, f"{where}, checkpoint {cid}", "its parents form a loop")
        seen.add(cid)
        values = current.checkpoint.get("channel_values") or {}
        msgs = values.get("messages")
        if msgs is not None and not isinstance(msgs, list):
            raise ImportSourceError(source, f"{where}, checkpoint {cid}", "channel messages: not a list of messages")
        chain.append((cid, list(msgs) if msgs is not None else []))
        parent = current.parent_config
        if parent is None:
            break
        pid = parent["configurable"].get("checkpoint_id")
        current = by_id.get(pid)
        if current is None:
            raise ImportSourceError(source, f"{where}, checkpoint {cid}", f"its parent {pid} is missing")
    chain.reverse()
    if not any(msgs for _, msgs in chain):
        raise ImportSourceError(source, where, "no checkpoint holds messages (channel messages): not a "
                                               "LangChain agent's thread")
    return chain


def _text(m: Any) -> str:
    try:
        return str(m.text)
    except Exception:  # a content block the installed langchain-core cannot render
        return str(m.content)


def _middleware(knobs: Knobs) -> tuple[Any, bool]:
    """LangChain's own ``SummarizationMiddleware`` with the user's knobs (its trimming rule, token
    counter, trigger and cutoff), and whether trigger and keep are in it (a ``fraction`` needs
    the model's profile, which a record does not hold). The model is LangChain's fake, never called."""
    from langchain.agents.middleware.summarization import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    model = GenericFakeChatModel(messages=iter(()))
    if not knobs.given:
        return SummarizationMiddleware(model, trim_tokens_to_summarize=None), False
    trim = knobs.values.get("trim_tokens_to_summarize", 4000)
    trigger, keep = knobs.values.get("trigger"), knobs.values.get("keep")
    sizes = [x for x in (trigger, keep) if x is not None]
    if trigger is None or any(x[0] == "fraction" for x in sizes):
        return SummarizationMiddleware(model, trim_tokens_to_summarize=trim), False
    return SummarizationMiddleware(model, trigger=tuple(trigger), keep=tuple(keep or ("messages", 20)),
                                   trim_tokens_to_summarize=trim), True


class _Builder:
    """Replays a thread's chain into a ledger that writes the event log."""

    def __init__(self, source: str, thread: str, knobs: Knobs, log: io.StringIO | None,
                 judge: str | None = None) -> None:
        from langchain_core.messages import BaseMessage, HumanMessage

        self._base, self._human = BaseMessage, HumanMessage
        self.source, self.thread, self.knobs = source, thread, knobs
        #: ``judge``: a profile; the ledger then also judges every compaction (.judged_ledger)
        self.ledger = Ledger(knobs.floor, unit=knobs.floor_unit, log=log, session_id=thread) if judge is None \
            else JudgingLedger(knobs.floor, unit=knobs.floor_unit, log=log, session_id=thread, judge=judge)
        self.tracker = OffsetTracker(self.ledger)
        self.mw, self.checkable = _middleware(knobs)
        # LangChain's own counts, summed per message where provably equal (.langchain_tokens)
        self.counts = SummingCounter()
        self.mw.token_counter = self.counts.wrap(self.mw.token_counter)
        self.mw._partial_token_counter = self.counts.wrap(self.mw._partial_token_counter)
        self.compactions: dict[int, tuple[int, str]] = {}  # chain index -> (tail start, summary id)
        #: compactions the knobs disagree with (chain index, checkpoint id, why): not decided by them
        self.untrusted: list[tuple[int, str, str]] = []
        self.cid = ""
        self.names: dict[str, Any] = {}  # message id -> the message (its text is taken when named)
        self.entries: dict[str, Entry] = {}  # message id -> its tracker entry
        self.last_compaction: tuple[int, int, str] | None = None  # (chain index, tail start, summary id)
        self.where = ""

    def fail(self, why: str) -> ImportSourceError:
        return ImportSourceError(self.source, self.where, why)

    def is_summary(self, m: Any) -> bool:
        return isinstance(m, self._human) and m.additional_kwargs.get("lc_source") == "summarization"

    def size(self, m: Any) -> int:
        return 1 if self.knobs.floor_unit == "messages" else int(self.mw.token_counter([m]))

    def check(self, msgs: Sequence[Any]) -> list[str]:
        ids: list[str] = []
        for i, m in enumerate(msgs):
            if not isinstance(m, self._base):
                raise self.fail(f"message {i}: not a LangChain message ({type(m).__name__})")
            if not isinstance(m.id, str) or not m.id:
                raise self.fail(f"message {i}: no id (LangGraph's add_messages gives every message one)")
            ids.append(m.id)
        if len(set(ids)) != len(ids):
            raise self.fail("two messages have the same id")
        return ids

    def entry(self, m: Any, summary: bool | None = None) -> Entry:
        """The tracker's entry of a message, made once per id (its size counted once);
        ``summary``: whether it is one, when the caller already knows."""
        e = self.entries.get(m.id)
        if e is None:
            if summary is None:
                summary = self.is_summary(m)
            self.counts.register(m)
            e = self.entries[m.id] = Entry(m.id, summary, 0 if summary else self.size(m))
            self.names.setdefault(m.id, m)
        return e

    def observe(self, msgs: Sequence[Any]) -> None:
        self.tracker.observe([self.entry(m) for m in msgs])

    def shown(self, deleted: list[Any]) -> list[str]:
        """What of ``deleted`` the summarizer was shown whole, by LangChain's own trimming rule."""
        by_id = {m.id: m for m in deleted}
        trimmed = self.mw._trim_messages_for_summary(list(deleted))
        return [t.id for t in trimmed if t.id in by_id and t == by_id[t.id]]

    def step(self, index: int, prev: list[Any], msgs: list[Any], *, assume_seen: bool) -> None:
        ids = self.check(msgs)
        fresh = [m for m in msgs if m.id not in self.entries and self.is_summary(m)
                 and m.id not in self.tracker.summaries]
        if not fresh:
            self.observe(msgs)
            return
        if len(fresh) > 1:
            raise self.fail(f"{len(fresh)} new summaries in one step; one compaction writes one")
        summary = fresh[0]
        if self.ledger.history_end == 0 and not self.tracker.summaries:
            if msgs[0] is not summary:
                raise self.fail("the thread's first summary is not its first message; cannot adopt the "
                                "history before it")
            self.tracker.adopt(summary.id, self.size(summary), reason=f"summary {summary.id!r} (lc_source "
                               "'summarization') is older than the thread's oldest checkpoint")
            self.observe(msgs)
            return
        present = set(ids)
        deleted = [m for m in prev if m.id not in present]
        kept = [m for m in prev if m.id in present]
        if self.knobs.given:
            why = self.disagreement(prev, deleted)
            if why is not None:
                self.untrusted.append((index, self.cid, why))
        shown = [m.id for m in deleted] if assume_seen else self.shown(deleted)
        plan = self.tracker.plan(deleted=[m.id for m in deleted], shown=shown, kept=[m.id for m in kept])
        self.last_compaction = (index, plan.tail_start, summary.id)
        self.compactions[index] = (plan.tail_start, summary.id)
        self.names[summary.id] = summary
        self.tracker.commit(plan, key=summary.id, override=OVERRIDE)
        self.observe(msgs)

    def disagreement(self, prev: list[Any], deleted: list[Any]) -> str | None:
        """Why the record is not what LangChain with these knobs does here, or None: the deleted
        messages must be the oldest ones, and (when trigger and keep are known) LangChain must
        summarize at this context and cut exactly there."""
        n = len(deleted)
        if [m.id for m in prev[:n]] != [m.id for m in deleted]:
            return "the messages it deleted are not the oldest ones (not SummarizationMiddleware's partition)"
        if not self.checkable:
            return None
        mw = self.mw
        if not mw._should_summarize(prev, mw.token_counter(prev)):
            return f"with these knobs LangChain does not summarize this context of {len(prev)} messages"
        cut = mw._determine_cutoff_index(prev)
        if cut != n:
            return (f"with these knobs LangChain keeps {len(prev) - cut} of these {len(prev)} messages; "
                    f"the record kept {len(prev) - n}")
        return None

    def plain_new(self, m: Any) -> bool:
        """Whether ``m`` is a plain new message (a LangChain message with an id not seen before,
        not a summary): :meth:`step` would only append it."""
        return isinstance(m, self._base) and isinstance(m.id, str) and bool(m.id) and m.id not in self.entries \
            and not self.is_summary(m)

    def appended(self, new: Sequence[Any]) -> bool:
        """Whether ``new``, appended to the context last observed, are plain new messages, each
        once: then :meth:`step` would only append them, which :meth:`extend` does in O(len(new))."""
        seen: set[str] = set()
        for m in new:
            if not self.plain_new(m) or m.id in seen:
                return False
            seen.add(m.id)
        return True

    def fresh(self, m: Any) -> Entry | None:
        """:meth:`appended` and :meth:`entry` for one message: its new entry when it is a plain
        new message, else None."""
        return self.entry(m, summary=False) if self.plain_new(m) else None

    def run(self, chain: list[tuple[str, list[Any]]], *, start: int = 0, assume_seen: bool = False) -> None:
        prev: list[Any] = chain[start - 1][1] if start else []  # the context the guard last observed
        for index in range(start, len(chain)):
            cid, msgs = chain[index]
            if msgs is prev:  # the same list (the writes reader shares it while nothing changed)
                continue
            n = len(prev)
            if n and len(msgs) >= n and msgs[:n] == prev:  # identical objects compare without calling __eq__
                if len(msgs) == n + 1:  # most checkpoints: one new message
                    e = self.fresh(msgs[n])
                    if e is None:
                        self.go(index, cid, prev, msgs, assume_seen)
                    else:
                        self.tracker.extend((e,))
                elif len(msgs) > n and not self.appended(msgs[n:]):
                    self.go(index, cid, prev, msgs, assume_seen)
                elif len(msgs) > n:
                    self.tracker.extend([self.entry(m) for m in msgs[n:]])
                prev = msgs
                continue
            ids = [m.id if isinstance(m, self._base) else None for m in msgs]
            if prev and ids == [getattr(m, "id", None) for m in prev]:  # the same messages
                prev = msgs
                continue
            self.go(index, cid, prev, msgs, assume_seen)
            prev = msgs

    def go(self, index: int, cid: str, prev: list[Any], msgs: list[Any], assume_seen: bool) -> None:
        """One checkpoint whose messages changed: :meth:`step`, errors naming the checkpoint."""
        self.cid = cid
        self.where = f"thread {self.thread!r}, checkpoint {cid}"
        try:
            self.step(index, prev, msgs, assume_seen=assume_seen)
        except AdapterError as exc:  # the tracker cannot place what the checkpoint holds
            raise self.fail(str(exc)) from None

    def pending(self) -> list[tuple[int, int]]:
        return pending_holes(self.tracker)

    def named(self) -> list[Named]:
        return named_units(self.tracker, {k: _text(m) for k, m in self.names.items()})


def _build(source: str, thread: str, chain: list[tuple[str, list[Any]]], knobs: Knobs,
           names: bool = True) -> Imported:
    """The thread's log. Compactions the knobs cannot decide (none given, or the record disagrees
    with them) leave everything up to the tail of the last such one adopted: unverified."""
    return _built(source, thread, chain, knobs, names)[0]


def _built(source: str, thread: str, chain: list[tuple[str, list[Any]]], knobs: Knobs, names: bool = True,
           judge: str | None = None) -> tuple[Imported, _Builder]:
    """:func:`_build`, and the builder whose ledger wrote the log. ``judge``: a profile; the
    ledgers judge every compaction with it (.judged_ledger) and write no log (the lines are empty)."""
    def new_log() -> io.StringIO | None:
        return io.StringIO() if judge is None else None

    def lines(log: io.StringIO | None) -> list[str]:
        return [] if log is None else log.getvalue().splitlines(keepends=True)

    log = new_log()
    b = _Builder(source, thread, knobs, log, judge)
    b.run(chain, assume_seen=not knobs.given)
    if knobs.given and not b.untrusted:
        return Imported(source, lines(log), b.named() if names else [], pending=b.pending()), b
    if knobs.given:
        index, cid, reason = b.untrusted[-1]
        why = (f"the knobs ({knobs.file}) disagree with the record at checkpoint {cid}: {reason}; what the "
               "summarizers were shown up to there is not decided")
    elif b.last_compaction is None:
        log = new_log()
        b = _Builder(source, thread, knobs, log, judge)
        b.run(chain)
        return Imported(source, lines(log), b.named() if names else [], pending=b.pending()), b
    else:
        index = b.last_compaction[0]
        why = ("what the summarizers were shown is not in the record and no --knobs were given "
               "(trim_tokens_to_summarize decides it)")
    scout = b
    tail, summary_id = scout.compactions[index]
    log = new_log()
    b = _Builder(source, thread, knobs, log, judge)
    cid, msgs = chain[index]
    b.where = f"thread {thread!r}, checkpoint {cid}"
    b.check(msgs)
    b.tracker.adopt(summary_id, tail, reason=why)
    b.observe(msgs)
    b.run(chain, start=index + 1)
    named = [n for n in scout.named() if n.hi <= tail] + b.named() if names else []
    return Imported(source, lines(log), named, why, b.pending()), b


def _require() -> None:
    """Import the framework, or raise ImportError naming the extra that installs it."""
    try:
        import langchain.agents.middleware.summarization  # noqa: F401
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        raise _missing() from None


def import_saver(saver: Any, thread: str, knobs: Knobs, source: str, *, names: bool = True) -> Imported:
    """Import thread ``thread`` of any ``BaseCheckpointSaver`` (``source`` names it in errors;
    ``names=False``: the log only, no message at each offset)."""
    _require()
    chain = _history(saver, source, thread)
    return _build(source, thread, chain, knobs, names)


def _imported(path: str, thread: str, knobs: Knobs, names: bool, full_read: bool,
              judge: str | None) -> tuple[Imported, _Builder]:
    _require()
    from langgraph.checkpoint.sqlite import SqliteSaver

    from tailguard.importers.langgraph_writes import writes_history

    conn = open_database(path)
    try:
        with paused():  # no cyclic collection during one thread's import (.gc_pause)
            saver = SqliteSaver(conn)
            _share_messages(saver)
            source = f"{path}#{thread}"
            chain = None if full_read else writes_history(conn, saver.serde, thread)
            if chain is None:
                chain = _history(saver, source, thread)
            return _built(source, thread, chain, knobs, names, judge)
    finally:
        conn.close()


def import_thread(path: str, thread: str, knobs: Knobs, *, names: bool = True, full_read: bool = False) -> Imported:
    """Import thread ``thread`` of the ``SqliteSaver`` database at ``path``: from the ``writes``
    table where that provably rebuilds the checkpoints (:mod:`.langgraph_writes`), else (or
    with ``full_read``) by reading every checkpoint through the saver. Both give the same log."""
    return _imported(path, thread, knobs, names, full_read, None)[0]


def _share_messages(saver: Any) -> None:
    """Decode each distinct serialized message once: every checkpoint of a thread stores its
    whole message list again, so the same bytes come back hundreds of times. Wraps the saver's
    own msgpack extension hook (``JsonPlusSerializer._unpack_ext_hook``, langgraph-checkpoint
    4.x) with a memo keyed by the exact bytes; where the hook is not there, nothing changes.
    Only the importer's own saver is touched, and the messages are only read."""
    serde: Any = getattr(saver, "serde", None)
    hook = getattr(serde, "_unpack_ext_hook", None)
    if not callable(hook):
        return
    memos: dict[int, dict[bytes, Any]] = {}  # extension code -> exact bytes -> the object

    def shared(code: int, data: bytes) -> Any:
        memo = memos.get(code)
        if memo is None:
            memo = memos[code] = {}
        found = memo.get(data, memos)
        if found is memos:
            found = memo[data] = hook(code, data)
        return found

    serde._unpack_ext_hook = shared


@contextlib.contextmanager
def open_thread_lines(locator: str, *, thread: str, knobs: Knobs, source: str) -> Iterator[Iterable[bytes]]:
    """The fleet audit's opener (``Item.opener``): the imported log of one thread, as lines.

    The fleet audits a session with a refusal twice (the second time explained): the last
    import is kept for that, keyed by the file's size and modification time and the knobs."""
    global _LAST
    del source  # named in errors by import_thread already
    try:
        st = os.stat(locator)
        key: tuple[Any, ...] | None = (locator, thread, st.st_size, st.st_mtime_ns, repr(knobs))
    except OSError:
        key = None
    if key is None or _LAST is None or _LAST[0] != key:
        lines = [line.encode("utf-8") for line in import_thread(locator, thread, knobs, names=False).lines]
        _LAST = (key, lines) if key is not None else None
    else:
        lines = _LAST[1]
    yield lines


_LAST: tuple[tuple[Any, ...], list[bytes]] | None = None


def opener(thread: str, knobs: Knobs, source: str) -> Any:
    """A picklable opener for :class:`tailguard.audit.fleet.sources.Item`."""
    return functools.partial(open_thread_lines, thread=thread, knobs=knobs, source=source)


def judge_thread(locator: str, profile: str, *, thread: str, knobs: Knobs, source: str) -> Record | None:
    """The fleet audit's judge (``Item.judge``): the record of thread ``thread``, judged by the
    import's own ledger (.judged_ledger), or None for a profile it does not judge (``seed``:
    then the log is written and audited). Raises :class:`ImportSourceError` as the import does."""
    if profile not in JUDGED_PROFILES:
        return None
    _, b = _imported(locator, thread, knobs, False, False, profile)
    assert isinstance(b.ledger, JudgingLedger)
    return b.ledger.record(source)


def judge(thread: str, knobs: Knobs, source: str) -> Any:
    """A picklable judge for :class:`tailguard.audit.fleet.sources.Item`."""
    return functools.partial(judge_thread, thread=thread, knobs=knobs, source=source)
