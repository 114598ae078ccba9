"""Format ``openai-agents``: an OpenAI Agents SDK ``SQLiteSession`` database as the event log.

``SQLiteSession`` keeps one row per stored item in ``agent_messages`` (``id INTEGER PRIMARY KEY
AUTOINCREMENT``, ``session_id``, ``message_data`` JSON) and nothing else: a deleted row leaves
only its id unused (AUTOINCREMENT never reuses one; ``sqlite_sequence`` keeps the highest ever
given). What the record says, per session (rows in id order):

- a **compaction block**: a ``compaction`` item and the user messages inserted with it (ids
  consecutive, ending at it): ``OpenAIResponsesCompactionSession`` inserts the compact
  endpoint's output (the user messages it was shown, then the compaction item) in one
  transaction, right after deleting what it replaces, so the ids just before a block are
  deleted rows (at least one);
- a block with an older surviving row of the session is a **suffix replacement** (the Runner's
  automatic compaction over ``SQLiteSession``: ``_get_compaction_snapshot``/``replace_suffix``
  deletes exactly the rows it sent and keeps the older ones verbatim). A manual
  ``run_compaction()`` replaces the whole store, so a block with no older row is the session's
  **last whole-store replacement** (or a suffix replacement that sent the whole store);
- any other id gap between two rows of the session (or after its last row, up to
  ``sqlite_sequence``) was removed outside any compaction: ``pop_item()``.

What the record does not say is decided with the SDK's rule and ``--knobs`` (the
``agents.OpenAIResponsesCompactionSession`` table) where it can be, else adopted (unverified):
see :func:`_Builder.block` and docs/import.md. Deleted rows are named by their id (``row 17``);
their text is gone.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import io
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tailguard.base.errors import ImportSourceError as ImportSourceError
from tailguard.base.intervals import normalize
from tailguard.importers.imported import Imported, Named
from tailguard.importers.knobs import Knobs
from tailguard.importers.sqlite_source import open_readonly
from tailguard.pipeline.presets.openai_agents import PRESET
from tailguard.runtime.ledger import Ledger

__all__ = ["FORMAT", "PRESET_NAME", "UNITS", "VALIDATED_ON", "import_session", "open_database", "session_ids"]

FORMAT = "openai-agents"
PRESET_NAME = PRESET.name
UNITS = ("messages",)
#: The versions this importer was validated on (tests/importers/test_openai_agents_import.py).
VALIDATED_ON: tuple[str, ...] = PRESET.validated_on
OVERRIDE = "imported: the framework committed this compaction without a guard"
MESSAGES, SESSIONS = "agent_messages", "agent_sessions"
GONE = "(deleted: the store keeps no copy)"
_TABLES = {MESSAGES: ("id", "session_id", "message_data"), SESSIONS: ("session_id",)}


def _require() -> None:
    """Nothing to import: the database is read with the standard library (the SDK's own rule is
    the preset's knobs). Kept for the formats' common interface."""


# -- the database --------------------------------------------------------------------------

def open_database(path: str) -> sqlite3.Connection:
    """A read-only connection to a ``SQLiteSession`` database, or :class:`ImportSourceError`."""
    return open_readonly(path, _TABLES, "an OpenAI Agents SDK SQLiteSession file",
                         "not an OpenAI Agents SDK SQLiteSession database (it writes agent_sessions and "
                         "agent_messages)",
                         "not an OpenAI Agents SDK SQLiteSession database")


def session_ids(conn: sqlite3.Connection, path: str) -> list[str]:
    """The sessions with at least one row, sorted."""
    try:
        rows = conn.execute(f"SELECT DISTINCT session_id FROM {MESSAGES} ORDER BY session_id").fetchall()
    except sqlite3.Error as exc:
        raise ImportSourceError(path, f"table {MESSAGES}", f"unreadable ({exc})") from None
    return [str(r[0]) for r in rows]


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    item: dict[str, Any]


@dataclass(slots=True)
class _Record:
    """One session's rows and what the database says about the ids around them."""

    rows: list[_Row]
    ids: list[int]  # every id present in agent_messages (all sessions), sorted
    top: int  # the highest id ever given (sqlite_sequence), at least the highest present
    sessions: int  # how many sessions have rows or a session row
    guarded: bool = False  # the adapter's tailguard_state table holds this session

    @property
    def own(self) -> bool:
        """Only this session is in the database: every deleted id was its row."""
        return self.sessions == 1

    def missing(self, lo: int, hi: int) -> list[int]:
        """The ids in ``(lo, hi)`` that no row holds (deleted rows, of any session)."""
        a, b = bisect.bisect_right(self.ids, lo), bisect.bisect_left(self.ids, hi)
        present = set(self.ids[a:b])
        return [i for i in range(lo + 1, hi) if i not in present]


def _read(conn: sqlite3.Connection, source: str, sid: str) -> _Record:
    where = f"session {sid!r}"
    try:
        raw = conn.execute(f"SELECT id, message_data FROM {MESSAGES} WHERE session_id = ? ORDER BY id",
                           (sid,)).fetchall()
        ids = [int(r[0]) for r in conn.execute(f"SELECT id FROM {MESSAGES} ORDER BY id")]
        seq = None
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
            found = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (MESSAGES,)).fetchone()
            seq = int(found[0]) if found else None
        names = {str(r[0]) for r in conn.execute(f"SELECT DISTINCT session_id FROM {MESSAGES}")}
        names |= {str(r[0]) for r in conn.execute(f"SELECT session_id FROM {SESSIONS}")}
    except (sqlite3.Error, ValueError, TypeError) as exc:
        raise ImportSourceError(source, f"table {MESSAGES}", f"unreadable ({exc})") from None
    if not raw:
        raise ImportSourceError(source, where, f"no such session (no row of it in {MESSAGES})")
    rows: list[_Row] = []
    for rid, data in raw:
        at = f"{where}, row {rid}"
        try:
            item = json.loads(data)
        except (ValueError, TypeError) as exc:
            raise ImportSourceError(source, at, f"message_data: not JSON ({exc}): a corrupt row") from None
        if not isinstance(item, dict):
            raise ImportSourceError(source, at, "message_data: not a Responses input item (a JSON object)")
        if "__enc__" in item:
            raise ImportSourceError(source, at, "message_data: an EncryptedSession envelope: encrypted stores "
                                                "cannot be imported")
        rows.append(_Row(int(rid), item))
    top = max(seq or 0, ids[-1] if ids else 0)
    return _Record(rows, ids, top, len(names), _guarded(conn, sid))


