"""Semantic Kernel's chat history reducers against the two Semantic Kernel presets, and the adapter
(``GuardedTruncationReducer``, ``GuardedSummarizationReducer``) on the same chats.

SK runs as installed: ``ChatHistoryTruncationReducer`` and ``ChatHistorySummarizationReducer``
with ``auto_reduce``. SK ships no fake chat model, so the summarizer is SK's own
``OpenAIChatCompletion`` on an ``AsyncOpenAI`` client whose HTTP transport is an
``httpx.MockTransport`` (:class:`StubEndpoint`): it records every request and answers with a
summary that echoes every marker (``[m<i>]``) the request held, so a marker is recoverable when
it is in the history or in a summary there (which echoes the earlier summary it was shown).
Every message carries a unique marker; function calls carry theirs in the arguments, results in
the result.

A chat session appends one message a turn (marker ``[m<i>]`` = turn ``i``; with a system message,
turn 0 is it). After every append :func:`compare` compares what SK deleted, what its
summarizer's request held and what stayed with the preset's model stepped turn by turn; then the
marker oracle: a marker in neither the final history nor a summary there is lost, and the model
must name it. Declared differences, as declared: ``threshold_window`` (exact with
``threshold_count = 0``; with a threshold SK keeps a superset of the model's tail and the model
is resynchronized; a truncation's first loss is at the same append, and SK has deleted whatever
the model dropped) and ``summaries_accumulate`` (checked: no summary leaves, none is shown).
A *compaction* is an append at which SK deleted something.

The adapter runs the same chats with the guarded reducer (``on_refuse="halt"``, no store, so a
truncation, which shows nothing, is refused): it must refuse at the append where the preset's
model (at the guard's floor) finds its first hole or floor finding, and allow every reduction of a
chat where the model finds none.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import io
import json
import random
import re
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from openai import AsyncOpenAI
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
from semantic_kernel.contents import (
    AuthorRole,
    ChatHistorySummarizationReducer,
    ChatHistoryTruncationReducer,
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
)

from tailguard.adapters.semantic_kernel import GuardedSummarizationReducer, GuardedTruncationReducer, ReducerGuard
from tailguard.doctor.harness import Case, Mismatch, ModelRun, Turn
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.semantic_kernel import SUMMARIZATION, TRUNCATION
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["SUMMARIZATION", "TAG", "TRUNCATION", "Chat", "StubEndpoint", "adapter_agrees", "cases", "compare",
           "knob_text", "message", "model_first_finding", "policy", "random_chat", "raw_tags", "run", "run_sk",
           "tags", "tool_round"]

TAG = re.compile(r"\[m(\d+)\]")
T = TypeVar("T")


# -- SK offline: its connector on a stub transport ---------------------------------------------------


@dataclass
class StubEndpoint:
    """The chat completions endpoint: records each request's messages, echoes their markers."""

    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    fail: bool = False
    #: answer a request whose last message is a user's with ``[m<i+1>]`` (its marker ``[m<i>]``):
    #: an agent's reply, not a summary (which echoes)
    answer_users: bool = False

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body["messages"])
        if self.fail:
            return httpx.Response(500, json={"error": {"message": "stub failure"}})
        found = sorted({int(t) for t in TAG.findall(json.dumps(body["messages"]))})
        text = "SUMMARY " + " ".join(f"[m{t}]" for t in found)
        last = body["messages"][-1]
        asked = TAG.findall(json.dumps(last.get("content")))
        if self.answer_users and last.get("role") == "user" and asked:
            text = f"[m{int(asked[0]) + 1}] answer"
        return httpx.Response(200, json={
            "id": f"stub-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def shown(self, k: int = -1) -> set[int]:
        """The markers request ``k`` showed the summarizer."""
        return {int(t) for t in TAG.findall(json.dumps(self.requests[k]))}

    def service(self) -> OpenAIChatCompletion:
        transport = httpx.AsyncClient(transport=httpx.MockTransport(self.handle))
        client = AsyncOpenAI(api_key="stub", base_url="http://stub.invalid/v1", max_retries=0,
                             http_client=transport)  # type: ignore[arg-type]
        return OpenAIChatCompletion(ai_model_id="stub", async_client=client)


def message(i: int, role: str = "user") -> ChatMessageContent:
    """A chat message with marker ``[m<i>]``."""
    roles = {"user": AuthorRole.USER, "assistant": AuthorRole.ASSISTANT, "system": AuthorRole.SYSTEM}
    return ChatMessageContent(role=roles[role], content=f"[m{i}] message {i}")


def tool_round(i: int) -> list[ChatMessageContent]:
    """An assistant function call (marker ``[m<i>]`` in its arguments) and its result (``[m<i+1>]``)."""
    call = ChatMessageContent(role=AuthorRole.ASSISTANT, items=[
        FunctionCallContent(id=f"call{i}", name="probe", arguments=json.dumps({"q": f"[m{i}]"}))])
    result = ChatMessageContent(role=AuthorRole.TOOL, items=[
        FunctionResultContent(id=f"call{i}", name="probe", result=f"[m{i + 1}] result")])
    return [call, result]


def tags(messages: Iterable[ChatMessageContent]) -> set[int]:
    """Every marker the messages hold (text, call arguments, results, summaries)."""
    return {int(t) for m in messages for t in TAG.findall(m.model_dump_json())}


def raw_tags(messages: Iterable[ChatMessageContent]) -> set[int]:
    """The markers of the messages that are not summaries."""
    return tags(m for m in messages if not m.metadata.get("__summary__"))


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# -- the preset's model ------------------------------------------------------------------------------


def policy(framework: str, knobs: str, *, floor: int = 0, mpt: tuple[int, int] = (1, 1)) -> Policy:
    """The translated policy of preset ``framework`` with ``knobs`` (TOML lines of ``[framework]``)."""
    text = (f'name = "differential"\nturn_tokens = [1, 10]\nmessages_per_turn = [{mpt[0]}, {mpt[1]}]\n'
            f'floor = {floor}\nfloor_unit = "messages"\n[framework]\nname = "{framework}"\n{knobs}\n')
    return parse_policy(text, "differential.toml")


def knob_text(target: int, threshold: int, system: bool, single: bool | None = None) -> str:
    out = f"target_count = {target}\nthreshold_count = {threshold}\nsystem_message = {int(system)}\n"
    return out + ("" if single is None else f"use_single_summary = {str(single).lower()}\n")


@dataclass(frozen=True)
class Chat:
    """A reducer (``truncation`` or ``summarization``), its knobs and a chat (the roles of its
    messages, the system message not included)."""

    kind: str
    roles: tuple[str, ...]
    target: int
    threshold: int = 0
    system: bool = False
    single: bool = True

    def all_roles(self) -> list[str]:
        return ["system", *self.roles] if self.system else list(self.roles)

    def policy(self, floor: int = 0) -> Policy:
        if self.kind == "truncation":
            return policy(TRUNCATION, knob_text(self.target, self.threshold, self.system), floor=floor)
        return policy(SUMMARIZATION, knob_text(self.target, self.threshold, self.system, self.single), floor=floor)

    def label(self, floor: int | None = None) -> str:
        knobs = f"target_count={self.target}, threshold_count={self.threshold}"
        knobs += "" if self.kind == "truncation" else f", use_single_summary={self.single}"
        where = f", floor {floor}" if floor is not None else ""
        return (f"{self.kind} ({knobs}){where}, {len(self.roles)} messages"
                f"{' after a system message' if self.system else ''}")


def model_first_finding(pol: Policy, turns: int) -> int | None:
    """The first append (0-based, one message each) at which the preset's model finds a hole or a
    floor finding."""
    sim = ModelRun(pol)
    for i in range(turns):
        if any(k.startswith(("hole:", "floor:")) for k in sim.append(Turn("human", (1,)))[1]):
            return i
    return None


# -- the comparison (returns the real compactions compared, raises Mismatch) --------------------------


async def run_sk(reducer: Any, roles: Sequence[str], endpoint: StubEndpoint) -> list[dict[str, Any]]:
    """Append each message with auto_reduce; per append: what SK deleted, showed, kept."""
    out: list[dict[str, Any]] = []
    for i, role in enumerate(roles):
        before = raw_tags(reducer.messages) | {i}
        calls = len(endpoint.requests)
        await reducer.add_message_async(message(i, role))
        after = raw_tags(reducer.messages)
        summarized = len(endpoint.requests) > calls
        shown = endpoint.shown() & before if summarized else set()
        summary_shown = summarized and "SUMMARY" in json.dumps(endpoint.requests[-1])
        out.append({"deleted": sorted(before - after), "shown": sorted(shown), "kept": sorted(after),
                    "summarized": summarized, "summary_shown": summary_shown,
                    "summaries": sum(1 for m in reducer.messages if m.metadata.get("__summary__"))})
    return out


def compare(kind: str, roles: Sequence[str], target: int, threshold: int, system: bool,
            single: bool = True, *, sim_keep: int | None = None) -> int:
    """Drive SK and the model over one chat; raise :class:`Mismatch` on a difference the preset
    does not declare. Returns the number of reductions compared. ``sim_keep``: a deliberately
    wrong translation (the model's limit or keep replaced), for the tests that the check fails."""
    roles = ["system", *roles] if system else list(roles)
    endpoint = StubEndpoint()
    if kind == "truncation":
        reducer: Any = ChatHistoryTruncationReducer(target_count=target, threshold_count=threshold, auto_reduce=True)
        sim = ModelRun(policy(TRUNCATION, knob_text(target, threshold, system)))
    else:
        reducer = ChatHistorySummarizationReducer(service=endpoint.service(), target_count=target,
                                                  threshold_count=threshold, auto_reduce=True,
                                                  use_single_summary=single)
        sim = ModelRun(policy(SUMMARIZATION, knob_text(target, threshold, system, single)))
    if sim_keep is not None:
        stage: Any = sim.policy.stages[0]
        wrong = {"limit" if kind == "truncation" else "keep": sim_keep}
        sim.policy = dataclasses.replace(sim.policy, stages=(dataclasses.replace(stage, **wrong),))
    real = run(run_sk(reducer, roles, endpoint))
    pinned = {0} if system else set()
    where = f"(roles {roles}, target {target}, threshold {threshold}, single {single})"
    compared = 0
    model_dropped: set[int] = set()
    sk_deleted: set[int] = set()
    for i, got in enumerate(real):
        verbatim_before = set(sim.state.verbatim)
        predicted, kinds = sim.append(Turn("human", (1,)))
        dropped = (verbatim_before | {i}) - set(sim.state.verbatim) - set(sim.state.pinned)
        model_dropped |= dropped
        sk_deleted |= set(got["deleted"])
        at = compared + 1
        if got["summaries"] > 1 and (single or system):
            raise Mismatch(f"append {i} {where}: {got['summaries']} summaries with a single summary", at)
        if kind == "truncation":
            if got["summarized"] or predicted is not None:
                raise Mismatch(f"append {i} {where}: a truncation summarized", at)
            if threshold == 0 and sorted(dropped) != got["deleted"]:
                raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']}, the model dropped {sorted(dropped)}",
                               at)
            # threshold_window: SK cuts to target_count in one go, the stage one message at a time:
            # the first loss at the same append, and SK has deleted whatever the model dropped
            if not model_dropped <= sk_deleted or bool(sk_deleted) != bool(model_dropped):
                raise Mismatch(f"append {i} {where}: SK deleted {sorted(sk_deleted)} so far, the model dropped "
                               f"{sorted(model_dropped)}", at)
            if threshold == 0 and not any(k.startswith("hole:") for k in kinds) and got["deleted"]:
                raise Mismatch(f"append {i} {where}: SK lost {got['deleted']} and the model found no hole", at)
            compared += bool(got["deleted"])
            continue
        skipped = threshold > 0 and predicted is not None and not got["deleted"]
        if (predicted is None) != (not got["deleted"]) and not skipped:
            raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']}, the model "
                           f"{predicted and predicted.deleted}", at)
        if predicted is None:
            continue
        if skipped:  # threshold_window: SK's cut moved back to a user message with nothing before it to
            # summarize (no reduction, every message kept: a superset); continue from SK's state
            kept = sorted(set(got["kept"]) - pinned)
            sim.resync(kept, set(range(i + 1)) - set(kept) - pinned)
            continue
        if got["shown"] != got["deleted"]:  # a chat: everything that leaves is shown
            raise Mismatch(f"append {i} {where}: SK showed {got['shown']} of {got['deleted']}", at)
        kept = sorted(set(got["kept"]) - pinned)
        if threshold == 0:
            if (tuple(got["deleted"]), tuple(got["shown"]), tuple(kept)) != (
                    predicted.deleted, predicted.shown, predicted.kept):
                raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']}, showed {got['shown']}, kept "
                               f"{kept}; the model deleted {predicted.deleted}, showed {predicted.shown}, kept "
                               f"{predicted.kept}", at)
        else:  # threshold_window: SK keeps a superset, never less; continue from SK's state
            if not set(got["deleted"]) <= set(predicted.deleted) or not set(predicted.kept) <= set(kept):
                raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']} kept {kept}; the model deleted "
                               f"{predicted.deleted} kept {predicted.kept}", at)
            sim.resync(kept, set(range(i + 1)) - set(kept) - pinned)
        earlier = predicted.summary_shown  # None: no earlier summary, or summary = "separate"
        if earlier is not None and got["summary_shown"] is not earlier:
            raise Mismatch(f"append {i} {where}: earlier summary shown: SK {got['summary_shown']}, model {earlier}", at)
        if not single and not system and got["summary_shown"]:
            raise Mismatch(f"append {i} {where}: use_single_summary=false showed an earlier summary", at)
        compared += 1
    lost = set(range(len(roles))) - tags(reducer.messages)
    expected = model_dropped if kind == "truncation" else set()
    if kind == "truncation" and threshold > 0:
        expected = sk_deleted  # threshold_window: the model drops one at a time, SK in batches
    if lost != expected:
        raise Mismatch(f"{where}: markers lost on SK {sorted(lost)}, the model's holes {sorted(expected)}", compared)
    return compared


