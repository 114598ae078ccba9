"""The guard around Semantic Kernel's chat history reducers.

``GuardedTruncationReducer`` and ``GuardedSummarizationReducer`` are SK's own
``ChatHistoryTruncationReducer`` and ``ChatHistorySummarizationReducer`` (same fields, same
``reduce()``, usable wherever SK takes a ``ChatHistory``: ``ChatHistoryAgentThread``,
``add_message_async`` with ``auto_reduce``), with a :class:`ReducerGuard` attached. Every
``reduce()``

- *observes* the history: each message gets a key in its ``metadata`` (:data:`KEY`) the first time
  the guard sees it and one offset (unit ``messages``); the first system/developer message, which
  SK always keeps, is pinned (no offset); summary messages (``metadata["__summary__"]``) are
  summaries. Messages that vanished since the last look were removed by someone else: truncations;
- runs SK's own ``reduce()`` **on a shadow copy** of the history, recording what its
  ``_summarize`` is given (the messages the summarizer is shown; system/developer messages and, by
  default, function calls and results are not), and *plans* the reduction: what leaves, what was
  shown, what stays;
- *resolves* it with the ledger **before any message leaves the real history**: ``halt`` raises
  ``UnrecoverableCompactionError`` (the history is untouched), ``defer`` leaves it untouched and
  returns None, ``spill`` writes every message that leaves (``model_dump(mode="json")``,
  byte-exact, re-read) to the store and proceeds. A truncation shows nothing, so it is allowed
  only when everything it deletes is spilled;
- *confirms* the shadow is what SK's reducers produce (a kept suffix, at most one new summary) and
  *applies* it: the real history takes the shadow's messages, and the guard's state (ledger
  snapshot, offsets) goes into the history's own field :data:`STATE_FIELD`, which SK's
  ``serialize()`` writes and ``restore_chat_history()`` reads, so a restarted process continues
  the session (:meth:`GuardedSummarizationReducer.resume`).

A history that already holds a summary the guard did not make is adopted (one unverified offset
stands for what that summary replaced) or refused (``on_unknown_history``). One
:class:`ReducerGuard` serves any number of histories (one session each, a lock per session).

Validated with the versions in :data:`SUPPORTED` (the Semantic Kernel presets' ``validated_on``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    SessionLogs,
    StoreArg,
    Unset,
    guard_options,
    missing_framework,
    open_store,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker, Plan
from tailguard.adapters._sessions import SessionTable, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_run, read_spill
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.semantic_kernel import SUMMARIZATION_PRESET
from tailguard.spill import SpillStore

try:
    from pydantic import PrivateAttr
    from semantic_kernel.contents.chat_message_content import ChatMessageContent
    from semantic_kernel.contents.history_reducer.chat_history_reducer_utils import SUMMARY_METADATA_KEY
    from semantic_kernel.contents.history_reducer.chat_history_summarization_reducer import (
        ChatHistorySummarizationReducer,
    )
    from semantic_kernel.contents.history_reducer.chat_history_truncation_reducer import ChatHistoryTruncationReducer
    from semantic_kernel.contents.utils.author_role import AuthorRole
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("semantic_kernel", "Semantic Kernel", "semantic-kernel",
                                        SUMMARIZATION_PRESET.validated_on)) from exc

__all__ = ["KEY", "STATE_FIELD", "SUPPORTED", "GuardedSummarizationReducer", "GuardedTruncationReducer",
           "ReducerGuard", "messages_from_spill"]

#: The versions this adapter is validated with: the Semantic Kernel presets' ``validated_on``.
SUPPORTED: tuple[str, ...] = SUMMARIZATION_PRESET.validated_on

#: The metadata key each message's guard key is kept under.
KEY = "tailguard.key"
#: The history's field the guard's state is kept in (serialized with the history).
STATE_FIELD = "tailguard_state"
STATE_FORMAT = "tailguard.semantic_kernel"
STATE_VERSION = 1
FRAMEWORK = "semantic_kernel"
ADOPTED = "adopted"
_SYSTEM_ROLES = (AuthorRole.SYSTEM, AuthorRole.DEVELOPER)


def _to_json(message: ChatMessageContent) -> Any:
    return message.model_dump(mode="json", exclude_none=True)


def _is_summary(message: ChatMessageContent) -> bool:
    return bool(message.metadata) and SUMMARY_METADATA_KEY in message.metadata


def _pinned(messages: list[ChatMessageContent], *, summarization: bool) -> ChatMessageContent | None:
    """The system/developer message SK always keeps (its own rule: the first one; the summarizer
    skips summaries)."""
    for m in messages:
        if m.role in _SYSTEM_ROLES and not (summarization and m.metadata.get(SUMMARY_METADATA_KEY)):
            return m
    return None


@dataclass(slots=True, eq=False)
class _Session:
    """One history's guard as this process holds it; ``persisted``: the integrity digest of the
    state it last wrote into the history."""

    sid: str
    guard: CompactionGuard
    persisted: str | None = None

    def close(self) -> None:
        self.guard.close()


class ReducerGuard:
    """The guard's options and what every guarded history shares: the logs (one per session
    with ``log=`` a directory or a function), the spill store, and the sessions this process
    holds (an LRU, a lock per session). Give it to the reducers as ``guard=``.
    """

    def __init__(self, *, options: GuardOptions | None = None, recovery_floor_span: int | Unset = UNSET,
                 floor_unit: str | Unset = UNSET, on_refuse: str | Unset = UNSET, store: StoreArg | Unset = UNSET,
                 log: LogArg | Unset = UNSET, profile: str | Unset = UNSET,
                 on_unknown_history: str | Unset = UNSET, cache_size: int = 256) -> None:
        self.options = guard_options(options, "ReducerGuard", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile, on_unknown_history=on_unknown_history)
        if self.options.floor_unit != "messages":
            raise ValueError(f"floor_unit: semantic_kernel offsets can be 'messages', got {self.options.floor_unit!r}")
        if type(cache_size) is not int or cache_size < 1:
            raise ValueError(f"cache_size: expected an integer >= 1, got {cache_size!r}")
        self._logs = SessionLogs(self.options.log)
        self.store: SpillStore | None = open_store(self.options.store)
        self.sessions: SessionTable[_Session] = SessionTable(cache_size)

    def session_guard(self, session_id: str) -> CompactionGuard | None:
        """The guard this process holds for ``session_id``, if cached."""
        sess = self.sessions.get(session_id)
        return None if sess is None else sess.guard

    def close(self) -> None:
        """Close every log this guard opened."""
        for sess in self.sessions.drain():
            sess.close()

    # -- sessions ------------------------------------------------------------------------

    def load(self, value: Any, new_sid: str) -> _Session:
        """The session of a history holding the state ``value`` (None: a new session ``new_sid``;
        anything else is checked, and refused with an :class:`AdapterError` naming why)."""
        if value is None:
            ledger, owned = self._logs.start(self.options, new_sid)
            guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=new_sid,
                                    ledger=ledger, tracker=OffsetTracker(ledger, remember=False), store=self.store,
                                    owned=owned)
            sess = _Session(new_sid, guard)
            self.sessions.remember(new_sid, sess)
            return sess
        sid = check_state_value(value, f"history field {STATE_FIELD!r}", fmt=STATE_FORMAT, version=STATE_VERSION,
                                framework="Semantic Kernel")
        cached = SessionTable.cached_for(self.sessions.get(sid), value)
        if cached is not None:
            return cached
        ledger = self._logs.resume(value["ledger"], sid)
        tracker = OffsetTracker.restore(ledger, value.get("tracker"))
        guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                ledger=ledger, tracker=tracker, store=self.store)
        sess = _Session(sid, guard, value["integrity"])
        old = self.sessions.forget(sid)
        if old is not None:
            old.close()
        self.sessions.remember(sid, sess)
        return sess

    @staticmethod
    def state_value(sess: _Session) -> dict[str, Any]:
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
        }
        value["integrity"] = integrity(value)
        sess.persisted = value["integrity"]
        return value


@dataclass(slots=True)
class _Observed:
    """The history as the guard placed it: each message's key by identity, and the pinned one."""

    keys: dict[int, str]
    pinned: ChatMessageContent | None


