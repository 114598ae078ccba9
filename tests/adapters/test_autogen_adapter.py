"""GuardedChatCompletionContext on AutoGen's real AssistantAgent, with a marker oracle.

AutoGen runs as installed: ``AssistantAgent`` from autogen-agentchat on autogen_ext's
``ReplayChatCompletionClient`` (the package's own test client: it replays scripted answers and
records every request in ``create_calls``), around the real contexts of autogen-core. Every task
and every answer carries a marker ``[u<i>]`` / ``[a<i>]``; the model's requests are what it ever
saw. A marker that is neither in the model's last request nor in a spill is lost: the stored
messages stay in ``save_state()``, but the model is never shown them again.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("autogen_agentchat", reason="install the frameworks extra (CI does)")
    pytest.importorskip("autogen_ext.models.replay", reason="install the frameworks extra (CI does)")

from autogen_agentchat.agents import AssistantAgent
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from autogen_core.models import UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.autogen import STATE_KEY, GuardedChatCompletionContext, messages_from_spill
from tailguard.cli.main import main
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore

MARK = re.compile(r"\[[ua]\d+\]")


def agent(context: ChatCompletionContext, answers: int = 40, name: str = "assistant", first: int = 0) -> AssistantAgent:
    """An AssistantAgent on the replay client; its answers are numbered from ``first``."""
    client = ReplayChatCompletionClient([f"answer [a{i}] " + "w " * 5 for i in range(first, first + answers)])
    return AssistantAgent(name, model_client=client, model_context=context)


def markers(messages: Sequence[Any]) -> set[str]:
    return {m for x in messages if isinstance(x.content, str) for m in MARK.findall(x.content)}


async def play(a: AssistantAgent, tasks: range) -> None:
    for i in tasks:
        await a.run(task=f"task [u{i}] " + "w " * 5)


def seen_last(a: AssistantAgent) -> set[str]:
    """The markers of the model's next request: what the context shows it after the run."""
    return markers(asyncio.run(a.model_context.get_messages()))


def requested(a: AssistantAgent) -> set[str]:
    """The markers of every request the model was sent (the replay client records them)."""
    client = a._model_client
    assert isinstance(client, ReplayChatCompletionClient)
    return {m for call in client.create_calls for m in markers(call["messages"])}


def sent(tasks: int) -> set[str]:
    return {f"[u{i}]" for i in range(tasks)} | {f"[a{i}]" for i in range(tasks)}


def spilled(ctx: GuardedChatCompletionContext, store: FileSpillStore) -> list[Any]:
    assert ctx.guard is not None
    return [m for _, handle in ctx.guard.spills for m in messages_from_spill(store, handle)]


CONTEXTS = {
    "buffered": lambda: BufferedChatCompletionContext(buffer_size=4),
    "head_and_tail": lambda: HeadAndTailChatCompletionContext(head_size=2, tail_size=3),
    "token_limited": lambda: TokenLimitedChatCompletionContext(ReplayChatCompletionClient(["x"]), token_limit=30),
}


@pytest.mark.parametrize("kind", sorted(CONTEXTS))
def test_unguarded_loses_guarded_spill_recovers_byte_exact(kind: str, tmp_path: Path) -> None:
    """The acceptance test of issue 29: the unguarded agent silently drops markers from the model's
    view; the guarded one spills exactly those, and the spills read back byte-exact."""
    tasks = 8
    plain = agent(CONTEXTS[kind]())
    asyncio.run(play(plain, range(tasks)))
    lost = sent(tasks) - seen_last(plain)
    assert lost, "the unguarded context drops nothing: the test cannot fail"
    assert lost - {f"[a{tasks - 1}]"} <= requested(plain)  # the model saw them once, then never again
    stored = asyncio.run(plain.save_state())["llm_context"]["messages"]
    assert markers([UserMessage(content=m["content"], source="x") for m in stored]) == sent(tasks)  # state keeps all

    store = FileSpillStore(tmp_path / "spills", create=True)
    ctx = GuardedChatCompletionContext(CONTEXTS[kind](), recovery_floor_span=2, on_refuse="spill", store=store)
    guarded = agent(ctx)
    asyncio.run(play(guarded, range(tasks)))
    assert seen_last(guarded) == seen_last(plain)  # the same view: the guard changes nothing the model sees
    back = spilled(ctx, store)
    assert markers(back) == lost  # every marker the view dropped is in a spill, and only those
    assert sent(tasks) - seen_last(guarded) - markers(back) == set()  # nothing is lost
    originals = {m.model_dump_json() for m in ctx.inner._messages}
    assert {m.model_dump_json() for m in back} <= originals  # byte-exact: the messages as stored
    for _, handle in ctx.guard.spills:  # type: ignore[union-attr]
        data = store.get(handle)
        assert json.loads(data)["framework"] == "autogen"