def compare_chat(chat: Chat) -> int:
    return compare(chat.kind, chat.roles, chat.target, chat.threshold, chat.system, chat.single)


# -- the adapter -------------------------------------------------------------------------------------


async def _guarded(chat: Chat, floor: int) -> tuple[int, int | None]:
    """The chat fed to the guarded reducer (halt, no store); (reductions allowed, the append refused)."""
    guard = ReducerGuard(recovery_floor_span=floor, on_refuse="halt", log=io.StringIO())
    reducer: Any
    if chat.kind == "truncation":
        reducer = GuardedTruncationReducer(target_count=chat.target, threshold_count=chat.threshold,
                                           auto_reduce=True, guard=guard)
    else:
        reducer = GuardedSummarizationReducer(service=StubEndpoint().service(), target_count=chat.target,
                                              threshold_count=chat.threshold, auto_reduce=True,
                                              use_single_summary=chat.single, guard=guard)
    allowed = 0
    try:
        for i, role in enumerate(chat.all_roles()):
            before = raw_tags(reducer.messages) | {i}
            try:
                await reducer.add_message_async(message(i, role))
            except UnrecoverableCompactionError:
                return allowed, i
            allowed += bool(before - raw_tags(reducer.messages))  # a reduction deleted something
        return allowed, None
    finally:
        guard.close()