class GuardedReducer:
    """The guarded ``reduce()`` shared by both reducers (a mixin before SK's class)."""

    _summarization: ClassVar[bool]
    messages: list[ChatMessageContent]
    tailguard_state: dict[str, Any] | None
    _tailguard: ReducerGuard | None
    _tailguard_shown: list[ChatMessageContent] | None

    async def _sk_reduce(self, shadow: Any) -> Any:
        raise NotImplementedError

    def attach(self, guard: ReducerGuard) -> None:
        """Attach the guard (a history restored with SK's ``restore_chat_history`` has none)."""
        if not isinstance(guard, ReducerGuard):
            raise TypeError(f"guard: expected a ReducerGuard, got {type(guard).__name__}")
        self._tailguard = guard

    @property
    def session_id(self) -> str | None:
        """The guard's session id of this history (None before its first reduce)."""
        value = self.tailguard_state
        return value.get("session") if isinstance(value, dict) else None

    async def reduce(self) -> Any:
        guard = self._tailguard
        if guard is None:
            raise AdapterError("this history has no guard attached: give guard=ReducerGuard(...) or call "
                               "attach(guard) after restoring it")
        # one reduction of this history at a time; its state is read under the lock (a second
        # caller sees what the first wrote). Two copies of one session cannot both continue it:
        # the second's state no longer matches the log (SnapshotError)
        async with guard.sessions.alocked(f"history:{id(self)}"):
            sess = guard.load(self.tailguard_state, uuid.uuid4().hex)
            try:
                return await self._guarded_reduce(guard, sess)
            finally:
                try:
                    self.tailguard_state = guard.state_value(sess)
                except Exception:  # a ledger whose log failed decides nothing more; keep the last state
                    dropped = guard.sessions.forget(sess.sid)
                    if dropped is not None:
                        dropped.close()

    async def _guarded_reduce(self, guard: ReducerGuard, sess: _Session) -> Any:
        observed = self._observe(guard, sess)
        shadow = self.model_copy(update={"messages": list(self.messages)})  # type: ignore[attr-defined]
        shadow._tailguard_shown = None
        result = await self._sk_reduce(shadow)
        if result is None:
            return None
        summary = self._confirm(observed, shadow.messages)
        plan, held = self._plan(sess, observed, shadow.messages, shadow._tailguard_shown or [])
        earlier = len(sess.guard.spills)
        res = self._resolve(sess, plan, held)
        if res == "defer":
            return None
        self._apply(sess, plan, shadow.messages, summary, earlier)
        return self

    # -- the steps -------------------------------------------------------------------------

    def _observe(self, guard: ReducerGuard, sess: _Session) -> _Observed:
        """Key every message (new ones get a fresh key in their metadata), adopt a summary the
        guard did not make (first only), and bring the ledger up to date."""
        tracker = sess.guard.tracker
        pinned = _pinned(self.messages, summarization=self._summarization)
        fresh = not tracker.units and not tracker.summaries and sess.guard.ledger.history_end == 0
        known = set(tracker.summaries)
        entries: list[Entry] = []
        keys: dict[int, str] = {}
        for i, m in enumerate(self.messages):
            if m is pinned:
                continue
            key = m.metadata.get(KEY)
            if _is_summary(m):
                if not isinstance(key, str) or key not in known:
                    if not fresh or entries:
                        raise AdapterError(f"message {i}: a summary the guard did not make (after the guard "
                                           "started, or after other messages); its coverage is unknown")
                    if guard.options.on_unknown_history == "refuse":
                        raise AdapterError(f"message {i}: the history was reduced before the guard came; that history "
                                           "is not verified (on_unknown_history='refuse'; 'adopt' records it as "
                                           "unverified)")
                    key = ADOPTED
                    m.metadata[KEY] = key
                    if key not in tracker.summaries:
                        tracker.adopt(key, 1, reason="a Semantic Kernel summary made before the guard")
                        known.add(key)
                entries.append(Entry(key, True, 0))
            else:
                if not isinstance(key, str) or not key:
                    key = uuid.uuid4().hex
                    m.metadata[KEY] = key
                entries.append(Entry(key, False, 1))
            keys[id(m)] = key
        tracker.observe(entries)
        return _Observed(keys, pinned)

    @staticmethod
    def _confirm(observed: _Observed, after: list[ChatMessageContent]) -> ChatMessageContent | None:
        """What SK's reducers produce: the pinned message, at most one new summary, and a suffix of
        the history (earlier summaries may stay in front); else nothing is written."""
        new = [m for m in after if id(m) not in observed.keys and m is not observed.pinned]
        if len(new) > 1 or any(not _is_summary(m) for m in new):
            raise AdapterError(f"the reducer added {len(new)} message(s) that are not one summary; nothing was written")
        return new[0] if new else None

    def _plan(self, sess: _Session, observed: _Observed, after: list[ChatMessageContent],
              shown: list[ChatMessageContent]) -> tuple[Plan, dict[str, ChatMessageContent]]:
        stays = {id(m) for m in after}
        by_key = {k: m for m in self.messages if (k := observed.keys.get(id(m))) is not None}
        deleted = [k for k, m in by_key.items() if id(m) not in stays]
        kept = [k for k, m in by_key.items() if id(m) in stays]
        shown_keys = [observed.keys[id(m)] for m in shown if id(m) in observed.keys]
        plan = sess.guard.tracker.plan(deleted=deleted, shown=shown_keys, kept=kept)
        held = {k: by_key[k] for k in deleted if k in sess.guard.tracker.units}
        return plan, held

    @staticmethod
    def _resolve(sess: _Session, plan: Plan, held: dict[str, ChatMessageContent]) -> str:
        tracker = sess.guard.tracker

        def payload(run: Pair) -> bytes:
            return encode_run(FRAMEWORK, sess.guard.unit, run, tracker, held, _to_json)

        return sess.guard.resolve(plan, payload).action

    def _apply(self, sess: _Session, plan: Plan, after: list[ChatMessageContent],
               summary: ChatMessageContent | None, earlier: int = 0) -> None:
        """Commit the reduction and give the real history the shadow's messages (a summary names
        the spills of its reduction, ``guard.spills[earlier:]``, in its metadata)."""
        tracker = sess.guard.tracker
        if summary is not None:
            key = f"summary:{uuid.uuid4().hex}"
            summary.metadata[KEY] = key
            sid = sess.guard.ledger.next_summary_id
            tracker.commit(plan, key=key, summary=sid)
            summary.metadata["tailguard"] = {"summary": sid, "spills": [
                {"range": [lo, hi], "handle": h} for (lo, hi), h in sess.guard.spills[earlier:]]}
            self.messages = after
            return
        # a truncation: nothing summarized; what it deletes was spilled (the ledger allowed it),
        # and the tracker records it as the truncation it is
        self.messages = after
        pinned = _pinned(after, summarization=self._summarization)
        tracker.observe([Entry(m.metadata[KEY], _is_summary(m), 0 if _is_summary(m) else 1)
                         for m in after if m is not pinned])


