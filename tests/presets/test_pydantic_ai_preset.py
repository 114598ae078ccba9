"""Differential test of the ``pydantic_ai.OpenAICompaction`` preset against Pydantic AI.

Pydantic AI runs as installed: an ``Agent`` on a real ``OpenAIResponsesModel`` whose ``openai``
client answers locally (``httpx.MockTransport``: ``/responses`` plays the session's script, a
text answer or a call of the ``probe`` tool, which Pydantic AI runs; ``/responses/compact``
returns one compaction item and records what it was sent), with the real
``OpenAICompaction(message_count_threshold=N)`` between two recording capabilities that see the
request's message list before and after it. Every message carries a unique tag ``[m<i>]``, ``i``
its index in the whole conversation. The preset's model is stepped message by message and every
compaction is compared: messages deleted, messages sent to ``/compact`` (shown), the message
kept, and whether the earlier compaction was shown.

Declared difference, as declared: ``checked_before_requests`` (the model may compact at a
response; Pydantic AI never does: the harness checks that, undoes the model's compaction and
compares the one at the next request).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, ModelRun, Turn

if not REQUIRE:
    pytest.importorskip("pydantic_ai", reason="install the frameworks extra (CI does)")

import httpx
from hypothesis import HealthCheck, given, settings, strategies as st
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models.openai import OpenAICompaction, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets import find
from tailguard.pipeline.presets.pydantic_ai import PRESET

USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}
TAG = re.compile(r"\[m(\d+)\]")


class Mismatch(AssertionError):
    pass


def test_the_installed_versions_are_the_validated_ones() -> None:
    from importlib.metadata import version

    assert f"pydantic-ai-slim {version('pydantic-ai-slim')}" in PRESET.validated_on
    assert f"openai {version('openai')}" in PRESET.validated_on


def policy(threshold: int, floor: int = 0, *, keep: int | None = None) -> Policy:
    text = (f'name = "differential"\nturn_tokens = [1, 100]\nmessages_per_turn = [1, 1]\nfloor = {floor}\n'
            f'floor_unit = "messages"\n[framework]\nname = "{PRESET.name}"\n'
            f"message_count_threshold = {threshold}\n")
    assert find(PRESET.name) is not None
    out = parse_policy(text, "differential.toml")
    if keep is not None:  # a deliberately wrong translation
        out = dataclasses.replace(out, stages=(dataclasses.replace(out.stages[0], keep=keep),))
    return out


def script(runs: list[int]) -> list[str]:
    """Every message of the conversation in order: ``user`` (a run's prompt), ``call`` (a
    response calling the tool), ``return`` (its result), ``text`` (a run's answer)."""
    out: list[str] = []
    for rounds in runs:
        out += ["user", *(["call", "return"] * rounds), "text"]
    return out


def tags(value: Any) -> set[int]:
    return {int(t) for t in TAG.findall(json.dumps(value))}


class Recorder(AbstractCapability[Any]):
    """Records the tags of the request's message list (and whether it holds a compaction)."""

    def __init__(self, into: list[tuple[set[int], bool]]) -> None:
        self.into = into

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        msgs = request_context.messages
        compaction = any(p.part_kind == "compaction" for m in msgs for p in m.parts)
        self.into.append(({t for m in msgs for t in tags(repr(m.parts))}, compaction))
        return request_context

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None


def real_run(kinds: list[str], threshold: int) -> tuple[list[tuple[set[int], bool]], list[tuple[set[int], bool]],
                                                        list[tuple[set[int], bool]], list[int]]:
    """Run the conversation on Pydantic AI; per model request: the context before and after
    OpenAICompaction, what /compact was sent (tags, earlier compaction shown) and the index of
    the request it ran at."""
    responses = [i for i, k in enumerate(kinds) if k in ("call", "text")]
    compacts: list[tuple[set[int], bool]] = []
    answered = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path.endswith("/responses/compact"):
            shown = body.get("input", [])
            compacts.append((tags(shown), any(x.get("type") == "compaction" for x in shown)))
            return httpx.Response(200, json={"id": f"resp_c{len(compacts)}", "object": "response.compaction",
                                             "created_at": 0, "usage": USAGE, "output": [
                                                 {"type": "compaction", "id": f"cmp_{len(compacts)}",
                                                  "encrypted_content": f"CMP{len(compacts)}"}]})
        i = responses[answered[0]]
        answered[0] += 1
        if kinds[i] == "call":
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}",
                                    "name": "probe", "status": "completed",
                                    "arguments": json.dumps({"result": i + 1, "note": f"[m{i}]"})}
        else:
            item = {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": f"[m{i}] answer", "annotations": []}]}
        return httpx.Response(200, json={"id": f"resp_{i}", "object": "response", "created_at": 0,
                                         "status": "completed", "model": "gpt-test", "output": [item],
                                         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                                         "usage": USAGE})

    client = AsyncOpenAI(api_key="test", base_url="http://stub.invalid/v1",
                         http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    model = OpenAIResponsesModel("gpt-test", provider=OpenAIProvider(openai_client=client))
    before: list[tuple[set[int], bool]] = []
    after: list[tuple[set[int], bool]] = []
    agent = Agent(model, capabilities=[Recorder(before), OpenAICompaction(message_count_threshold=threshold),
                                       Recorder(after)])

    @agent.tool_plain
    def probe(result: int, note: str) -> str:
        """A tool whose result is tagged."""
        return f"[m{result}] result"

    history: list[Any] = []
    for i, k in enumerate(kinds):
        if k == "user":
            history = agent.run_sync(f"[m{i}] task", message_history=history).all_messages()
    assert answered[0] == len(responses), "the script was not played to its end"
    at = [i - 1 for i in responses]  # each model request runs after the message before its response
    return before, after, compacts, at


def compare(kinds: list[str], threshold: int, floor: int = 0, *, keep: int | None = None) -> int:
    """Run both; raise :class:`Mismatch` at the first disagreement; return how many compactions
    were compared."""
    before, after, compacts, at = real_run(kinds, threshold)
    sim = ModelRun(policy(threshold, floor, keep=keep))
    request_at = dict(zip(at, range(len(at)), strict=True))
    compared = used = 0
    for i, k in enumerate(kinds):
        turn = Turn("human" if k in ("user", "return") else "ai", (1,))
        had_summary = sim.state.summary
        predicted, _ = sim.append(turn)
        where = f"message {i} ({k})"
        if i not in request_at:  # a response: Pydantic AI never compacts here
            if predicted is not None:
                sim.undo(turn)  # checked_before_requests
            continue
        j = request_at[i]
        (pre, _), (post, post_compaction) = before[j], after[j]
        real = pre != post
        if not real:
            if predicted is not None:
                raise Mismatch(f"{where}: the model compacted ({predicted.deleted}), Pydantic AI did not")
            continue
        if predicted is None:
            raise Mismatch(f"{where}: Pydantic AI compacted {sorted(pre - post)}, the model did not trigger")
        shown, earlier_shown = compacts[used]
        used += 1
        deleted = tuple(sorted(pre - post))
        if not post_compaction or deleted != predicted.deleted or tuple(sorted(post)) != predicted.kept \
                or tuple(sorted(shown)) != predicted.shown:
            raise Mismatch(f"{where}: Pydantic AI deleted {deleted}, showed {sorted(shown)}, kept {sorted(post)}; "
                           f"the model deleted {predicted.deleted}, showed {predicted.shown}, kept {predicted.kept}")
        if had_summary and predicted.summary_shown is not earlier_shown:
            raise Mismatch(f"{where}: earlier compaction shown: Pydantic AI {earlier_shown}, "
                           f"the model {predicted.summary_shown}")
        compared += 1
    assert used == len(compacts), "a /compact call the harness did not compare"
    return compared


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# The sessions the preset judges: prompts and answers (messages_per_turn = [1, 1], no tool
# calls; with tools the preset refuses, see the last test). Odd and even thresholds put the
# trigger on requests and on responses.


@SETTINGS
@given(runs=st.integers(1, 25), threshold=st.integers(2, 14))
def test_pydantic_ai_agrees_with_the_preset_model(runs: int, threshold: int) -> None:
    compare(script([0] * runs), threshold)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(runs=st.integers(1, 80), threshold=st.integers(2, 40))
def test_pydantic_ai_agrees_with_the_preset_model_long(runs: int, threshold: int) -> None:
    compare(script([0] * runs), threshold)


def test_the_harness_compares_real_compactions() -> None:
    """Long chats compact many times, each compared, with the trigger at responses (undone) and
    at requests."""
    kinds = script([0] * 20)
    assert compare(kinds, 4) >= 8
    assert compare(kinds, 5) >= 8


def test_a_wrong_keep_is_caught() -> None:
    """A translation keeping two messages (the current request and the one before) is wrong, and
    the harness says so."""
    with pytest.raises(Mismatch):
        compare(script([0] * 6), 4, keep=2)


def test_a_compaction_at_a_tool_result_loses_the_result() -> None:
    """Why the preset refuses sessions with tools: a compaction at a tool result's request
    compacts the call and keeps the result, and the result is gone at the next request without
    ever reaching /responses/compact."""
    kinds = script([1, 0])  # 0 user, 1 call, 2 result, 3 text, 4 user, 5 text
    before, after, compacts, at = real_run(kinds, 2)
    assert at == [0, 2, 4]
    assert after[1][0] == {2} and before[1][0] - after[1][0] == {0, 1}  # compacted at the result, kept it
    assert 2 not in before[2][0]  # gone before the next request
    assert all(2 not in shown for shown, _ in compacts)  # never summarized: lost
    with pytest.raises(Exception, match="tool calls"):
        parse_policy('name = "x"\nturn_tokens = [1, 10]\nmessages_per_turn = [1, 2]\n[framework]\n'
                     f'name = "{PRESET.name}"\nmessage_count_threshold = 4\n', "x.toml")


def check_config(threshold: int, floor: int) -> dict[str, Any]:
    import io

    from tailguard.cli.main import main

    text = (f'name = "p"\nturn_tokens = [1, 100]\nmessages_per_turn = [1, 1]\nfloor = {floor}\n'
            f'floor_unit = "messages"\n[framework]\nname = "{PRESET.name}"\n'
            f"message_count_threshold = {threshold}\n")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.toml"
        path.write_text(text)
        out = io.StringIO()
        main(["check-config", "--format", "json", str(path)], stdout=out)
    result: dict[str, Any] = json.loads(out.getvalue())["policies"][0]
    return result


@pytest.mark.parametrize("threshold", [5, 6])
def test_the_floor_counterexample_reproduces_on_pydantic_ai(threshold: int) -> None:
    """check-config's floor trace (floor 2) replayed on Pydantic AI: at its compaction (the
    trace's last append, or the request after it: checked_before_requests) Pydantic AI keeps one
    message, so the newest two are not both verbatim. Floor 1 is safe, and the real run keeps
    the newest message at every compaction."""
    found = check_config(threshold, 2)
    assert found["verdict"] == "unsafe" and found["findings"][0]["kind"] == "floor"
    length = len(found["findings"][0]["trace"])
    kinds = script([0] * (length // 2 + 1))
    before, after, _, at = real_run(kinds, threshold)
    first = next(j for j in range(len(at)) if before[j][0] != after[j][0])
    assert at[first] in (length - 1, length)  # the trace's last message, or the request after it
    assert after[first][0] == {at[first]}  # one message of the newest two stays verbatim
    assert check_config(threshold, 1)["verdict"] == "safe"
    assert all(after[j][0] >= {at[j]} for j in range(len(at)))