def adapter_agrees(chat: Chat, floor: int = 0, *, must_refuse: bool = False) -> int:
    """The guarded reducer (``recovery_floor_span=floor``, halt) over ``chat``: it refuses at the
    append where the preset's model (at ``floor``) finds its first hole or floor finding, and
    allows every reduction before it (all of them where the model finds none). Returns the
    reductions it allowed."""
    found = model_first_finding(chat.policy(floor), len(chat.all_roles()))
    allowed, refused = run(_guarded(chat, floor))
    if must_refuse and refused is None:
        raise Mismatch(f"the adapter refused none of the {len(chat.all_roles())} appends ({allowed} reductions ran) "
                       f"of a chat where the preset's model finds a hole at append {found}", allowed)
    if refused != found:
        raise Mismatch(f"the adapter refused append {refused}, the preset's model finds its first hole or floor "
                       f"finding at append {found}", allowed + 1)
    return allowed


# -- doctor's cases ----------------------------------------------------------------------------------

#: 20 messages, user and assistant in turn: each reducer reduces it many times (16 summarizations
#: at target_count 4, 17 truncations with the system message)
FIXED_CHAT = ("user", "assistant") * 10
FIXED: tuple[Chat, ...] = (
    Chat("summarization", FIXED_CHAT, 4), Chat("summarization", FIXED_CHAT, 3, 2, single=False),
    Chat("truncation", FIXED_CHAT, 4, system=True), Chat("truncation", FIXED_CHAT, 4, 3))


