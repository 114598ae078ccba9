"""The Semantic Kernel adapter on SK's real reducers, offline (tailguard.doctor.drivers.semantic_kernel:
SK's own ``OpenAIChatCompletion`` on a stub transport that echoes the markers it was shown).

The acceptance test of issue 29: a guarded run spills exactly what the unguarded run silently
drops (marker oracle), and the spill reads back byte-exact. Then: halt and defer leave the history
untouched; the runtime agrees with the preset (a floor within target_count is never refused,
one above it is); the state travels in the history's own serialization (a restarted process
resumes, its log audits clean); histories stay separate; adoption; failures fail closed.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("semantic_kernel", reason="install the frameworks extra (CI does)")

from semantic_kernel.contents import ChatHistorySummarizationReducer, ChatHistoryTruncationReducer, ChatMessageContent

from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.semantic_kernel import (
    KEY,
    STATE_FIELD,
    GuardedSummarizationReducer,
    GuardedTruncationReducer,
    ReducerGuard,
    messages_from_spill,
)
from tailguard.cli.main import main
from tailguard.doctor.drivers import semantic_kernel as sk
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore


def session(with_tools: bool = False) -> list[ChatMessageContent]:
    """A conversation of 16 messages (markers 0..15), with two tool rounds if asked."""
    out: list[ChatMessageContent] = []
    i = 0
    while i < 16:
        if with_tools and i in (3, 9):
            out.extend(sk.tool_round(i))
            i += 2
        else:
            out.append(sk.message(i, "user" if i % 2 == 0 else "assistant"))
            i += 1
    return out


async def feed(reducer: Any, messages: list[ChatMessageContent]) -> None:
    for m in messages:
        await reducer.add_message_async(m)


def spilled_markers(guard: ReducerGuard, sid: str) -> tuple[set[int], list[ChatMessageContent]]:
    assert guard.store is not None
    cg = guard.session_guard(sid)
    assert cg is not None
    back = [m for _, h in cg.spills for m in messages_from_spill(guard.store, h)]
    return sk.tags(back), back


def copies(messages: list[ChatMessageContent]) -> list[ChatMessageContent]:
    return [ChatMessageContent.model_validate_json(m.model_dump_json()) for m in messages]


def dumps(messages: list[ChatMessageContent]) -> list[str]:
    """Each message as SK serializes it, without the guard's key."""
    out = []
    for m in messages:
        d = m.model_dump(mode="json", exclude_none=True)
        d["metadata"] = {k: v for k, v in d.get("metadata", {}).items() if k != KEY}
        out.append(json.dumps(d, sort_keys=True))
    return out


# -- the acceptance test -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["truncation", "summarization"])
def test_a_guarded_run_spills_what_the_unguarded_run_drops(kind: str, tmp_path: Path) -> None:
    """Unguarded, SK's truncation drops the oldest messages and its summarizer (default knobs)
    deletes function calls and results unseen: markers nowhere. Guarded with on_refuse="spill",
    the same reductions happen (the same history results) and exactly those markers are in the
    spills, which read back to the messages as they were, byte for byte."""
    original = session(with_tools=kind == "summarization")
    plain_ep, guarded_ep = sk.StubEndpoint(), sk.StubEndpoint()
    guard = ReducerGuard(recovery_floor_span=2, on_refuse="spill", store=tmp_path / "spills", log=f"{tmp_path}/logs/")
    if kind == "truncation":
        plain: Any = ChatHistoryTruncationReducer(target_count=4, auto_reduce=True)
        guarded: Any = GuardedTruncationReducer(target_count=4, auto_reduce=True, guard=guard)
    else:
        plain = ChatHistorySummarizationReducer(service=plain_ep.service(), target_count=4, auto_reduce=True)
        guarded = GuardedSummarizationReducer(service=guarded_ep.service(), target_count=4, auto_reduce=True,
                                              guard=guard)
    asyncio.run(feed(plain, copies(original)))
    mine = copies(original)
    asyncio.run(feed(guarded, mine))
    dropped = set(range(16)) - sk.tags(plain.messages)
    assert dropped == (set(range(12)) if kind == "truncation" else {3, 4, 9, 10})
    assert set(range(16)) - sk.tags(guarded.messages) == dropped  # the same reductions ran
    assert [m.content for m in guarded.messages] == [m.content for m in plain.messages]
    got, back = spilled_markers(guard, guarded.session_id)
    assert dropped <= got
    by_marker = {next(iter(sk.tags([m]))): m for m in mine}
    assert dumps(back) == dumps([by_marker[next(iter(sk.tags([m])))] for m in back])
    assert guard.store is not None
    for _, handle in guard.session_guard(guarded.session_id).spills:  # type: ignore[union-attr]
        raw = guard.store.get(handle)
        assert FileSpillStore(tmp_path / "spills").get(handle) == raw  # re-read from disk, same bytes
    guard.close()
    logs = list((tmp_path / "logs").iterdir())
    assert len(logs) == 1 and main(["audit", "--profile", "partitioned", str(logs[0])], stdout=io.StringIO()) == 0


