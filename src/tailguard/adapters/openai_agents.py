"""The guard inside the OpenAI Agents SDK's ``OpenAIResponsesCompactionSession``.

The compaction session shows ``responses.compact`` what the wrapped store's ``get_items()``
returns, which under ``SessionSettings(limit=N)`` is only the newest ``N`` items, and then
replaces the **whole** store with the compacted output. ``GuardedResponsesCompactionSession``
is a drop-in subclass (same arguments, plus ``recovery_floor_span``, ``on_refuse``, ``store``,
``log`` and ``profile``) that wraps the ``should_trigger_compaction`` hook: when the hook (yours,
or the SDK's default) approves, the guard decides that compaction before the API call and
before the store is replaced, with the whole stored history as what is deleted and the items
the hook's context says will be sent (``session_items``) as the summarizer's input. Items have
no stable ids: they get offsets by position in the store (one offset per item); a compaction
item (``type == "compaction"``) is a summary, seen whole when it is in the window.

The mode where what was compacted cannot be known is refused (decided as a compaction whose
summarizer saw nothing): ``compaction_mode="previous_response_id"`` (and ``"auto"`` when it
resolves to it): the server compacts its response chain, which the client never sees.
``force=True`` runs the guard as well. The automatic suffix replacement of native stores
(``_get_compaction_snapshot``: SQLite, SQLAlchemy) compacts the newest items and keeps the older
ones verbatim, which a retained *tail* cannot describe: the guard counts the whole store as
leaving the context (the kept older items re-enter it with new offsets), so under ``halt`` or
``defer`` it refuses with those older items as holes unless they are already covered, and under
``spill`` it spills the whole store first. That over-approximation fails closed.

The compacted output keeps no verbatim tail (user messages, then one compaction item), so a
``recovery_floor_span`` above 0 is refused with ``floor_in_tail`` on every compaction: the
default is 0, which still refuses every item deleted unseen.

The guard's options are one :class:`~tailguard.adapters._guard.GuardOptions` (``options=``), or
the keywords above, from which it is built once; giving both is a ``TypeError``. A compaction
takes the adapters' named steps: ``_observe`` (the store, at the start of the compaction run),
``_plan`` and ``_resolve`` (in the decision hook), then, once the SDK has replaced the store,
``_confirm`` and ``_apply``.

Validated with the versions in :data:`SUPPORTED` (the OpenAI Agents SDK preset's
``validated_on``). Private hooks of the SDK this module relies on:
``OpenAIResponsesCompactionSession._run_compaction_locked`` (its keyword arguments),
``RunContextWrapper._session_compaction_is_automatic`` and
``agents.run_internal.items.normalize_input_items_for_api``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    Resolution,
    StoreArg,
    Unset,
    guard_options,
    missing_framework,
)
from tailguard.adapters._offsets import AdapterError, Entry, Plan
from tailguard.adapters._spill_tool import encode_spill
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.openai_agents import PRESET

try:
    from agents.memory.openai_responses_compaction_session import (
        OpenAIResponsesCompactionSession,
        default_should_trigger_compaction,
    )
    from agents.run_internal.items import normalize_input_items_for_api
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("openai_agents", "the OpenAI Agents SDK", "openai-agents",
                                        PRESET.validated_on)) from exc

__all__ = ["SUPPORTED", "GuardedResponsesCompactionSession"]

#: The versions this adapter is validated with: the OpenAI Agents SDK preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

_ALL = 2_147_483_647


def _digest(item: Any) -> str:
    return hashlib.sha256(json.dumps(item, sort_keys=True, default=str).encode()).hexdigest()


def _is_summary(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "compaction"


@dataclass(frozen=True, slots=True)
class _Compaction:
    """One compaction run: the store as it began, whether it was forced, and once the hook
    approved it, the plan and the window (item digests) it was decided on."""

    items: list[Any]
    forced: bool
    plan: Plan | None = None
    window: list[str] | None = None


class GuardedResponsesCompactionSession(OpenAIResponsesCompactionSession):
    """``OpenAIResponsesCompactionSession`` that refuses to delete stored items unseen."""

    def __init__(
        self,
        session_id: str,
        underlying_session: Any,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        should_trigger_compaction: Callable[[dict[str, Any]], bool] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(session_id, underlying_session, should_trigger_compaction=self._tailguard_hook,
                         **kwargs)
        self._user_hook = should_trigger_compaction or default_should_trigger_compaction
        self.options = guard_options(options, "GuardedResponsesCompactionSession", {"recovery_floor_span": 0},
                                     recovery_floor_span=recovery_floor_span, on_refuse=on_refuse,
                                     store=store, log=log, profile=profile)
        self.guard = CompactionGuard(self.options, framework="openai-agents", units=("messages",),
                                     session=session_id)
        self._known: list[tuple[str, str]] = []  # (digest, key) of the store as last observed
        self._items: dict[str, Any] = {}  # key -> stored item, for spills
        self._next = 0
        self._run: _Compaction | None = None

    # -- the two points the SDK gives: the compaction run and its decision hook ----------------

    async def _run_compaction_locked(self, args: Any, *, wrapper: Any, **kwargs: Any) -> None:
        items = await self.underlying_session.get_items(limit=_ALL)
        self._observe(items)
        forced = bool(args and args.get("force"))
        if forced:
            args = {k: v for k, v in args.items() if k != "force"}
        self._run = _Compaction(items, forced)
        try:
            await super()._run_compaction_locked(args, wrapper=wrapper, **kwargs)
            run = self._run
        finally:
            self._run = None
        if run.plan is None:
            return  # not approved, or deferred: nothing was decided to be deleted
        after = await self.underlying_session.get_items(limit=_ALL)
        plan = self._confirm(run, after)
        if plan is not None:
            self._apply(run, plan, after)

    def _tailguard_hook(self, context: dict[str, Any]) -> bool:
        run = self._run
        if run is None:  # the SDK asks outside a compaction run (deferral bookkeeping)
            return bool(self._user_hook(context))
        if not run.forced and not self._user_hook(context):
            return False
        window = [_digest(x) for x in context.get("session_items", [])]
        if run.plan is not None and run.window == window:
            return True  # asked again about the same compaction: already decided
        plan = self._plan(context, window)
        if self._resolve(plan).action == "defer":
            return False
        self._run = dataclasses.replace(run, plan=plan, window=window)
        return True

    # -- the steps ------------------------------------------------------------------------

    def _observe(self, items: list[Any]) -> None:
        """Offsets by position in the store: items appended get new ones, items popped off the
        end become truncations; any other change fails closed."""
        norm = normalize_input_items_for_api(list(items))
        digests = [_digest(x) for x in norm]
        known = [d for d, _ in self._known]
        if digests[:len(known)] == known:
            keep = list(self._known)
        elif known[:len(digests)] == digests:
            keep = self._known[:len(digests)]  # items popped off the end: the tracker records it
        else:
            raise AdapterError("the stored history changed other than by appending or popping items; "
                               "the guard cannot follow it (nothing was recorded)")
        for item, d in zip(items[len(keep):], digests[len(keep):], strict=True):
            if _is_summary(item):
                raise AdapterError("a compaction item the guard did not record appeared in the store")
            key = f"item-{self._next}"
            self._next += 1
            keep.append((d, key))
            self._items[key] = item
        self._known = keep
        self._sync()

    def _plan(self, context: dict[str, Any], window: list[str]) -> Plan:
        """The compaction deleting the whole store, its summarizer shown the hook's ``session_items``
        (``window``, their digests): the items wholly inside it are seen."""
        keys = list(dict.fromkeys(k for _, k in self._known))
        shown: list[str] = []
        if context.get("compaction_mode") != "previous_response_id":
            tail = self._known[len(self._known) - len(window):] if window else []
            if [d for d, _ in tail] == window:
                counts = {k: sum(1 for _, x in self._known if x == k) for _, k in tail}
                shown = [k for k in counts if counts[k] == sum(1 for _, x in tail if x == k)]
        return self.guard.tracker.plan(deleted=keys, shown=shown, kept=[])

    def _resolve(self, plan: Plan) -> Resolution:
        return self.guard.resolve(plan, self._payload)

    def _confirm(self, run: _Compaction, after: list[Any]) -> Plan | None:
        """The plan to commit, or None when the SDK skipped the compaction after approving it."""
        return None if after == run.items else run.plan

    def _apply(self, run: _Compaction, plan: Plan, after: list[Any]) -> None:
        """Commit ``plan``; the store as the SDK left it is the context from now on."""
        items = run.items
        sid = self.guard.ledger.next_summary_id
        self.guard.tracker.commit(plan, key=f"summary-{sid}", summary=sid)
        for key in plan.deleted_keys:
            self._items.pop(key, None)
        # What stayed at the front (the automatic suffix replacement keeps older items) re-enters
        # with new offsets; the compacted output (user messages, then the compaction item) is the
        # new summary, one block: it counts as seen only when all of it is shown.
        kept = 0
        while kept < min(len(items), len(after)) and after[kept] == items[kept]:
            kept += 1
        fresh: list[tuple[str, str]] = []
        digests = [_digest(x) for x in normalize_input_items_for_api(list(after))]
        for i, (item, d) in enumerate(zip(after, digests, strict=True)):
            if i >= kept:
                fresh.append((d, f"summary-{sid}"))
                continue
            key = f"item-{self._next}"
            self._next += 1
            fresh.append((d, key))
            self._items[key] = item
        self._known = fresh
        self._sync()

    # -- helpers --------------------------------------------------------------------------

    def _sync(self) -> None:
        entries: list[Entry] = []
        listed: set[str] = set()
        for _, k in self._known:
            if k not in listed:
                listed.add(k)
                entries.append(Entry(k, k.startswith("summary-"), 0 if k.startswith("summary-") else 1))
        self.guard.tracker.observe(entries)

    def _payload(self, run: Pair) -> bytes:
        tracker = self.guard.tracker
        items = []
        for key, item in self._items.items():
            lo, hi = tracker.interval(key)
            if run[0] <= lo and hi <= run[1]:
                items.append(((lo, hi), key, item))
        items.sort(key=lambda x: x[0])
        return encode_spill("openai-agents", self.guard.unit, run, items)