def _guarded(conn: sqlite3.Connection, sid: str) -> bool:
    """Whether the adapter's state table (``tailguard_state``) holds this session: it was guarded."""
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tailguard_state'").fetchone():
            return False
        return conn.execute("SELECT 1 FROM tailguard_state WHERE session_id = ?", (sid,)).fetchone() is not None
    except sqlite3.Error:
        return False


# -- what an item is -------------------------------------------------------------------------

def _is_compaction(item: dict[str, Any]) -> bool:
    return item.get("type") == "compaction"


def _is_user(item: dict[str, Any]) -> bool:
    """The SDK's ``_is_user_message`` (agents/memory/openai_responses_compaction_session.py, 0.24.0),
    restated so that reading a database needs no SDK: the compact endpoint echoes these."""
    if item.get("type") == "message":
        return item.get("role") == "user"
    return item.get("role") == "user" and "content" in item


def _text(item: dict[str, Any]) -> str:
    if "output" in item and item.get("type") != "message":
        return str(item["output"])
    if "arguments" in item:
        return f"{item.get('name', '')}({item['arguments']})"
    content = item.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b)
    return "" if content is None else str(content)


def _blocks(rows: Sequence[_Row]) -> dict[int, int]:
    """Compaction blocks: first row index -> the compaction item's index."""
    out: dict[int, int] = {}
    for k, r in enumerate(rows):
        if not _is_compaction(r.item):
            continue
        j = k
        while j > 0 and rows[j - 1].id == rows[j].id - 1 and _is_user(rows[j - 1].item):
            j -= 1
        out[j] = k
    return out


# -- replaying the record ----------------------------------------------------------------------

class _Undecided(Exception):
    """What a compaction was shown (or whose rows were deleted) is not decided by the record and the knobs."""


@dataclass(slots=True)
class _Slot:
    """A stored row as the ledger knows it: a unit (its offset) or a carrier of a summary."""

    key: str
    kind: str  # "unit" | "carrier"
    ref: int | str