def test_a_chat_completion_agent_thread_is_guarded(tmp_path: Path) -> None:
    """SK's ChatCompletionAgent on a ChatHistoryAgentThread over a truncating history, reduced
    after each response as SK's samples do: unguarded, the oldest questions and answers are gone;
    guarded (spill), every one of them is in the spills."""
    from semantic_kernel.agents import ChatCompletionAgent, ChatHistoryAgentThread

    def run(history: Any) -> Any:
        endpoint = sk.StubEndpoint(answer_users=True)
        agent = ChatCompletionAgent(name="a", instructions="be brief", service=endpoint.service())

        async def go() -> None:
            thread = ChatHistoryAgentThread(chat_history=history)
            for i in range(0, 16, 2):
                response = await agent.get_response(messages=f"[m{i}] question", thread=thread)
                thread = response.thread
                await thread.reduce()

        asyncio.run(go())
        return history

    plain = run(ChatHistoryTruncationReducer(target_count=4))
    dropped = set(range(16)) - sk.tags(plain.messages)
    assert dropped == set(range(12))
    guard = ReducerGuard(recovery_floor_span=2, on_refuse="spill", store=tmp_path / "s")
    guarded = run(GuardedTruncationReducer(target_count=4, guard=guard))
    assert sk.tags(guarded.messages) == sk.tags(plain.messages)
    assert spilled_markers(guard, guarded.session_id)[0] == dropped


def test_halt_refuses_before_anything_leaves() -> None:
    """on_refuse="halt": the summarization that would delete a function call unseen raises,
    naming its offsets, and the history is untouched."""
    guard = ReducerGuard(recovery_floor_span=2)
    reducer = GuardedSummarizationReducer(service=sk.StubEndpoint().service(), target_count=4, guard=guard)
    for m in session(with_tools=True)[:10]:  # the first tool round falls before the cut
        reducer.add_message(m)
    before = [m.content for m in reducer.messages]
    with pytest.raises(UnrecoverableCompactionError) as err:
        asyncio.run(reducer.reduce())
    # the call and its result, [3, 5), are unseen; the seen messages before them are not next to
    # the tail, and a summary covers one range: [0, 5) is refused
    assert "no_hole" in err.value.failed and err.value.holes == ((0, 5),)
    assert [m.content for m in reducer.messages] == before


def test_defer_leaves_the_history_and_logs_the_refusal() -> None:
    log = io.StringIO()
    guard = ReducerGuard(recovery_floor_span=0, on_refuse="defer", log=log)
    reducer = GuardedTruncationReducer(target_count=2, guard=guard)
    for m in session()[:5]:
        reducer.add_message(m)
    assert asyncio.run(reducer.reduce()) is None
    assert len(reducer.messages) == 5
    assert '"event": "refusal"' in log.getvalue()


# -- runtime and config agree (brief 6d) ---------------------------------------------------------------


@pytest.mark.parametrize(("floor", "refused"), [(3, False), (4, True)])
def test_the_runtime_agrees_with_the_preset(floor: int, refused: bool) -> None:
    """A chat with a system message under ChatHistorySummarizationReducer(target_count=4) (the system
    message counts toward it): check-config calls a floor of 3 safe and of 4 unsafe; the guard
    (halt) never refuses the first and refuses the second."""
    from tests.presets.test_semantic_kernel_preset import check_config, policy_text

    knobs = "target_count = 4\nsystem_message = 1"
    verdict = check_config(policy_text("semantic_kernel.ChatHistorySummarizationReducer", knobs, floor))["verdict"]
    assert verdict == ("unsafe" if refused else "safe")
    guard = ReducerGuard(recovery_floor_span=floor)
    reducer = GuardedSummarizationReducer(service=sk.StubEndpoint().service(), target_count=4, auto_reduce=True,
                                          guard=guard, system_message="[m99] be brief")
    if refused:
        with pytest.raises(UnrecoverableCompactionError, match="floor"):
            asyncio.run(feed(reducer, session()))
    else:
        asyncio.run(feed(reducer, session()))
        assert set(range(16)) <= sk.tags(reducer.messages)  # in the summary or verbatim
        assert reducer.messages[0].content == "[m99] be brief"


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(roles=st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=24), target=st.integers(1, 5),
       threshold=st.integers(0, 2), system=st.booleans(), above=st.booleans())
