"""Differential test of the Semantic Kernel presets against SK's real reducers.

SK runs as installed (:mod:`tailguard.doctor.drivers.semantic_kernel`, which ``tailguard doctor``
runs too): ``ChatHistoryTruncationReducer`` and ``ChatHistorySummarizationReducer`` with
``auto_reduce``, the summarizer SK's own ``OpenAIChatCompletion`` on a stub HTTP transport that
echoes the markers it was shown. A chat
session appends one message a turn (marker ``[m<i>]`` = turn ``i``; with a system message, turn 0
is it). After every append the harness compares what SK deleted, what its summarizer's request
held and what stayed with the preset's model stepped turn by turn; then the marker oracle: a
marker in neither the final history nor a summary there is lost, and the model must name it.

Declared differences, as declared: ``threshold_window`` (exact with ``threshold_count = 0``; with a
threshold SK keeps a superset of the model's tail, or skips a reduction whose cut moved back to a
user message with nothing before it to summarize, and the model is resynchronized),
``summaries_accumulate`` (checked: no summary leaves, none is shown), ``reduce_timing`` (reduce()
after each pair: nothing more lost), ``function_content`` (tool sessions refused by name; the loss
shown on SK).
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("semantic_kernel", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st
from semantic_kernel.contents import ChatHistorySummarizationReducer, ChatHistoryTruncationReducer

from tailguard.base.errors import PolicyError
from tailguard.doctor.drivers import semantic_kernel as sk
from tailguard.doctor.drivers.semantic_kernel import SUMMARIZATION, TRUNCATION, compare, policy, run_sk
from tailguard.doctor.harness import Mismatch
from tailguard.pipeline.presets.semantic_kernel import SUMMARIZATION_PRESET

EXAMPLES = 30
SLOW_EXAMPLES = 300


def test_the_installed_version_is_the_validated_one() -> None:
    from importlib.metadata import version

    assert f"semantic-kernel {version('semantic-kernel')}" in SUMMARIZATION_PRESET.validated_on


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def chats(draw: st.DrawFn, max_messages: int = 30) -> tuple[list[str], int, int, bool, bool]:
    roles = draw(st.lists(st.sampled_from(["user", "assistant"]), min_size=1, max_size=max_messages))
    return (roles, draw(st.integers(1, 6)), draw(st.sampled_from([0, 0, 1, 2, 3])), draw(st.booleans()),
            draw(st.booleans()))


@SETTINGS
@given(chats())
def test_summarization_agrees_with_the_preset_model(case: tuple[list[str], int, int, bool, bool]) -> None:
    roles, target, threshold, system, single = case
    compare("summarization", roles, target, threshold, system, single)


@SETTINGS
@given(chats())
def test_truncation_agrees_with_the_preset_model(case: tuple[list[str], int, int, bool, bool]) -> None:
    roles, target, threshold, system, _ = case
    compare("truncation", roles, target, threshold, system)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(chats(max_messages=80), st.sampled_from(["summarization", "truncation"]))
def test_both_reducers_agree_long(case: tuple[list[str], int, int, bool, bool], kind: str) -> None:
    roles, target, threshold, system, single = case
    compare(kind, roles, target, threshold, system, single)


def test_the_harness_compares_real_reductions() -> None:
    """Each reducer compared over a long chat, with and without a system message, single and
    accumulating summaries; a wrong keep is caught."""
    chat = ["user", "assistant"] * 10
    assert compare("summarization", chat, 4, 0, False) == 16
    assert compare("summarization", chat, 4, 0, True) >= 5
    assert compare("summarization", chat, 3, 0, False, single=False) >= 5
    assert compare("summarization", chat, 4, 2, False) >= 3
    assert compare("truncation", chat, 4, 0, True) == 17  # 21 messages with the system one
    assert compare("truncation", chat, 4, 3, False) >= 3
    with pytest.raises(Mismatch):
        compare("summarization", chat, 4, 0, False, sim_keep=3)
    with pytest.raises(Mismatch):
        compare("truncation", chat, 4, 0, False, sim_keep=5)


def test_a_reduction_sk_skips_in_the_threshold_window_is_a_superset() -> None:
    """threshold_window, found by ``tailguard doctor``'s random chats: with a system message and a
    threshold, SK's cut can move back to the user message right after the system message and the
    summary, leaving nothing to summarize: SK skips the reduction the model makes (append 7 here,
    every message kept) and reduces at the next append; the model continues from SK's state."""
    chat = ["assistant", "assistant", "user", *["assistant"] * 6]
    assert compare("summarization", chat, 5, 1, True, single=False) == 3
    assert compare("summarization", chat, 5, 1, True, single=True) == 3
    with pytest.raises(Mismatch, match=r"append 6 .*SK deleted \[1, 2\] kept"):  # SK keeps less: caught
        compare("summarization", chat, 5, 1, True, single=False, sim_keep=5)