def test_halt_names_the_evicted_range_and_the_agent_run_fails() -> None:
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=2)
    a = agent(ctx)
    asyncio.run(play(a, range(2)))  # 4 messages: the view holds them all
    with pytest.raises(UnrecoverableCompactionError) as info:
        asyncio.run(play(a, range(2, 3)))
    assert info.value.holes == ((0, 1),) and "[0, 1)" in str(info.value)
    assert ctx.guard is not None and ctx.guard.ledger.refusals == 1


def test_defer_shows_the_model_what_the_context_would_drop() -> None:
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=2,
                                       on_refuse="defer")
    a = agent(ctx)
    asyncio.run(play(a, range(6)))
    assert seen_last(a) >= sent(5) | {"[u5]"}  # nothing left the view
    assert ctx.guard is not None and ctx.guard.ledger.refusals >= 1


def test_a_floor_the_context_cannot_keep_halts_even_when_spilling(tmp_path: Path) -> None:
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=2), recovery_floor_span=4,
                                       on_refuse="spill", store=tmp_path / "s")
    a = agent(ctx)
    asyncio.run(play(a, range(1)))
    with pytest.raises(UnrecoverableCompactionError, match="floor"):
        asyncio.run(play(a, range(1, 2)))


@pytest.mark.parametrize(("span", "refused"), [(4, False), (5, True)])
def test_the_floor_boundary(span: int, refused: bool, tmp_path: Path) -> None:
    """A buffer of 4 keeps a floor of 4 messages (spilling what leaves), never one of 5."""
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=span,
                                       on_refuse="spill", store=tmp_path / "s")
    a = agent(ctx)
    if refused:
        with pytest.raises(UnrecoverableCompactionError, match="inside the floor"):
            asyncio.run(play(a, range(6)))
    else:
        asyncio.run(play(a, range(6)))
        assert ctx.guard is not None and ctx.guard.spills


def test_the_state_rides_in_save_state_and_a_restart_resumes(tmp_path: Path) -> None:
    """AutoGen's own persistence: ``AssistantAgent.save_state`` keeps the guard state in
    ``llm_context``; a new process (a new agent and guard) loads it, continues the same ledger and
    log (a ``resume`` line), and the audit of the one log is clean."""
    logs, store = tmp_path / "logs", FileSpillStore(tmp_path / "spills", create=True)
    logs.mkdir()

    def build(first: int) -> tuple[AssistantAgent, GuardedChatCompletionContext]:
        ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=2,
                                           on_refuse="spill", store=store, log=logs)
        return agent(ctx, first=first), ctx

    first, ctx1 = build(0)
    asyncio.run(play(first, range(5)))
    saved = json.loads(json.dumps(asyncio.run(first.save_state())))  # through JSON, as a store keeps it
    value = saved["llm_context"][STATE_KEY]
    assert value["session"] == ctx1.session_id and value["format"] == "tailguard.autogen"
    ctx1.close()

    second, ctx2 = build(5)
    asyncio.run(second.load_state(saved))
    assert ctx2.session_id == ctx1.session_id
    asyncio.run(play(second, range(5, 9)))
    last = seen_last(second)
    assert ctx2.guard is not None and ctx2.guard.ledger.history_end == 18
    back = [m for _, h in ctx2.guard.spills for m in messages_from_spill(store, h)]
    spilled_before = {f"[{k}{i}]" for i in range(3) for k in "ua"} - {"[a2]"}
    assert markers(back) | spilled_before | last >= sent(9)
    ctx2.close()
    (log,) = list(logs.iterdir())
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["event"] for x in lines].count("resume") == 1 and lines[0]["session_id"] == ctx1.session_id
    truncated = [tuple(x["range"]) for x in lines if x["event"] == "truncate"]
    spills = [tuple(x["range"]) for x in lines if x["event"] == "spill"]
    assert truncated == spills  # each message recorded once, when it left the view
    assert main(["audit", str(log)], stdout=io.StringIO(), stderr=io.StringIO()) == 0


