"""The guard around Pydantic AI v2's history processing (``ProcessHistory``, ``OpenAICompaction``).

Pydantic AI 2 removed ``history_processors=``; history is reduced by capabilities whose
``before_model_request`` rewrites the message list: ``ProcessHistory(processor)`` (it runs
the processor and writes the result to ``ctx.messages``, the run's history, for good) and the
provider compactions (``OpenAICompaction(message_count_threshold=N)``: every message but the
current request goes to ``/responses/compact`` and is replaced by one compaction response).

``GuardedHistory(inner, ...)`` is a capability that wraps one of them (or a bare processor,
which it wraps in ``ProcessHistory``). For each model request it

- runs ``inner`` on a copy of the run context and the request context, so nothing the inner
  capability writes reaches the run's history yet;
- records what the summarizer was sent: every call on the request's model (the provider's
  ``compact_messages``) and on any model the application built with :meth:`GuardedHistory.watch`
  (the summarizer agent of a processor) while ``inner`` runs. A deleted message counts as shown
  whole only when each of its parts reached the summarizer (the same part, or its text whole);
- maps the result onto the history: messages kept (the same message, by its parts), messages
  deleted, and at most one new message, the summary (a message with no parts holds nothing and
  is no unit: the empty request of a summarizer's ``new_messages()`` may stand beside it). A
  processor that rewrites a message in place or adds two is refused with
  :class:`~tailguard.adapters._offsets.AdapterError` (fail closed);
- predicts Pydantic AI's own cleanup of the result (``_drop_orphaned_tool_results``, run before
  every request): a tool result whose call the processor deleted is dropped by the framework, so
  its message counts as deleted, never kept;
- decides **before anything is deleted**: ``halt`` raises ``UnrecoverableCompactionError`` and
  the run's history is untouched, ``spill`` writes the deleted messages
  (``ModelMessagesTypeAdapter``'s JSON, byte-exact) to the store and proceeds, ``defer`` keeps
  the history unreduced for this request and logs the refusal.

State. Pydantic AI keeps a conversation as its message list (``result.all_messages()``, a
``ConversationStore``, or JSON the application stores); messages have no stable ids. The guard
identifies a message by the digests of its parts (the parts survive the framework's merge of
consecutive requests; a merged message holds the offsets of every message it absorbed) and
carries its state (ledger snapshot, offsets of the messages in context, their part digests) in
the metadata of the newest summary it wrote: ``message.metadata["tailguard"]``, rewritten on
every request, so a restarted process continues the session from the history alone. A request
summary followed by a request is merged by the guard as the framework would merge it
(``pydantic_ai.messages._merge_consecutive_messages``) and the metadata set on the merged message,
because that merge keeps no application metadata. One ``GuardedHistory`` serves any number of
conversations at once (a lock per session, an LRU of restored sessions). A compaction response
the guard did not make is adopted as unverified history (``on_unknown_history``).

Validated with the versions in :data:`SUPPORTED` (the Pydantic AI preset's ``validated_on``).
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    Resolution,
    SessionLogs,
    StoreArg,
    Unset,
    guard_options,
    missing_framework,
    open_store,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker, Plan
from tailguard.adapters._sessions import SessionTable, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_index, encode_run, read_index, read_spill
from tailguard.base.args import is_int
from tailguard.base.errors import SnapshotError
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.pydantic_ai import PRESET
from tailguard.spill import SpillStore

try:
    import pydantic_core
    from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
    from pydantic_ai.messages import (
        CompactionPart,
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        _drop_orphaned_tool_results,
        _merge_consecutive_messages,
    )
    from pydantic_ai.models import Model
    from pydantic_ai.models.wrapper import WrapperModel
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("pydantic_ai", "Pydantic AI", "pydantic-ai", PRESET.validated_on)) from exc

__all__ = ["META_KEY", "SUPPORTED", "GuardedHistory", "messages_from_spill", "spill_index"]

#: The versions this adapter is validated with: the Pydantic AI preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

#: The key of ``ModelRequest.metadata`` / ``ModelResponse.metadata`` the guard's summary carries.
META_KEY = "tailguard"
STATE_FORMAT = "tailguard.pydantic_ai"
STATE_VERSION = 1
SUMMARY_PREFIX = "tailguard-summary-"
FRAMEWORK = "pydantic_ai"

_recording: contextvars.ContextVar[list[list[ModelMessage]] | None] = contextvars.ContextVar(
    "tailguard_pydantic_ai_recording", default=None)


def _part_digest(part: Any) -> str:
    return hashlib.sha256(pydantic_core.to_json(part)).hexdigest()[:32]


def _parts(m: ModelMessage) -> list[str]:
    return [_part_digest(p) for p in m.parts]


def _part_text(part: Any) -> str:
    """The text of a part as a summarizer prompt would hold it ('' when it has none)."""
    if hasattr(part, "args_as_json_str") and hasattr(part, "tool_name"):
        return f"{part.tool_name} {part.args_as_json_str()}" if part.args_as_json_str() not in ("", "{}") \
            else str(part.tool_name)
    if hasattr(part, "model_response_str"):
        try:
            return str(part.model_response_str())
        except Exception:  # a part that cannot render has no text
            return ""
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(c for c in content if isinstance(c, str))
    return ""


def _meta(m: ModelMessage) -> dict[str, Any] | None:
    meta = (m.metadata or {}).get(META_KEY)
    return meta if isinstance(meta, dict) and isinstance(meta.get("summary"), str) else None


def _carried_meta(m: ModelMessage) -> dict[str, Any] | None:
    """The guard's metadata of a message that carries (or, a guard summary, should carry) the
    session's state: a guard summary, or a response the state rides on when there is none."""
    meta = (m.metadata or {}).get(META_KEY)
    if not isinstance(meta, dict):
        return None
    return meta if isinstance(meta.get("summary"), str) or "state" in meta else None