class GuardedTruncationReducer(GuardedReducer, ChatHistoryTruncationReducer):  # type: ignore[misc]
    """SK's ``ChatHistoryTruncationReducer`` whose every ``reduce()`` the guard decides first.
    ``guard=``: a :class:`ReducerGuard`."""

    _summarization: ClassVar[bool] = False
    tailguard_state: dict[str, Any] | None = None
    _tailguard: ReducerGuard | None = PrivateAttr(default=None)
    _tailguard_shown: list[ChatMessageContent] | None = PrivateAttr(default=None)

    def __init__(self, *, guard: ReducerGuard | None = None, **data: Any) -> None:
        super().__init__(**data)
        if guard is not None:
            self.attach(guard)

    async def _sk_reduce(self, shadow: Any) -> Any:
        return await ChatHistoryTruncationReducer.reduce(shadow)

    @classmethod
    def resume(cls, serialized: str, *, guard: ReducerGuard) -> GuardedTruncationReducer:
        """A history written by SK's ``serialize()``, with ``guard`` attached."""
        out = cls.restore_chat_history(serialized)
        out.attach(guard)
        return out

    def __eq__(self, other: object) -> bool:
        return ChatHistoryTruncationReducer.__eq__(self, other)

    def __hash__(self) -> int:
        return ChatHistoryTruncationReducer.__hash__(self)