def random_chat(rng: random.Random, kind: str, max_messages: int = 30) -> Chat:
    """A chat and knobs as the differential tests draw them (tests/presets/test_semantic_kernel_preset.py)."""
    roles = tuple(rng.choice(("user", "assistant")) for _ in range(rng.randint(1, max_messages)))
    return Chat(kind, roles, rng.randint(1, 6), rng.choice((0, 0, 1, 2, 3)), rng.random() < 0.5, rng.random() < 0.5)


def _fixed() -> int:
    """The fixed chat through both reducers, with and without a threshold: every run reduces."""
    total = 0
    for chat in FIXED:
        compared = compare_chat(chat)
        if not compared:
            raise Mismatch(f"the fixed chat reduced nothing on {chat.label()}: the check would be vacuous")
        total += compared
    return total


def cases(rng: random.Random, sessions: int) -> list[Case]:
    fixed = "; ".join(c.label() for c in FIXED)
    out = [Case("preset", f"the fixed chat: {fixed}", _fixed)]
    for i in range(sessions - 1):
        chat = random_chat(rng, ("summarization", "truncation")[i % 2])
        out.append(Case("preset", chat.label(), functools.partial(compare_chat, chat)))
    lossy = Chat("truncation", FIXED_CHAT, 4)  # every truncation deletes what no summary holds
    safe = Chat("summarization", FIXED_CHAT, 4, system=True)  # floor target_count - 1: nothing found
    out.append(Case("adapter", lossy.label(0), lambda: adapter_agrees(lossy, 0, must_refuse=True)))
    out.append(Case("adapter", safe.label(3), lambda: adapter_agrees(safe, 3)))
    chat = random_chat(rng, rng.choice(("summarization", "truncation")))
    floor = 0 if chat.kind == "truncation" else chat.target - int(chat.system)
    out.append(Case("adapter", chat.label(floor), functools.partial(adapter_agrees, chat, floor)))
    return out