def test_reduce_after_each_pair_loses_nothing_more() -> None:
    """reduce_timing: SK's agent samples call reduce() after each response (auto_reduce off):
    the summarizer still sees everything that leaves, and each reduction keeps target_count."""
    endpoint = sk.StubEndpoint()
    reducer = ChatHistorySummarizationReducer(service=endpoint.service(), target_count=4, threshold_count=2)

    async def go() -> list[int]:
        kept: list[int] = []
        for i in range(0, 30, 2):
            reducer.add_message(sk.message(i, "user"))
            reducer.add_message(sk.message(i + 1, "assistant"))
            if await reducer.reduce() is not None:
                kept.append(len(sk.raw_tags(reducer.messages)))
        return kept

    kept = sk.run(go())
    assert kept and all(k >= 4 for k in kept)
    assert set(range(30)) <= sk.tags(reducer.messages)


# -- what the preset refuses, shown on SK -------------------------------------------------------------


def tool_session(include: bool) -> tuple[set[int], sk.StubEndpoint, Any]:
    endpoint = sk.StubEndpoint()
    reducer = ChatHistorySummarizationReducer(service=endpoint.service(), target_count=2, auto_reduce=True,
                                              include_function_content_in_summary=include)

    async def go() -> None:
        await reducer.add_message_async(sk.message(0, "user"))
        for m in sk.tool_round(1):  # the call holds [m1], its result [m2]
            await reducer.add_message_async(m)
        await reducer.add_message_async(sk.message(3, "assistant"))
        await reducer.add_message_async(sk.message(4, "user"))
        await reducer.add_message_async(sk.message(5, "assistant"))

    sk.run(go())
    return set(range(6)) - sk.tags(reducer.messages), endpoint, reducer


def test_function_content_is_deleted_unseen() -> None:
    """Why the preset refuses tool sessions by name: with the default
    include_function_content_in_summary=False SK deletes a call and its result without showing
    them to its summarizer; with it True they are shown (and SK's cut moves by message roles)."""
    lost, endpoint, _ = tool_session(False)
    assert lost == {1, 2}
    assert not any({1, 2} & endpoint.shown(k) for k in range(len(endpoint.requests)))
    lost, endpoint, _ = tool_session(True)
    assert lost == set() and {1, 2} <= set().union(*(endpoint.shown(k) for k in range(len(endpoint.requests))))
    for single in ("false", "true"):
        with pytest.raises(PolicyError, match="include_function_content_in_summary = false"):
            policy(SUMMARIZATION, f"target_count = 2\nuse_single_summary = {single}", mpt=(1, 3))
    with pytest.raises(PolicyError, match="locate_safe_reduction_index"):
        policy(SUMMARIZATION, "target_count = 2\ninclude_function_content_in_summary = true", mpt=(1, 3))
    with pytest.raises(PolicyError, match="locate_safe_reduction_index"):
        policy(TRUNCATION, "target_count = 2", mpt=(1, 2))