def _is_foreign_summary(m: ModelMessage) -> bool:
    """A compaction the guard did not make (a provider's compaction part)."""
    return _meta(m) is None and any(isinstance(p, CompactionPart) for p in m.parts)


def _to_json(m: ModelMessage) -> Any:
    return ModelMessagesTypeAdapter.dump_python([m], mode="json")[0]


class _Recorder(WrapperModel):
    """A model whose calls made while the guard runs a compaction are recorded (what the
    summarizer was sent); outside one it only passes calls through."""

    @staticmethod
    def _note(messages: Sequence[ModelMessage]) -> None:
        record = _recording.get()
        if record is not None:
            record.append(list(messages))

    async def request(self, messages: list[ModelMessage], *args: Any, **kwargs: Any) -> Any:
        self._note(messages)
        return await super().request(messages, *args, **kwargs)

    def request_stream(self, messages: list[ModelMessage], *args: Any, **kwargs: Any) -> Any:
        self._note(messages)
        return super().request_stream(messages, *args, **kwargs)

    async def compact_messages(self, request_context: Any, *, instructions: str | None = None) -> Any:
        self._note(request_context.messages)
        return await self.wrapped.compact_messages(request_context, instructions=instructions)


@dataclass(slots=True, eq=False)
class _Session:
    """One conversation's guard as this process holds it: the guard, the keys of the context in
    order with their part digests, the next key serial, the spill index and the integrity digest
    of the state value it last handed out."""

    sid: str
    guard: CompactionGuard
    order: list[str] = field(default_factory=list)
    parts: dict[str, list[str]] = field(default_factory=dict)
    serial: int = 0
    index: str | None = None
    persisted: str | None = None
    new: bool = False

    def close(self) -> None:
        self.guard.close()