class GuardedSummarizationReducer(GuardedReducer, ChatHistorySummarizationReducer):  # type: ignore[misc]
    """SK's ``ChatHistorySummarizationReducer`` whose every ``reduce()`` the guard decides first.
    ``guard=``: a :class:`ReducerGuard`."""

    _summarization: ClassVar[bool] = True
    tailguard_state: dict[str, Any] | None = None
    _tailguard: ReducerGuard | None = PrivateAttr(default=None)
    _tailguard_shown: list[ChatMessageContent] | None = PrivateAttr(default=None)

    def __init__(self, *, guard: ReducerGuard | None = None, **data: Any) -> None:
        super().__init__(**data)
        if guard is not None:
            self.attach(guard)

    async def _sk_reduce(self, shadow: Any) -> Any:
        return await ChatHistorySummarizationReducer.reduce(shadow)

    async def _summarize(self, messages: list[ChatMessageContent]) -> ChatMessageContent | None:
        self._tailguard_shown = list(messages)  # what SK hands its summarizer, recorded on the shadow
        return await super()._summarize(messages)

    @classmethod
    def resume(cls, serialized: str, *, guard: ReducerGuard, service: Any) -> GuardedSummarizationReducer:
        """A history written by SK's ``serialize()``, with its summarizer ``service`` (a client is not
        serialized) and ``guard`` attached."""
        out = cls.restore_chat_history(serialized)
        out.service = service
        out.attach(guard)
        return out

    def __eq__(self, other: object) -> bool:
        return ChatHistorySummarizationReducer.__eq__(self, other)

    def __hash__(self) -> int:
        return ChatHistorySummarizationReducer.__hash__(self)


def messages_from_spill(store: SpillStore, handle: str) -> list[ChatMessageContent]:
    """The SK messages of a spill, as they were when they left the history."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return [ChatMessageContent.model_validate(x["item"]) for x in doc["items"]]