def test_the_knobs_are_checked_as_sk_checks_them() -> None:
    import pydantic

    with pytest.raises(pydantic.ValidationError):
        ChatHistoryTruncationReducer()  # type: ignore[call-arg]
    with pytest.raises(PolicyError, match="required"):
        policy(TRUNCATION, "threshold_count = 1")
    with pytest.raises(pydantic.ValidationError):
        ChatHistoryTruncationReducer(target_count=0)
    with pytest.raises(PolicyError, match="must be >= 1"):
        policy(TRUNCATION, "target_count = 0")
    with pytest.raises(PolicyError, match="expected true or false"):
        policy(SUMMARIZATION, "target_count = 2\nauto_reduce = 1")
    with pytest.raises(PolicyError, match="0 or 1"):
        policy(SUMMARIZATION, "target_count = 2\nsystem_message = 2")
    with pytest.raises(PolicyError, match="unknown knob"):
        policy(SUMMARIZATION, "target_count = 2\nservice = 1")


# -- check-config's verdicts replayed on SK --------------------------------------------------------


def check_config(text: str) -> dict[str, Any]:
    from tailguard.cli.main import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.toml"
        path.write_text(text)
        out = io.StringIO()
        main(["check-config", "--format", "json", str(path)], stdout=out)
    result: dict[str, Any] = json.loads(out.getvalue())["policies"][0]
    return result


def policy_text(framework: str, knobs: str, floor: int) -> str:
    return (f'name = "p"\nturn_tokens = [1, 8000]\nmessages_per_turn = [1, 1]\nfloor = {floor}\n'
            f'floor_unit = "messages"\n[framework]\nname = "{framework}"\n{knobs}\n')


@pytest.mark.parametrize("threshold", [0, 3])
def test_the_truncation_hole_reproduces_on_sk(threshold: int) -> None:
    """check-config's hole trace replayed on SK's truncation reducer: SK first loses at the trace's
    last append, and what it loses there holds the offsets the finding names (exactly them with
    threshold_count = 0)."""
    found = check_config(policy_text(TRUNCATION, f"target_count = 4\nthreshold_count = {threshold}", 0))
    assert found["verdict"] == "unsafe"
    hole = next(f for f in found["findings"] if f["kind"] == "hole")
    named = set(hole["offsets"])
    steps = len(hole["trace"])
    reducer = ChatHistoryTruncationReducer(target_count=4, threshold_count=threshold, auto_reduce=True)
    real = sk.run(run_sk(reducer, ["user", "assistant"] * steps, sk.StubEndpoint()))
    first = next(i for i, r in enumerate(real) if r["deleted"])
    assert first == steps - 1
    assert named <= set(real[first]["deleted"])
    if threshold == 0:
        assert set(real[first]["deleted"]) == named


def test_the_floor_counterexample_reproduces_on_sk() -> None:
    """A floor one above target_count: unsafe (floor); replayed on SK, its first summarization
    (at the trace's last append) keeps target_count messages, so the floor is not verbatim. A
    floor of target_count is safe, and SK keeps it at every summarization of a long chat."""
    knobs = "target_count = 4\nthreshold_count = 0"
    found = check_config(policy_text(SUMMARIZATION, knobs, 5))
    assert found["verdict"] == "unsafe" and {f["kind"] for f in found["findings"]} == {"floor"}
    steps = len(found["findings"][0]["trace"])
    endpoint = sk.StubEndpoint()
    reducer = ChatHistorySummarizationReducer(service=endpoint.service(), target_count=4, auto_reduce=True)
    real = sk.run(run_sk(reducer, ["user", "assistant"] * 20, endpoint))
    first = next(i for i, r in enumerate(real) if r["summarized"])
    assert first == steps - 1 and len(real[first]["kept"]) == 4
    assert check_config(policy_text(SUMMARIZATION, knobs, 4))["verdict"] == "safe"
    assert all(len(r["kept"]) >= 4 for r in real if r["summarized"])