def test_the_runtime_agrees_with_the_preset_on_random_chats(roles: list[str], target: int, threshold: int,
                                                            system: bool, above: bool) -> None:
    """Brief 6d: on a chat, the guard (halt) never refuses what check-config calls safe (a floor
    of target_count - system_message), and with a floor one above it refuses the first
    summarization, where check-config's floor finding is."""
    kept = target - int(system)
    floor = kept + 1 if above else max(kept, 0)
    reducer = GuardedSummarizationReducer(service=sk.StubEndpoint().service(), target_count=target,
                                          threshold_count=threshold, auto_reduce=True,
                                          guard=ReducerGuard(recovery_floor_span=floor),
                                          **({"system_message": "[m99] system"} if system else {}))
    messages = [sk.message(i, r) for i, r in enumerate(roles)]
    summarizes = len(roles) + int(system) > target + threshold
    if above and summarizes:
        with pytest.raises(UnrecoverableCompactionError, match="floor_in_tail"):
            asyncio.run(feed(reducer, messages))
        return
    asyncio.run(feed(reducer, messages))
    assert set(range(len(roles))) <= sk.tags(reducer.messages)


# -- state in SK's own serialization -----------------------------------------------------------------


def test_a_restarted_process_resumes_from_the_serialized_history(tmp_path: Path) -> None:
    """SK's serialize() carries the guard's state; resume() in a new process (a new guard, the same
    log directory) continues the session: the log gets a resume line and audits clean."""
    ep = sk.StubEndpoint()
    opts: dict[str, Any] = {"recovery_floor_span": 2, "on_refuse": "spill", "store": tmp_path / "s",
                            "log": f"{tmp_path}/logs/"}
    first = ReducerGuard(**opts)
    reducer = GuardedSummarizationReducer(service=ep.service(), target_count=3, auto_reduce=True, guard=first)
    messages = session(with_tools=True)
    asyncio.run(feed(reducer, messages[:8]))
    text = reducer.serialize()
    assert json.loads(text)[STATE_FIELD]["session"] == reducer.session_id
    first.close()

    second = ReducerGuard(**opts)
    again = GuardedSummarizationReducer.resume(text, guard=second, service=ep.service())
    asyncio.run(feed(again, messages[8:]))
    assert again.session_id == reducer.session_id
    second.close()
    (log,) = (tmp_path / "logs").iterdir()
    events = [json.loads(x)["event"] for x in log.read_text().splitlines()]
    assert "resume" in events and events.count("compact") >= 8
    assert main(["audit", "--profile", "partitioned", str(log)], stdout=io.StringIO()) == 0
    store = FileSpillStore(tmp_path / "s")
    handles = [e["handle"] for e in map(json.loads, log.read_text().splitlines()) if e["event"] == "spill"]
    got = sk.tags(m for h in handles for m in messages_from_spill(store, h))
    assert {3, 4, 9, 10} <= got  # both tool rounds (the second deleted after the restart) are spilled


def test_an_altered_state_is_refused(tmp_path: Path) -> None:
    guard = ReducerGuard(recovery_floor_span=0, on_refuse="spill", store=tmp_path / "s")
    reducer = GuardedTruncationReducer(target_count=2, auto_reduce=True, guard=guard)
    asyncio.run(feed(reducer, session()[:4]))
    data = json.loads(reducer.serialize())
    data[STATE_FIELD]["tracker"]["units"][0][1] += 1
    bad = GuardedTruncationReducer.resume(json.dumps(data), guard=guard)
    with pytest.raises(AdapterError, match="integrity"):
        asyncio.run(bad.add_message_async(sk.message(20)))
    bare = ChatHistoryTruncationReducer.restore_chat_history(reducer.serialize())
    assert not isinstance(bare, GuardedTruncationReducer)
    unguarded = GuardedTruncationReducer.restore_chat_history(reducer.serialize())
    with pytest.raises(AdapterError, match="no guard attached"):
        asyncio.run(unguarded.reduce())


