"""Differential test of the Semantic Kernel presets against SK's real reducers.

SK runs as installed (tests/presets/sk_driver.py): ``ChatHistoryTruncationReducer`` and
``ChatHistorySummarizationReducer`` with ``auto_reduce``, the summarizer SK's own
``OpenAIChatCompletion`` on a stub HTTP transport that echoes the markers it was shown. A chat
session appends one message a turn (marker ``[m<i>]`` = turn ``i``; with a system message, turn 0
is it). After every append the harness compares what SK deleted, what its summarizer's request
held and what stayed with the preset's model stepped turn by turn; then the marker oracle: a
marker in neither the final history nor a summary there is lost, and the model must name it.

Declared differences, as declared: ``threshold_window`` (exact with ``threshold_count = 0``; with a
threshold SK keeps a superset of the model's tail and the model is resynchronized),
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

from tests.presets.harness import REQUIRE, ModelRun, Turn

if not REQUIRE:
    pytest.importorskip("semantic_kernel", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st
from semantic_kernel.contents import ChatHistorySummarizationReducer, ChatHistoryTruncationReducer

from tailguard.base.errors import PolicyError
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.semantic_kernel import SUMMARIZATION, SUMMARIZATION_PRESET, TRUNCATION
from tests.presets import sk_driver as sk

EXAMPLES = 30
SLOW_EXAMPLES = 300


class Mismatch(AssertionError):
    pass


def test_the_installed_version_is_the_validated_one() -> None:
    from importlib.metadata import version

    assert f"semantic-kernel {version('semantic-kernel')}" in SUMMARIZATION_PRESET.validated_on


def policy(framework: str, knobs: str, *, floor: int = 0, mpt: tuple[int, int] = (1, 1)) -> Policy:
    text = (f'name = "differential"\nturn_tokens = [1, 10]\nmessages_per_turn = [{mpt[0]}, {mpt[1]}]\n'
            f'floor = {floor}\nfloor_unit = "messages"\n[framework]\nname = "{framework}"\n{knobs}\n')
    return parse_policy(text, "differential.toml")


def knob_text(target: int, threshold: int, system: bool, single: bool | None = None) -> str:
    out = f"target_count = {target}\nthreshold_count = {threshold}\nsystem_message = {int(system)}\n"
    return out + ("" if single is None else f"use_single_summary = {str(single).lower()}\n")


# -- one session, SK and the model side by side -------------------------------------------------


async def run_sk(reducer: Any, roles: list[str], endpoint: sk.StubEndpoint) -> list[dict[str, Any]]:
    """Append each message with auto_reduce; per append: what SK deleted, showed, kept."""
    out: list[dict[str, Any]] = []
    for i, role in enumerate(roles):
        before = sk.raw_tags(reducer.messages) | {i}
        calls = len(endpoint.requests)
        await reducer.add_message_async(sk.message(i, role))
        after = sk.raw_tags(reducer.messages)
        summarized = len(endpoint.requests) > calls
        shown = endpoint.shown() & before if summarized else set()
        summary_shown = summarized and "SUMMARY" in json.dumps(endpoint.requests[-1])
        out.append({"deleted": sorted(before - after), "shown": sorted(shown), "kept": sorted(after),
                    "summarized": summarized, "summary_shown": summary_shown,
                    "summaries": sum(1 for m in reducer.messages if m.metadata.get("__summary__"))})
    return out


def compare(kind: str, roles: list[str], target: int, threshold: int, system: bool,
            single: bool = True, *, sim_keep: int | None = None) -> int:
    """Drive SK and the model over one chat; raise :class:`Mismatch` on a difference the preset
    does not declare. Returns the number of reductions compared."""
    if system:
        roles = ["system", *roles]
    endpoint = sk.StubEndpoint()
    if kind == "truncation":
        reducer: Any = ChatHistoryTruncationReducer(target_count=target, threshold_count=threshold, auto_reduce=True)
        sim = ModelRun(policy(TRUNCATION, knob_text(target, threshold, system)))
    else:
        reducer = ChatHistorySummarizationReducer(service=endpoint.service(), target_count=target,
                                                  threshold_count=threshold, auto_reduce=True,
                                                  use_single_summary=single)
        sim = ModelRun(policy(SUMMARIZATION, knob_text(target, threshold, system, single)))
    if sim_keep is not None:  # a deliberately wrong translation
        import dataclasses
        wrong = {"limit" if kind == "truncation" else "keep": sim_keep}
        sim.policy = dataclasses.replace(sim.policy, stages=(dataclasses.replace(sim.policy.stages[0], **wrong),))
    real = sk.run(run_sk(reducer, roles, endpoint))
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
        if got["summaries"] > 1 and (single or system):
            raise Mismatch(f"append {i} {where}: {got['summaries']} summaries with a single summary")
        if kind == "truncation":
            if got["summarized"] or predicted is not None:
                raise Mismatch(f"append {i} {where}: a truncation summarized")
            if threshold == 0 and sorted(dropped) != got["deleted"]:
                raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']}, the model dropped {sorted(dropped)}")
            # threshold_window: SK cuts to target_count in one go, the stage one message at a time:
            # the first loss at the same append, and SK has deleted whatever the model dropped
            if not model_dropped <= sk_deleted or bool(sk_deleted) != bool(model_dropped):
                raise Mismatch(f"append {i} {where}: SK deleted {sorted(sk_deleted)} so far, the model dropped "
                               f"{sorted(model_dropped)}")
            if threshold == 0 and not any(k.startswith("hole:") for k in kinds) and got["deleted"]:
                raise Mismatch(f"append {i} {where}: SK lost {got['deleted']} and the model found no hole")
            compared += bool(got["deleted"])
            continue
        if (predicted is None) != (not got["deleted"]):
            raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']}, the model "
                           f"{predicted and predicted.deleted}")
        if predicted is None:
            continue
        if got["shown"] != got["deleted"]:  # a chat: everything that leaves is shown
            raise Mismatch(f"append {i} {where}: SK showed {got['shown']} of {got['deleted']}")
        kept = sorted(set(got["kept"]) - pinned)
        if threshold == 0:
            if (tuple(got["deleted"]), tuple(got["shown"]), tuple(kept)) != (
                    predicted.deleted, predicted.shown, predicted.kept):
                raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']}, showed {got['shown']}, kept "
                               f"{kept}; the model deleted {predicted.deleted}, showed {predicted.shown}, kept "
                               f"{predicted.kept}")
        else:  # threshold_window: SK keeps a superset, never less; continue from SK's state
            if not set(got["deleted"]) <= set(predicted.deleted) or not set(predicted.kept) <= set(kept):
                raise Mismatch(f"append {i} {where}: SK deleted {got['deleted']} kept {kept}; the model deleted "
                               f"{predicted.deleted} kept {predicted.kept}")
            sim.resync(kept, set(range(i + 1)) - set(kept) - pinned)
        earlier = predicted.summary_shown  # None: no earlier summary, or summary = "separate"
        if earlier is not None and got["summary_shown"] is not earlier:
            raise Mismatch(f"append {i} {where}: earlier summary shown: SK {got['summary_shown']}, model {earlier}")
        if not single and not system and got["summary_shown"]:
            raise Mismatch(f"append {i} {where}: use_single_summary=false showed an earlier summary")
        compared += 1
    lost = set(range(len(roles))) - sk.tags(reducer.messages)
    expected = model_dropped if kind == "truncation" else set()
    if kind == "truncation" and threshold > 0:
        expected = sk_deleted  # threshold_window: the model drops one at a time, SK in batches
    if lost != expected:
        raise Mismatch(f"{where}: markers lost on SK {sorted(lost)}, the model's holes {sorted(expected)}")
    return compared


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