@dataclass(slots=True)
class _Cleanup:
    """The history processor's result after Pydantic AI's orphaned-result pass: ``out`` (what the
    framework will hold; a message of the history it cut is not in it: deleted),
    ``remainder`` (what is left of the last one, a new message, or None), ``request_only`` (the
    empty request left of it, sent with this request only, or None)."""

    out: list[ModelMessage]
    remainder: ModelMessage | None
    request_only: ModelMessage | None = None


@dataclass(slots=True)
class _Observed:
    keys: list[list[str]]  # per message of the context, the keys it holds (a merged one holds several)


class GuardedHistory(AbstractCapability[Any]):
    """A capability that decides every reduction of the message list ``inner`` makes.

    ``inner``: a history-reducing capability (``ProcessHistory(...)``, ``OpenAICompaction(...)``)
    or a history processor (wrapped in ``ProcessHistory``). The guard keywords build one
    :class:`~tailguard.adapters._guard.GuardOptions` (or give ``options=``); the unit is
    ``messages``. ``log=`` a directory or a function from session id to path gives each
    conversation its own event log.
    """

    def __init__(
        self,
        inner: Any,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        on_unknown_history: str | Unset = UNSET,
        cache_size: int = 256,
    ) -> None:
        if not isinstance(inner, AbstractCapability):
            if not callable(inner):
                raise TypeError(f"inner: expected a capability or a history processor, got {type(inner).__name__}")
            inner = ProcessHistory(inner)
        self.inner = inner
        self.options = guard_options(options, "GuardedHistory", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile, on_unknown_history=on_unknown_history)
        if self.options.floor_unit != "messages":
            raise ValueError(f"floor_unit: pydantic_ai offsets can be 'messages', got {self.options.floor_unit!r}")
        if not is_int(cache_size) or cache_size < 1:
            raise ValueError(f"cache_size: expected an integer >= 1, got {cache_size!r}")
        self._logs = SessionLogs(self.options.log)
        self._store = open_store(self.options.store)
        self._sessions: SessionTable[_Session] = SessionTable(cache_size)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # takes a capability or a callable

    # -- public helpers --------------------------------------------------------------------

    @staticmethod
    def watch(model: Model | str) -> Model:
        """``model`` with its calls recorded while the guard runs a compaction: build the
        summarizer agent of a history processor on it, so the guard knows what it was sent."""
        return _Recorder(model)

    def session_guard(self, session_id: str) -> CompactionGuard | None:
        """The guard this process holds for ``session_id``, if cached."""
        sess = self._sessions.get(session_id)
        return None if sess is None else sess.guard

    def close(self) -> None:
        """Close every log this capability opened."""
        for sess in self._sessions.drain():
            sess.close()

    # -- the hook --------------------------------------------------------------------------

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        messages: list[ModelMessage] = list(request_context.messages)
        value = self._carried(messages)
        sid = value["session"] if value is not None else f"pydantic-ai-{uuid.uuid4().hex}"
        async with self._sessions.alocked(sid):
            sess = self._load(sid, value)
            try:
                final, request_only = await self._compaction(ctx, request_context, messages, sess)
            except BaseException:
                self._settle(sess, compacted=False)
                raise
            final = self._finish(final, sess)
        ctx.messages[:] = final
        request_context.messages = [*final, *request_only]
        return request_context

    # -- sessions ----------------------------------------------------------------------------

    @staticmethod
    def _carrier(messages: Sequence[ModelMessage]) -> int | None:
        for i in range(len(messages) - 1, -1, -1):
            if _carried_meta(messages[i]) is not None:
                return i
        return None

    def _carried(self, messages: Sequence[ModelMessage]) -> dict[str, Any] | None:
        i = self._carrier(messages)
        if i is None:
            return None
        meta = _carried_meta(messages[i])
        assert meta is not None
        value = meta.get("state")
        if value is None:
            raise AdapterError(f"message {i} is the guard's summary but holds no guard state "
                               f"(metadata[{META_KEY!r}]['state']): re-send the history whole")
        check_state_value(value, f"the guard state at message {i}", fmt=STATE_FORMAT, version=STATE_VERSION,
                          framework="Pydantic AI")
        checked: dict[str, Any] = value
        return checked

    def _load(self, sid: str, value: dict[str, Any] | None) -> _Session:
        cached = self._sessions.get(sid)
        if value is None:
            ledger, owned = self._logs.start(self.options, sid)
            guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                    ledger=ledger, tracker=OffsetTracker(ledger, remember=False),
                                    store=self._store, owned=owned)
            sess = _Session(sid, guard, new=True)
        elif cached is not None and cached.persisted == value["integrity"]:
            return cached
        else:
            try:
                ledger = self._logs.resume(value["ledger"], sid)
            except SnapshotError as exc:
                raise AdapterError(f"session {sid!r}: cannot continue from the guard state the history holds: "
                                   f"{exc}. The log has moved past that state (a run that failed after the guard "
                                   "recorded, an older copy of the history, or another process continued the "
                                   "session)") from exc
            tracker = OffsetTracker.restore(ledger, value.get("tracker"))
            guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                    ledger=ledger, tracker=tracker, store=self._store)
            order, parts, serial, index = (value.get("order"), value.get("parts"), value.get("serial"),
                                           value.get("spill_index"))
            if not (isinstance(order, list) and all(isinstance(k, str) for k in order)
                    and isinstance(parts, dict) and set(parts) == set(order) and type(serial) is int
                    and (index is None or isinstance(index, str))):
                raise AdapterError(f"session {sid!r}: bad 'order', 'parts', 'serial' or 'spill_index' in the "
                                   "guard state")
            sess = _Session(sid, guard, list(order), {k: list(v) for k, v in parts.items()}, serial, index,
                            value["integrity"])
            if cached is not None:
                cached.close()
        self._sessions.remember(sid, sess)
        return sess

    @staticmethod
    def _only_appends(sess: _Session) -> bool:
        """Whether the session recorded nothing but appends (nothing left the context, nothing
        refused, spilled, adopted or summarized): then it has nothing to carry."""
        ledger, tracker = sess.guard.ledger, sess.guard.tracker
        in_context = sum(hi - lo for lo, hi in tracker.units.values())
        return not (ledger.refusals or sess.guard.spills or ledger.unverified or ledger.summaries
                    or in_context != ledger.history_end)

    def _settle(self, sess: _Session, *, compacted: bool) -> None:
        """A new session that ends with nowhere for its state to ride is dropped with its log when
        it recorded nothing but appends."""
        if not sess.new or compacted or not self._only_appends(sess):
            return
        self._sessions.forget(sess.sid)
        sess.close()
        self._logs.discard(sess.sid)

    def _state_value(self, sess: _Session) -> dict[str, Any]:
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
            "order": list(sess.order), "parts": {k: list(v) for k, v in sess.parts.items()},
            "serial": sess.serial, "spill_index": sess.index,
        }
        value["integrity"] = integrity(value)
        return value

    def _finish(self, final: list[ModelMessage], sess: _Session) -> list[ModelMessage]:
        """The history with the session's state in the newest guard summary (every request, so
        the offsets of new messages persist). With no guard summary (a processor that only drops
        messages), a session that recorded more than appends carries it in the newest response
        (``metadata["tailguard"] = {"state", "spill_index"}``; the newest request when no response
        is left: Pydantic AI's merge of consecutive requests keeps no application metadata, so a
        response is preferred); one that recorded only appends is settled. No other message
        keeps a state: an older one would be stale."""
        i = next((j for j in range(len(final) - 1, -1, -1) if _meta(final[j]) is not None), None)
        if i is None and not (sess.new and self._only_appends(sess)):
            i = next((j for j in range(len(final) - 1, -1, -1) if not isinstance(final[j], ModelRequest)),
                     len(final) - 1 if final else None)  # a request only when no response is left
        if i is None:
            self._settle(sess, compacted=False)
            return final
        sess.new = False
        value = self._state_value(sess)
        sess.persisted = value["integrity"]
        out = list(final)
        for j, m in enumerate(out):
            meta = (m.metadata or {}).get(META_KEY)
            if j != i and isinstance(meta, dict) and "state" in meta:
                rest = {k: v for k, v in meta.items() if k != "state"}
                others = {k: v for k, v in (m.metadata or {}).items() if k != META_KEY}
                out[j] = dataclasses.replace(m, metadata={**others, **({META_KEY: rest} if _meta(m) else {})} or None)
        carrier = out[i]
        mine = _meta(carrier) or {"spill_index": sess.index}
        out[i] = dataclasses.replace(carrier, metadata={**(carrier.metadata or {}), META_KEY: {**mine, "state": value}})
        return out

    # -- the steps -------------------------------------------------------------------------

    async def _compaction(self, ctx: Any, request_context: Any, messages: list[ModelMessage],
                          sess: _Session) -> tuple[list[ModelMessage], list[ModelMessage]]:
        """The history after this request's compaction, and what only this request is sent after it."""
        observed = self._observe(messages, sess)
        sent, out = await self._run_inner(ctx, request_context, messages)
        if out is messages or [id(m) for m in out] == [id(m) for m in messages]:
            return out, []
        plan, summary, held, kept_msgs, cleanup = self._plan(messages, observed, out, sent, sess)
        res = self._resolve(plan, sess, held)
        if res.action == "defer":
            return messages, []
        final = self._apply(plan, summary, cleanup, kept_msgs, sess, len(sess.guard.spills) - len(res.spills))
        return final, [] if cleanup.request_only is None else [cleanup.request_only]

    @staticmethod
    def _framework_cleanup(out: list[ModelMessage], held: Callable[[ModelMessage], bool]) -> _Cleanup:
        """``out`` as Pydantic AI will really hold it (``held``: whether a message is one of the
        history's).

        Before every model request (and again at the start of every run) Pydantic AI drops a tool
        result whose call is no longer in the history (``_drop_orphaned_tool_results``, the first
        pass of ``_clean_message_history``): a processor that compacts a tool call and keeps its
        result loses that result after the guard decided. The guard applies the same pass, with
        the framework's own function, and decides on its result: a message of the history that
        loses a part is deleted (shown whole to the summarizer, spilled, or a hole), never kept.
        What is left of it is a new message; only the last message can be one, anything else is
        refused (fail closed). Left empty, it is what Pydantic AI sends this request alone (the
        history must end with a request) and drops from the history at the next step: the guard
        sends it and does not keep it. A new message that loses parts (a summarizer's synthesized
        result for a call it was shown dangling) is new either way: what is left of it is new."""
        cleaned = _drop_orphaned_tool_results(list(out))
        if [id(m) for m in cleaned] == [id(m) for m in out]:
            return _Cleanup(out, None)
        known = {id(m) for m in out}
        remainder: ModelMessage | None = None
        for j, m in enumerate(cleaned):
            if id(m) in known:
                continue
            origin = next((o for o in out if m.parts and any(p is m.parts[0] for p in o.parts)), out[-1])
            if not held(origin):
                continue
            if j != len(cleaned) - 1:
                raise AdapterError(f"Pydantic AI would drop tool results whose calls the history processor deleted "
                                   f"from message {j} and keep its other parts: the guard cannot place a message "
                                   "rewritten inside the history. Keep each tool call with its results; nothing "
                                   "was deleted")
            remainder = m
        if not cleaned[-1].parts and id(cleaned[-1]) not in known:
            return _Cleanup(cleaned[:-1], None, cleaned[-1])
        return _Cleanup(cleaned, remainder)

    def _observe(self, messages: Sequence[ModelMessage], sess: _Session) -> _Observed:
        """Keys for the context's messages: known ones by their parts (a merged message by the
        run of known messages it holds), new ones get a fresh key; messages someone else removed
        become truncations (the tracker). A compaction the guard did not make is adopted (first
        only) or refused."""
        tracker = sess.guard.tracker
        fresh = not sess.order and sess.guard.ledger.history_end == 0
        foreign = [i for i, m in enumerate(messages) if _is_foreign_summary(m)]
        if foreign and not (fresh and foreign == [0]):
            raise AdapterError(f"the history holds a compaction the guard did not make at message {foreign[0]}"
                               + ("" if fresh else " (after the guard started)")
                               + ": only a first message can be adopted (SPEC.md section 11.4)")
        keys: list[list[str]] = []
        at = 0
        for i, m in enumerate(messages):
            digests = _parts(m)
            meta = _meta(m)
            if fresh and i == 0 and foreign == [0]:
                if self.options.on_unknown_history == "refuse":
                    raise AdapterError("the history holds a compaction the guard did not make (message 0): it "
                                       "predates the guard and is not verified (on_unknown_history='refuse'; "
                                       "'adopt' records it as unverified)")
                key = f"~adopted.{digests[0] if digests else 'empty'}"
                tracker.adopt(key, 1, reason="a compaction response (CompactionPart) made before the guard")
                sess.parts[key] = digests
                keys.append([key])
                continue
            if not m.parts and meta is None:  # holds nothing: not a unit (a summarizer's empty request)
                keys.append([])
                continue
            if meta is not None:
                key = SUMMARY_PREFIX + meta["summary"]
                if key not in sess.parts:
                    raise AdapterError(f"message {i} is a guard summary ({meta['summary']}) this session's state "
                                       "does not hold (a summary from another conversation?)")
                group = self._match_group(sess, at, digests, first=key)
            else:
                group = self._match_group(sess, at, digests)
            if group is None:
                key = f"~{hashlib.sha256(''.join(digests).encode()).hexdigest()[:24]}.{sess.serial}"
                sess.serial += 1
                sess.parts[key] = digests
                keys.append([key])
                continue
            keys.append([sess.order[j] for j in group])
            at = group[-1] + 1
        summaries = set(tracker.summaries)
        entries = [Entry(k, k in summaries, 0 if k in summaries else 1) for ks in keys for k in ks]
        tracker.observe(entries)
        listed = [k for ks in keys for k in ks]
        for k in sess.order:
            if k not in set(listed):
                sess.parts.pop(k, None)
        sess.order = listed
        return _Observed(keys)

    @staticmethod
    def _match_group(sess: _Session, at: int, digests: list[str], first: str | None = None) -> list[int] | None:
        """The run of known keys from ``at`` on whose parts together are ``digests`` (one message,
        or the messages a merge of consecutive requests joined); None when there is none."""
        order = sess.order
        want = sorted(digests)
        for start in range(at, len(order)):
            if first is not None and order[start] != first:
                continue
            got: list[str] = []
            for end in range(start, len(order)):
                got += sess.parts.get(order[end], [])
                if len(got) > len(want):
                    break
                if sorted(got) == want:
                    return list(range(start, end + 1))
            if first is not None:
                return None
        return None

    async def _run_inner(self, ctx: Any, request_context: Any,
                         messages: list[ModelMessage]) -> tuple[list[list[ModelMessage]], list[ModelMessage]]:
        """``inner`` on copies of the contexts; what the summarizer was sent, and the result."""
        sandbox_ctx = dataclasses.replace(ctx, messages=list(messages))
        sandbox = dataclasses.replace(request_context, messages=list(messages),
                                      model=_Recorder(request_context.model))
        sent: list[list[ModelMessage]] = []
        token = _recording.set(sent)
        try:
            done = await self.inner.before_model_request(sandbox_ctx, sandbox)
        finally:
            _recording.reset(token)
        out = list(done.messages)
        if [id(m) for m in out] == [id(m) for m in messages]:
            return sent, messages
        return sent, out

    def _plan(self, messages: list[ModelMessage], observed: _Observed, result: list[ModelMessage],
              sent: list[list[ModelMessage]], sess: _Session
              ) -> tuple[Plan, ModelMessage | None, dict[str, ModelMessage], list[tuple[ModelMessage, list[str]]],
                         _Cleanup]:
        """The compaction ``inner`` made (``result``), as the framework will hold it (the
        cleanup, returned): what it deleted (a message the cleanup cut included, whatever
        ``inner`` meant), what the summarizer saw whole, what it kept, and its one new message
        (the summary, or None: a plain drop)."""
        by_id = {id(m): ks for m, ks in zip(messages, observed.keys, strict=True)}
        by_parts: dict[tuple[str, ...], list[str]] = {}
        for m, ks in zip(messages, observed.keys, strict=True):
            by_parts.setdefault(tuple(_parts(m)), ks)
        cleanup = self._framework_cleanup(
            result, lambda m: bool(m.parts) and (id(m) in by_id or tuple(_parts(m)) in by_parts))
        out = cleanup.out
        kept: list[tuple[ModelMessage, list[str]]] = []
        new: list[tuple[int, ModelMessage]] = []
        for j, m in enumerate(out):
            if m is cleanup.remainder:
                continue
            if not m.parts and _meta(m) is None:  # holds nothing: kept or new, it is no unit
                kept.append((m, []))
                continue
            found = by_id.get(id(m)) or by_parts.get(tuple(_parts(m)))
            if found is None:
                new.append((j, m))
            else:
                kept.append((m, found))
        if len(new) > 1:
            raise AdapterError(f"the history processor returned {len(new)} messages the history did not hold "
                               f"(at {[j for j, _ in new]}): the guard places one summary; a message rewritten "
                               "in place is a deletion it cannot decide. Nothing was deleted")
        kept_keys = [k for _, ks in kept for k in ks]
        if len(set(kept_keys)) != len(kept_keys):
            raise AdapterError("the history processor returned a message twice; nothing was deleted")
        kept_set = set(kept_keys)
        deleted: list[str] = []
        held: dict[str, ModelMessage] = {}
        shown: list[str] = []
        seen_parts = {_part_digest(p) for batch in sent for m in batch for p in m.parts}
        haystack = "\x00".join(_part_text(p) for batch in sent for m in batch for p in m.parts)
        for m, ks in zip(messages, observed.keys, strict=True):
            gone = [k for k in ks if k not in kept_set]
            if not gone:
                continue
            if len(gone) != len(ks):
                raise AdapterError("the history processor kept part of a merged message; nothing was deleted")
            deleted += ks
            units = [k for k in ks if k not in sess.guard.tracker.summaries]
            if units:  # a merged message is held once, under its oldest unit
                held[units[0]] = m
            if new and all(_part_digest(p) in seen_parts or (_part_text(p) and _part_text(p) in haystack)
                           for p in m.parts):
                shown += ks
        summary = new[0][1] if new else None
        plan = sess.guard.tracker.plan(deleted=deleted, shown=shown, kept=kept_keys)
        return plan, summary, held, kept, cleanup

    def _resolve(self, plan: Plan, sess: _Session, held: dict[str, ModelMessage]) -> Resolution:
        tracker = sess.guard.tracker

        def payload(run: Pair) -> bytes:
            return encode_run(FRAMEWORK, sess.guard.unit, run, tracker, held, _to_json)

        return sess.guard.resolve(plan, payload)

    @staticmethod
    def _index_spills(sess: _Session, spilled: int) -> list[tuple[Pair, str]]:
        """The spills this compaction wrote (after the first ``spilled``), added to the session's
        spill index (a new index object in the store, re-read before it is named)."""
        guard = sess.guard
        fresh = guard.spills[spilled:]
        if fresh:
            assert guard.store is not None
            listed = read_index(guard.store, sess.index) if sess.index is not None else []
            data = encode_index(FRAMEWORK, guard.unit, sess.sid, [*listed, *fresh])
            sess.index = guard.store.put(data, session=sess.sid, unit=guard.unit)
            if guard.store.get(sess.index) != data:
                raise AdapterError(f"the spill index {sess.index} did not re-read to the bytes written; "
                                   "nothing was deleted")
            del guard.spills[:spilled]
        return list(fresh)

    def _apply(self, plan: Plan, summary: ModelMessage | None, cleanup: _Cleanup,
               kept: list[tuple[ModelMessage, list[str]]], sess: _Session, spilled: int) -> list[ModelMessage]:
        """Commit ``plan``: the summary gets the guard's metadata (and, a request followed by
        requests, is merged with them as the framework would); a plain drop is recorded as the
        truncation it is. What the framework's cleanup left of a cut message gets a new key (the
        tracker places it, as the newest message, at the next request)."""
        guard = sess.guard
        out = cleanup.out
        keys_of = {id(m): ks for m, ks in kept}
        if cleanup.remainder is not None:
            digests = _parts(cleanup.remainder)
            rkey = f"~{hashlib.sha256(''.join(digests).encode()).hexdigest()[:24]}.{sess.serial}"
            sess.serial += 1
            sess.parts[rkey] = digests
            keys_of[id(cleanup.remainder)] = [rkey]
        fresh = self._index_spills(sess, spilled)
        if summary is None:
            tracked = [k for m, ks in kept for k in ks]
            guard.tracker.observe([Entry(k, k in guard.tracker.summaries, 0 if k in guard.tracker.summaries else 1)
                                   for k in tracked])
            sess.order = [k for m in out for k in keys_of[id(m)]]
            for k in [k for k in sess.parts if k not in set(sess.order)]:
                del sess.parts[k]
            return out
        sid = guard.ledger.next_summary_id
        key = SUMMARY_PREFIX + sid
        at = next(j for j, m in enumerate(out) if m is summary)
        run_end = at + 1
        if isinstance(summary, ModelRequest):
            while run_end < len(out) and isinstance(out[run_end], ModelRequest):
                run_end += 1
        absorbed = [k for m in out[at + 1:run_end] for k in keys_of[id(m)]]
        merged = _merge_consecutive_messages(list(out[at:run_end]))
        if len(merged) != 1:
            raise AdapterError("Pydantic AI did not merge the summary with the requests after it; this version "
                               "is not supported")
        meta = {**(merged[0].metadata or {}), META_KEY: {
            "summary": sid, "unit": guard.unit, "spill_index": sess.index,
            "spills": [{"range": [lo, hi], "handle": h} for (lo, hi), h in fresh]}}
        carrier = dataclasses.replace(merged[0], metadata=meta)
        guard.tracker.commit(plan, key=key, summary=sid)
        final = [*out[:at], carrier, *out[run_end:]]
        before = [k for m in out[:at] for k in keys_of[id(m)]]
        after = [k for m in out[run_end:] for k in keys_of[id(m)]]
        sess.order = [*before, key, *absorbed, *after]
        sess.parts = {k: sess.parts[k] for k in sess.order if k in sess.parts}
        sess.parts[key] = _parts(summary)
        return final


def messages_from_spill(store: SpillStore, handle: str) -> list[ModelMessage]:
    """The Pydantic AI messages of a spill, as they were before they were deleted."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return list(ModelMessagesTypeAdapter.validate_python([x["item"] for x in doc["items"]]))


def spill_index(store: SpillStore, handle: str) -> list[tuple[Pair, str]]:
    """The spills a summary's spill index lists (``metadata["tailguard"]["spill_index"]``)."""
    return read_index(store, handle)