def test_histories_stay_separate(tmp_path: Path) -> None:
    """One guard, two histories reduced concurrently: one log each, their own offsets."""
    guard = ReducerGuard(recovery_floor_span=1, on_refuse="spill", store=tmp_path / "s", log=f"{tmp_path}/logs/")
    a = GuardedTruncationReducer(target_count=3, auto_reduce=True, guard=guard)
    b = GuardedTruncationReducer(target_count=5, auto_reduce=True, guard=guard)

    async def both() -> None:
        await asyncio.gather(feed(a, session()), feed(b, session()[:10]))

    asyncio.run(both())
    assert a.session_id != b.session_id
    ga, gb = guard.session_guard(a.session_id), guard.session_guard(b.session_id)  # type: ignore[arg-type]
    assert ga is not None and gb is not None
    assert (ga.ledger.history_end, gb.ledger.history_end) == (16, 10)
    guard.close()
    logs = list((tmp_path / "logs").iterdir())
    assert len(logs) == 2
    assert all(main(["audit", "--profile", "partitioned", str(p)], stdout=io.StringIO()) == 0 for p in logs)


def test_concurrent_reductions_of_one_history_share_its_session(tmp_path: Path) -> None:
    """Two reduce() calls of one new history at once (the summarizer's request lets the other
    run): one reduces, the other then finds nothing to reduce, and both belong to one session
    (one log)."""
    guard = ReducerGuard(recovery_floor_span=0, on_refuse="spill", store=tmp_path / "s", log=f"{tmp_path}/logs/")
    reducer = GuardedSummarizationReducer(service=sk.StubEndpoint().service(), target_count=2, guard=guard)
    for m in session()[:6]:
        reducer.add_message(m)

    async def both() -> list[Any]:
        return list(await asyncio.gather(reducer.reduce(), reducer.reduce()))

    results = asyncio.run(both())
    assert results.count(None) == 1 and any(r is reducer for r in results)
    assert sk.raw_tags(reducer.messages) == {4, 5}
    guard.close()
    assert len(list((tmp_path / "logs").iterdir())) == 1


def test_a_history_reduced_before_the_guard_is_adopted_or_refused(tmp_path: Path) -> None:
    ep = sk.StubEndpoint()
    plain = ChatHistorySummarizationReducer(service=ep.service(), target_count=3, auto_reduce=True)
    asyncio.run(feed(plain, session()[:6]))
    text = plain.serialize()
    log = io.StringIO()
    adopt = GuardedSummarizationReducer.resume(text, guard=ReducerGuard(recovery_floor_span=2, log=log),
                                               service=ep.service())
    asyncio.run(feed(adopt, session()[6:10]))
    assert '"event": "adopt"' in log.getvalue()
    refuse = GuardedSummarizationReducer.resume(
        text, guard=ReducerGuard(recovery_floor_span=2, on_unknown_history="refuse"), service=ep.service())
    with pytest.raises(AdapterError, match="on_unknown_history='refuse'"):
        asyncio.run(refuse.add_message_async(sk.message(30)))


def test_a_failed_spill_halts_and_deletes_nothing(tmp_path: Path) -> None:
    class Broken(FileSpillStore):
        def put(self, data: bytes, **kw: Any) -> str:
            raise OSError("disk full")

    guard = ReducerGuard(recovery_floor_span=0, on_refuse="spill", store=Broken(tmp_path, create=True))
    reducer = GuardedTruncationReducer(target_count=2, guard=guard)
    for m in session()[:5]:
        reducer.add_message(m)
    with pytest.raises(UnrecoverableCompactionError, match="disk full"):
        asyncio.run(reducer.reduce())
    assert len(reducer.messages) == 5


def test_a_failing_summarizer_leaves_the_history_and_the_session_ready() -> None:
    """SK raises ChatHistoryReducerException when its service fails (fail_on_error): nothing left
    the history, and the next reduce() continues the same session."""
    from semantic_kernel.exceptions.content_exceptions import ChatHistoryReducerException

    endpoint = sk.StubEndpoint(fail=True)
    log = io.StringIO()
    reducer = GuardedSummarizationReducer(service=endpoint.service(), target_count=2,
                                          guard=ReducerGuard(recovery_floor_span=2, log=log))
    for m in session()[:5]:
        reducer.add_message(m)
    with pytest.raises(ChatHistoryReducerException):
        asyncio.run(reducer.reduce())
    assert len(reducer.messages) == 5 and reducer.session_id is not None
    endpoint.fail = False
    assert asyncio.run(reducer.reduce()) is reducer
    assert sk.raw_tags(reducer.messages) == {3, 4} and set(range(5)) <= sk.tags(reducer.messages)
    assert log.getvalue().count('"event": "session"') == 1


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="recovery_floor_span= is required"):
        ReducerGuard()
    with pytest.raises(ValueError, match="floor_unit"):
        ReducerGuard(recovery_floor_span=1, floor_unit="tokens")
    with pytest.raises(TypeError, match="guard: expected a ReducerGuard"):
        GuardedTruncationReducer(target_count=2, guard=object())  # type: ignore[arg-type]