class _Builder:
    """Replays one session's rows into a ledger that writes the event log."""

    def __init__(self, source: str, sid: str, record: _Record, knobs: Knobs, log: io.StringIO) -> None:
        self.source, self.sid, self.record, self.knobs = source, sid, record, knobs
        self.ledger = Ledger(knobs.floor, unit=knobs.floor_unit, log=log, session_id=sid)
        self.slots: list[_Slot] = []
        self.names: dict[str, str] = {}
        self.offsets: dict[str, int] = {}
        #: points up to which the record is not decided: (index of the next row, the id the replay
        #: resumes after, offsets up to there, why)
        self.untrusted: list[tuple[int, int, int, str]] = []
        self.removes = bool(knobs.values.get("application_removes_items", 1)) or not knobs.given

    # -- the ledger -------------------------------------------------------------------------

    def append(self, keys: Sequence[tuple[str, str]]) -> None:
        if not keys:
            return
        at = self.ledger.history_end
        self.ledger.append(len(keys))
        for j, (key, text) in enumerate(keys):
            self.slots.append(_Slot(key, "unit", at + j))
            self.offsets[key] = at + j
            self.names[key] = text

    def removed(self, gap: Sequence[int], at: int, resume: int) -> None:
        """Rows of this session removed outside any compaction (``pop_item``): truncated. With
        several sessions in the database they may be another's: everything up to them is then
        not decided (``at``: the index of the row after them; ``resume``: the id after them)."""
        if not gap:
            return
        if not self.record.own and not self.removes:
            return  # only compactions delete, and a compaction's rows lie right before its block: another's
        self.append([(f"row {i}", GONE) for i in gap])
        offs = [self.offsets[f"row {i}"] for i in gap]
        for lo, hi in normalize((o, o + 1) for o in offs):
            self.ledger.truncate(lo, hi)
        gone = {f"row {i}" for i in gap}
        self.slots = [s for s in self.slots if s.key not in gone]
        if not self.record.own:
            ids = f"{gap[0]}" if len(gap) == 1 else f"{gap[0]} to {gap[-1]}"
            self.untrusted.append((at, resume, self.ledger.history_end,
                                   f"ids {ids} are deleted rows outside any compaction and {self.record.sessions} "
                                   "sessions share the ids: whether this session lost them (pop_item) is not in the "
                                   "record"))

    def compact(self, deleted: Sequence[str], shown: set[str], block: Sequence[str]) -> None:
        """The store loses ``deleted`` (a suffix of its slots), of which ``shown`` were sent, and
        gains ``block``. The new summary is the compaction item together with the rows it kept
        verbatim (as the adapter models it: :mod:`tailguard.adapters.openai_agents`)."""
        led = self.ledger
        n = led.history_end
        gone = set(deleted)
        kept = [s for s in self.slots if s.key not in gone]
        if [s.key for s in self.slots[len(kept):]] != list(deleted):
            raise _Undecided("the rows it deleted are not the newest ones")
        seen = [int(s.ref) for s in kept if s.kind == "unit"]
        seen += [int(s.ref) for s in self.slots[len(kept):] if s.kind == "unit" and s.key in shown]
        run = next((r for r in normalize((o, o + 1) for o in seen) if r[1] == n), (n, n))
        if any(not run[0] <= int(s.ref) < run[1] for s in kept if s.kind == "unit"):
            raise _Undecided("a row removed earlier lies between rows it kept verbatim and rows it sent")
        saw: list[str] = []
        keeps: list[str] = []
        composite: set[str] = set()
        kept_keys = {s.key for s in kept}
        for summary in led.summaries:
            where = [s.key for s in self.slots if s.kind == "carrier" and s.ref == summary]
            if all(k in kept_keys for k in where):  # no carrier: ids adopted before any row, never deleted
                keeps.append(summary)
            elif where and all(k in kept_keys or k in shown for k in where):
                saw.append(summary)
                if any(k in kept_keys for k in where):
                    composite.add(summary)
        new = led.next_summary_id
        led.commit(summary_input=run, summary_covers=run, tail_start=n, summary=new, saw=saw, keeps=keeps,
                   override=OVERRIDE)
        alive = set(keeps)
        slots: list[_Slot] = []
        for s in kept:
            if s.kind == "unit" or s.ref in composite:
                slots.append(_Slot(s.key, "carrier", new))
            elif s.ref in alive:
                slots.append(s)
        slots += [_Slot(k, "carrier", new) for k in block]
        self.slots = slots

    # -- the record ------------------------------------------------------------------------

    def block(self, first: int, last: int, gap: Sequence[int]) -> None:
        """The compaction block ``rows[first..last]`` with the deleted ids ``gap`` just before it."""
        rows = self.record.rows
        echoes = last - first
        gap_keys = [f"row {i}" for i in gap]
        block = [f"row {r.id}" for r in rows[first:last + 1]]
        for r in rows[first:last + 1]:
            self.names[f"row {r.id}"] = _text(r.item)
        why: str | None = None
        shown = set(gap_keys)
        if first > 0:  # an older row survives: the automatic suffix replacement sent all it deleted
            if not gap:
                why = "no deleted row lies before it (the SDK deletes what it replaces first)"
            elif len(gap) == max(1, echoes):
                pass  # exactly the rows it sent: the suffix holds at least one row and every echoed one
            elif not self.removes:
                pass  # only compactions delete: its rows were sent; another session's are counted, covered
            elif not self.record.own:
                why = (f"{len(gap)} ids before it are deleted rows and {self.record.sessions} sessions share the "
                       "ids: which were this session's, and sent, is not in the record")
            else:
                why = (f"{len(gap)} rows before it are deleted; the suffix it sent holds at least {max(1, echoes)} "
                       "of them, and the others may have been removed by pop_item() (application_removes_items = 1)")
        else:
            why = self.whole_store(len(gap), shown, gap_keys)
        self.append([(k, GONE) for k in gap_keys])
        where = f"compaction item at row {rows[last].id}"
        point = (last + 1, rows[last].id, self.ledger.history_end)
        if why is not None:
            self.untrusted.append((*point, f"{where}: {why}"))
        try:
            self.compact(gap_keys, shown, block)
        except _Undecided as exc:
            if why is None:
                self.untrusted.append((*point, f"{where}: {exc}"))
            self.compact_all(block)

    def compact_all(self, block: Sequence[str]) -> None:
        """A compaction whose input is not decided (the rebuild adopts up to here): taken as sent."""
        led = self.ledger
        n, new = led.history_end, led.next_summary_id
        led.commit(summary_input=(n, n), summary_covers=(n, n), tail_start=n, summary=new, saw=[], keeps=[],
                   override=OVERRIDE)
        self.slots = [_Slot(k, "carrier", new) for k in block]

    def whole_store(self, m: int, shown: set[str], gap_keys: Sequence[str]) -> str | None:
        """The session's oldest surviving block: the last whole-store replacement. Which of the
        ``m`` ids deleted before it it was shown (``shown``, narrowed here), or why that is not decided."""
        if m == 0:
            return None
        if not self.knobs.given:
            return (f"it replaced the whole store: what it and any compaction before it were shown of the {m} rows "
                    "deleted before it is not in the record, and no --knobs were given")
        if self.removes:
            return (f"{m} rows before it are deleted; with application_removes_items = 1 any of them may have been "
                    "removed by pop_item() or clear_session() rather than compacted")
        limit = self.knobs.values.get("limit")
        threshold = int(self.knobs.values.get("compaction_threshold", 10))
        fresh = bool(self.knobs.values.get("fresh_session_per_turn", 0))
        if limit is None or m <= int(limit):
            return None  # every compaction was shown the whole store (at most `limit` rows, this session's or not)
        if not self.record.own:
            return (f"{m} ids before it are deleted rows, more than limit = {limit}, and {self.record.sessions} "
                    "sessions share the ids: how many were this session's is not in the record")
        if not fresh:
            return (f"{m} rows were deleted before it, more than limit = {limit}: a long-lived session object "
                    "shows its compactions every row added since its first read, and when that read was is not "
                    "in the record (fresh_session_per_turn = 0)")
        if self.knobs.values.get("automatic_compaction", 1):
            return (f"{m} rows were deleted before it, more than limit = {limit}: the application's run_compaction() "
                    "showed the newest `limit` of them, but the Runner's automatic compaction (automatic_compaction "
                    "= 1) sends the whole store when it replaces it, and leaves the same block")
        if threshold < 1 or m > 2 * threshold:
            return (f"{m} rows were deleted before it: more than one compaction (each needs compaction_threshold = "
                    f"{threshold} candidate items) may have replaced the store, and what each was shown is not in "
                    "the record")
        shown.intersection_update(gap_keys[m - int(limit):])  # the only compaction: the newest `limit` rows
        return None

    def run(self, start: int = 0, prev: int = 0) -> None:
        rows = self.record.rows
        blocks = _blocks(rows)
        i = start
        while i < len(rows):
            gap = self.record.missing(prev, rows[i].id)
            if i in blocks:
                last = blocks[i]
                self.block(i, last, gap)
                prev, i = rows[last].id, last + 1
                continue
            self.removed(gap, i, rows[i].id - 1)
            self.append([(f"row {rows[i].id}", _text(rows[i].item))])
            prev, i = rows[i].id, i + 1
        self.removed(self.record.missing(prev, self.record.top + 1), len(rows), self.record.top)

    def pending(self) -> list[tuple[int, int]]:
        led = self.ledger
        live = [int(s.ref) for s in self.slots if s.kind == "unit"]
        t = min(live, default=led.history_end)
        d = led.decide(summary_input=(t, t), summary_covers=(t, t), tail_start=t, saw=[], keeps=list(led.summaries))
        return [(lo, hi) for lo, hi in d.holes]

    def named(self) -> list[Named]:
        return sorted((Named(o, o + 1, k, self.names.get(k, "")) for k, o in self.offsets.items()), key=lambda n: n.lo)