def test_a_state_that_does_not_match_the_messages_is_refused(tmp_path: Path) -> None:
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=2,
                                       on_refuse="spill", store=tmp_path / "s")
    a = agent(ctx)
    asyncio.run(play(a, range(3)))
    saved = json.loads(json.dumps(asyncio.run(a.save_state())))
    altered = json.loads(json.dumps(saved))
    altered["llm_context"]["messages"][0]["content"] = "task [u9] forged"
    other, octx = agent(GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4),
                                                     recovery_floor_span=2, on_refuse="spill",
                                                     store=tmp_path / "s")), None
    del octx
    asyncio.run(other.load_state(altered))
    with pytest.raises(AdapterError, match="not the ones its guard state was saved with"):
        asyncio.run(play(other, range(3, 4)))
    tampered = json.loads(json.dumps(saved))
    tampered["llm_context"][STATE_KEY]["settled"] = []
    fresh = agent(GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=2))
    with pytest.raises(AdapterError, match="integrity"):
        asyncio.run(fresh.load_state(tampered))


def test_parallel_agents_keep_separate_sessions(tmp_path: Path) -> None:
    """Two agents, one options value, one log directory: two sessions, two logs, interleaved."""
    from tailguard.adapters import GuardOptions

    (tmp_path / "logs").mkdir()
    opts = GuardOptions(recovery_floor_span=2, on_refuse="spill", store=tmp_path / "s", log=tmp_path / "logs")
    c1 = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), session_id="alice", options=opts)
    c2 = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=6), session_id="bob", options=opts)
    a1, a2 = agent(c1, name="a1"), agent(c2, name="a2")

    async def both() -> None:
        await asyncio.gather(play(a1, range(6)), play(a2, range(4)))

    asyncio.run(both())
    assert c1.guard is not None and c2.guard is not None
    # at each agent's last model call: 11 and 7 messages stored, views of the last 4 and 6
    assert (c1.guard.ledger.history_end, c2.guard.ledger.history_end) == (11, 7)
    assert [r for r, _ in c1.guard.spills][-1][1] == 7 and [r for r, _ in c2.guard.spills] == [(0, 1)]
    names = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert len(names) == 2 and names[0].endswith("-alice.jsonl") != names[1].endswith("-alice.jsonl")


def test_a_session_that_ran_unguarded_is_adopted_or_refused(tmp_path: Path) -> None:
    plain = agent(BufferedChatCompletionContext(buffer_size=4))
    asyncio.run(play(plain, range(4)))  # 8 messages, [0, 4) already out of the view
    saved = asyncio.run(plain.save_state())
    log = io.StringIO()
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=2,
                                       on_refuse="spill", store=tmp_path / "s", log=log)
    adopted = agent(ctx)
    asyncio.run(adopted.load_state(saved))
    asyncio.run(play(adopted, range(4, 6)))
    first = [json.loads(x) for x in log.getvalue().splitlines()][1]
    # the guard first meets the session at the next model call ([u4] stored): [0, 5) is out of the view
    assert first["event"] == "adopt" and first["range"] == [0, 5]
    assert ctx.guard is not None and ctx.guard.ledger.unverified == ((0, 5),)
    assert [r for r, _ in ctx.guard.spills] == [(5, 7)]  # what left after adoption is spilled

    refusing = agent(GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4),
                                                  recovery_floor_span=2, on_unknown_history="refuse"))
    asyncio.run(refusing.load_state(saved))
    with pytest.raises(AdapterError, match="before the guard came"):
        asyncio.run(play(refusing, range(4, 5)))


def test_reset_starts_a_new_session() -> None:
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=4), recovery_floor_span=2,
                                       session_id="s")
    a = agent(ctx)
    asyncio.run(play(a, range(2)))
    asyncio.run(a.on_reset(None))  # type: ignore[arg-type]
    assert ctx.guard is None and ctx.session_id == "s:reset1"
    asyncio.run(play(a, range(2, 4)))
    assert ctx.guard is not None and ctx.guard.ledger.history_end == 3  # the last answer comes after the call


