"""Differential test of the ``pydantic_ai.OpenAICompaction`` preset against Pydantic AI.

Pydantic AI runs as installed (:mod:`tailguard.doctor.drivers.pydantic_ai`, which ``tailguard
doctor`` runs too): an ``Agent`` on a real ``OpenAIResponsesModel`` whose ``openai``
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

import json
from typing import Any

import pytest

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, Mismatch

if not REQUIRE:
    pytest.importorskip("pydantic_ai", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.doctor.drivers.pydantic_ai import compare, real_run, script
from tailguard.pipeline.policy import parse_policy
from tailguard.pipeline.presets.pydantic_ai import PRESET


def test_the_installed_versions_are_the_validated_ones() -> None:
    from importlib.metadata import version

    assert f"pydantic-ai-slim {version('pydantic-ai-slim')}" in PRESET.validated_on
    assert f"openai {version('openai')}" in PRESET.validated_on


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