def _gaps_outside_blocks(record: _Record) -> list[int]:
    """Deleted ids that lie before no compaction block (removed by ``pop_item``, if this session's)."""
    rows = record.rows
    blocks = _blocks(rows)
    out: list[int] = []
    prev = 0
    for i, r in enumerate(rows):
        if i not in blocks and not any(b < i <= e for b, e in blocks.items()):
            out += record.missing(prev, r.id)
        prev = r.id
    return out + record.missing(prev, record.top + 1)


def import_record(record: _Record, knobs: Knobs, source: str, sid: str, *, names: bool = True) -> Imported:
    """The event log of one session's ``record``. Compactions the record and the knobs cannot
    decide leave everything up to the last such one adopted: unverified."""
    note = None if not record.guarded else (
        "this session has a row in tailguard_state: GuardedResponsesCompactionSession guarded it, and its guard's "
        "own log (its log=) is the exact record")
    if knobs.given and not knobs.values.get("application_removes_items", 1) and record.own:
        popped = _gaps_outside_blocks(record)
        if popped:  # the record proves the knob wrong: rows left outside any compaction
            knobs = Knobs(knobs.framework, {**knobs.values, "application_removes_items": 1}, knobs.floor,
                          knobs.floor_unit, knobs.file)
            why = (f"application_removes_items = 0 ({knobs.file}) disagrees with the record: rows "
                   f"{', '.join(map(str, popped[:5]))}{' ...' if len(popped) > 5 else ''} were removed outside any "
                   "compaction; taken as 1")
            note = why if note is None else f"{why}; {note}"
    log = io.StringIO()
    b = _Builder(source, sid, record, knobs, log)
    b.run()
    if not b.untrusted:
        return Imported(source, log.getvalue().splitlines(keepends=True), b.named() if names else [], note,
                        pending=b.pending())
    at, resume, count, why = b.untrusted[-1]
    why = why + ("" if note is None else f" ({note})")
    scout = b
    log = io.StringIO()
    b = _Builder(source, sid, record, knobs, log)
    rows = record.rows
    adopted = [f"row {r.id}" for r in rows[:at]]
    sid_ = b.ledger.adopt(count, reason=why + "; everything up to there is unverified")
    b.slots = [_Slot(k, "carrier", sid_) for k in adopted]
    b.offsets = {k: o for k, o in scout.offsets.items() if o < count}
    b.names = dict(scout.names)
    b.run(start=at, prev=resume)
    return Imported(source, log.getvalue().splitlines(keepends=True), b.named() if names else [], why,
                    pending=b.pending())


def import_session(path: str, sid: str, knobs: Knobs, *, names: bool = True) -> Imported:
    """Import session ``sid`` of the ``SQLiteSession`` database at ``path``."""
    source = f"{path}#{sid}"
    conn = open_database(path)
    try:
        record = _read(conn, source, sid)
    finally:
        conn.close()
    return import_record(record, knobs, source, sid, names=names)


@contextlib.contextmanager
def open_session_lines(locator: str, *, session: str, knobs: Knobs, source: str) -> Iterator[Iterable[bytes]]:
    """The fleet audit's opener (``Item.opener``): the imported log of one session, as lines."""
    del source  # named in errors by import_session already
    yield [line.encode("utf-8") for line in import_session(locator, session, knobs, names=False).lines]


def opener(session: str, knobs: Knobs, source: str) -> Any:
    """A picklable opener for :class:`tailguard.audit.fleet.sources.Item`."""
    return functools.partial(open_session_lines, session=session, knobs=knobs, source=source)