def test_unbounded_is_never_refused() -> None:
    ctx = GuardedChatCompletionContext(UnboundedChatCompletionContext(), recovery_floor_span=4)
    a = agent(ctx)
    asyncio.run(play(a, range(10)))
    assert seen_last(a) == sent(10) and ctx.guard is not None and ctx.guard.ledger.refusals == 0


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="inner: expected an autogen_core ChatCompletionContext"):
        GuardedChatCompletionContext(object(), recovery_floor_span=2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="floor_unit"):
        GuardedChatCompletionContext(UnboundedChatCompletionContext(), recovery_floor_span=2, floor_unit="tokens")
    with pytest.raises(TypeError, match="recovery_floor_span= is required"):
        GuardedChatCompletionContext(UnboundedChatCompletionContext())
    with pytest.raises(ValueError, match="on_refuse='spill' needs store="):
        GuardedChatCompletionContext(UnboundedChatCompletionContext(), recovery_floor_span=2, on_refuse="spill")
    inner = UnboundedChatCompletionContext()
    with pytest.raises(TypeError, match="already guarded"):
        GuardedChatCompletionContext(GuardedChatCompletionContext(inner, recovery_floor_span=1),
                                     recovery_floor_span=1)


def test_the_guard_refuses_the_presets_counterexample_and_nothing_safe() -> None:
    """Runtime and config agree (brief 6d): check-config's buffered counterexample, replayed through
    the real context under the guard (halt), is refused at the trace's last append naming the turn
    the finding names; the safe policy (unbounded) is never refused (above)."""
    from tailguard.doctor.drivers import autogen as ag
    from tests.presets.harness import Turn
    from tests.presets.test_autogen_preset import EXAMPLES_DIR, check_config

    found = check_config(EXAMPLES_DIR / "autogen-buffered.toml")
    hole = next(f for f in found["findings"] if f["kind"] == "hole")
    ctx = GuardedChatCompletionContext(BufferedChatCompletionContext(buffer_size=20), recovery_floor_span=8)

    async def replay() -> int:
        for i, count in enumerate(hole["messages"]):
            for m in ag.messages(i, Turn("chat", (1,) * count)):
                await ctx.add_message(m)
            try:
                await ctx.get_messages()
            except UnrecoverableCompactionError as exc:
                assert exc.holes == ((0, 1),)  # the first message of turn 0, the turn the finding names
                assert hole["offsets"] == [0]
                return i + 1
        return 0

    assert asyncio.run(replay()) == hole["step"]


def test_the_integrations_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/integrations.md's AutoGen snippet runs offline as printed: the buffer drops, the guard
    spills, and the state rides in the agent's state."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    part = doc[doc.index("## AutoGen 0.7"):]
    part = part[: part.index("\n## ", 1)]
    snippets = re.findall(r"```python\n(.*?)```", part, flags=re.S)
    assert len(snippets) == 1
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "docs_integrations_autogen"}
    exec(compile(snippets[0], "integrations.md:autogen", "exec"), namespace)  # the doc's own code
    context = namespace["context"]
    assert context.guard.spills and namespace["state"]["llm_context"][STATE_KEY]["session"] == "alice"
    assert any(p.name.endswith("-alice.jsonl") for p in (tmp_path / "logs").iterdir())


def test_a_context_that_changes_its_store_while_viewing_is_refused() -> None:
    """The guard reads the view as a view: a custom context whose get_messages() deletes stored
    messages (instead of leaving them out) is refused, nothing recorded as dropped."""

    class Deleting(BufferedChatCompletionContext):
        async def get_messages(self) -> list[Any]:
            view = await super().get_messages()
            self._messages = list(view)  # forgets the rest for good
            return view

    ctx = GuardedChatCompletionContext(Deleting(buffer_size=2), recovery_floor_span=0, on_refuse="defer")
    a = agent(ctx)
    asyncio.run(play(a, range(1)))
    with pytest.raises(AdapterError, match="changed the stored messages"):
        asyncio.run(play(a, range(1, 2)))
