"""Differential test of the ``google_adk.EventsCompactionConfig`` preset against Google ADK.

ADK runs as installed (:mod:`tailguard.doctor.drivers.google_adk`, which ``tailguard doctor``
runs too, on :mod:`tailguard.doctor.drivers.adk_app`): the real ``Runner`` and ``App`` with an
``EventsCompactionConfig``, the real ``LlmEventSummarizer`` on a recording fake model, an
``InMemorySessionService``, and an agent on a fake ``BaseLlm`` that plays a script (text answers,
calls of a ``probe`` tool that ADK runs). Every raw event carries a tag ``[e<i>]``. After the run
the harness reads the session's events: each compaction event, where it was written (after which
raw event), what left the context (``_process_compaction_events`` before and after it), what the
summarizer was shown (its prompt), what stayed, and compares them with the preset's model stepped
turn by turn. Then the marker oracle: every tag is in the final context, in a summary there (what
it was shown, following the summaries it was shown), or lost.

Declared differences, as declared: ``summaries_accumulate`` and ``overlap_reshown`` (sliding
window: checked, see :func:`compare_sliding`); ``worth_compacting`` (the harness's summaries are
small, so ADK compacts whenever the model does; a mismatch otherwise).
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE, Mismatch

if not REQUIRE:
    pytest.importorskip("google.adk", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.doctor.drivers import adk_app as adk
from tailguard.doctor.drivers.adk_app import Step
from tailguard.doctor.drivers.google_adk import (
    compare_sliding,
    compare_tokens,
    policy,
    real_compactions,
    run_tokens,
)
from tailguard.pipeline.presets.google_adk import PRESET

EXAMPLES = 25  # each example runs ADK for a whole session (about 0.1 s an invocation)
SLOW_EXAMPLES = 120  # ``pytest -m slow``: sessions up to 60 events / 40 invocations, about 4 min


def test_the_installed_versions_are_the_validated_ones() -> None:
    from importlib.metadata import version

    assert f"google-adk {version('google-adk')}" in PRESET.validated_on
    assert f"google-genai {version('google-genai')}" in PRESET.validated_on


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def token_sessions(draw: st.DrawFn, max_events: int = 24) -> tuple[list[int], int, int]:
    n = 2 * draw(st.integers(1, max_events // 2))
    sizes = [draw(st.integers(3, 40)) for _ in range(n)]
    return sizes, draw(st.integers(20, 200)), draw(st.integers(0, 6))


@SETTINGS
@given(token_sessions())
def test_token_threshold_agrees_with_the_preset_model(case: tuple[list[int], int, int]) -> None:
    compare_tokens(*case)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(token_sessions(max_events=60))
def test_token_threshold_agrees_with_the_preset_model_long(case: tuple[list[int], int, int]) -> None:
    compare_tokens(*case)


def test_the_token_harness_compares_real_compactions() -> None:
    """Compactions at the prompt (before the model request) and at the answer (after the
    invocation), each compared; a wrong keep is caught."""
    sizes = [10, 5] * 12
    assert compare_tokens(sizes, 40, 2) >= 5
    assert compare_tokens([12, 3] * 12, 40, 1) >= 5
    with pytest.raises(Mismatch):
        compare_tokens(sizes, 40, 2, keep=3)


@SETTINGS
@given(shapes=st.lists(st.integers(0, 2), min_size=1, max_size=12), interval=st.integers(1, 4),
       overlap=st.integers(0, 4))
def test_sliding_window_agrees_with_the_preset_model(shapes: list[int], interval: int, overlap: int) -> None:
    compare_sliding(shapes, interval, overlap)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(shapes=st.lists(st.integers(0, 3), min_size=1, max_size=40), interval=st.integers(1, 6),
       overlap=st.integers(0, 8))
def test_sliding_window_agrees_with_the_preset_model_long(shapes: list[int], interval: int, overlap: int) -> None:
    compare_sliding(shapes, interval, overlap)


def test_the_sliding_harness_compares_real_compactions() -> None:
    """The documented example (interval 3, overlap 1) and a window reaching back past a summary's
    start (overlap >= interval: the earlier summary leaves, its events shown again), compared; a
    translation that keeps the newest invocation is caught."""
    assert compare_sliding([0, 1, 0, 2, 0, 0, 1, 0, 0], 3, 1) == 3
    assert compare_sliding([0] * 8, 2, 3) == 4
    with pytest.raises(Mismatch):
        compare_sliding([0] * 6, 2, 1, keep=1)


def test_a_clipped_tool_response_is_lost() -> None:
    """Why the preset refuses sliding-window sessions whose invocations can hold a tool response
    above 2,000 characters: LlmEventSummarizer shows it clipped, the event leaves the context, and
    the tag at its end is held nowhere. A response of 1,000 characters whose ``str()`` doubles
    (every character a quote) is clipped too: the bound is 249 tokens, not 500."""

    async def go() -> tuple[list[Any], list[str]]:
        app = await adk.build({"compaction_interval": 1, "overlap_size": 0})
        await app.invoke(6, [Step(1, call=600, tail_tag=True), Step(5)])
        await app.invoke(6, [Step(5)])
        return await app.session_events(), app.summary_model.prompts

    events, prompts = adk.run(go())
    assert "truncated" in prompts[0]
    assert adk.lost(events, prompts) == {2}  # the tool response of the first invocation
    with pytest.raises(Exception, match="_MAX_TOOL_CONTENT_CHARS"):
        policy("compaction_interval = 1\noverlap_size = 0", mpt=(2, 4), max_tokens=250)
    policy("compaction_interval = 1\noverlap_size = 0", mpt=(2, 4), max_tokens=249)  # cannot hold one
    policy("compaction_interval = 1\noverlap_size = 0", mpt=(2, 3), max_tokens=8000)  # no tool round

    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from google.adk.events.event import Event
    from google.genai import types

    value = {"r": "'" * 999 + '"'}  # 1,000 characters of quotes: JSON 1,010, str() 2,008
    assert len(json.dumps(value)) < 4 * 260 and len(str(value)) > 2000
    event = Event(author="agent", content=types.Content(role="user", parts=[types.Part(
        function_response=types.FunctionResponse(name="p", response=value))]))
    shown = LlmEventSummarizer(llm=adk.SummaryModel())._format_events_for_prompt([event])
    assert "truncated" in shown  # clipped although its JSON is 1,010 characters (252 tokens)


def test_the_knob_pairs_are_checked_as_adk_checks_them() -> None:
    from google.adk.apps.app import EventsCompactionConfig

    for knobs, adk_kw in (("compaction_interval = 2", {"compaction_interval": 2}),
                          ("token_threshold = 9", {"token_threshold": 9}), ("", {})):
        with pytest.raises(ValueError):
            EventsCompactionConfig(**adk_kw)
        with pytest.raises(Exception, match=r"together|no default trigger"):
            policy(knobs)
    with pytest.raises(Exception, match="both trigger pairs"):
        policy("compaction_interval = 2\noverlap_size = 0\ntoken_threshold = 9\nevent_retention_size = 1")
    with pytest.raises(Exception, match="accumulate"):
        policy("compaction_interval = 2\noverlap_size = 0\nwindow = 1000")
    with pytest.raises(Exception, match="messages_per_turn"):
        policy("token_threshold = 9\nevent_retention_size = 1", mpt=(1, 2))


# -- check-config's verdicts replayed on ADK -------------------------------------------------------


def check_config(text: str) -> dict[str, Any]:
    from tailguard.cli.main import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.toml"
        path.write_text(text)
        out = io.StringIO()
        main(["check-config", "--format", "json", str(path)], stdout=out)
    result: dict[str, Any] = json.loads(out.getvalue())["policies"][0]
    return result


def token_policy_text(floor: int, retention: int) -> str:
    return (f'name = "p"\nturn_tokens = [3, 40]\nmessages_per_turn = [1, 1]\nfloor = {floor}\n'
            f'floor_unit = "messages"\n[framework]\nname = "{PRESET.name}"\ntoken_threshold = 100\n'
            f"event_retention_size = {retention}\nsummary_tokens = 10\n")


@pytest.mark.parametrize("retention", [2, 3])
def test_the_floor_counterexample_reproduces_on_adk(retention: int) -> None:
    """check-config's floor trace (floor one above event_retention_size) replayed on ADK with the
    trace's sizes: at its last event ADK compacts and keeps ``retention`` events, so the newest
    ``retention + 1`` are not all verbatim; a floor of ``retention`` is safe, and ADK keeps it at
    every compaction of a long session."""
    found = check_config(token_policy_text(retention + 1, retention))
    assert found["verdict"] == "unsafe" and found["findings"][0]["kind"] == "floor"
    trace = found["findings"][0]["trace"]
    sizes = [step["size"] if isinstance(step, dict) else int(step) for step in trace]
    if len(sizes) % 2:
        sizes.append(3)
    events, prompts = adk.run(run_tokens(sizes, 100, retention, 10))
    first = real_compactions(events, prompts)[0]
    assert first.after == len(trace) - 1 and len(first.kept) == retention
    assert check_config(token_policy_text(retention, retention))["verdict"] == "safe"
    events, prompts = adk.run(run_tokens([40, 3, 25, 30] * 8, 100, retention, 10))
    assert all(len(c.kept) >= retention for c in real_compactions(events, prompts))


def test_suggest_gives_adks_retention_boundary() -> None:
    """``--suggest`` on a floor above event_retention_size moves the knob to the floor, exactly:
    on ADK the suggested value keeps the floor at every compaction and the value below it does
    not (the session is check-config's own counterexample)."""
    from tailguard.cli.main import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.toml"
        path.write_text(token_policy_text(3, 1))
        out = io.StringIO()
        main(["check-config", "--suggest", "--format", "json", str(path)], stdout=out, stderr=io.StringIO())
    entry = json.loads(out.getvalue())["policies"][0]
    knob = "framework.event_retention_size"
    change = next(f["changes"][0] for f in entry["fixes"] if f["changes"][0]["knob"] == knob)
    assert (change["to"], change["beyond"]) == (3, 2)
    sizes = [step["size"] if isinstance(step, dict) else int(step) for step in entry["findings"][0]["trace"]]
    sizes += [40, 40, 3, 3] * 4
    sizes += [3] * (len(sizes) % 2)
    for retention, holds in ((2, False), (3, True)):
        events, prompts = adk.run(run_tokens(sizes, 100, retention, 10))
        kept = [len(c.kept) for c in real_compactions(events, prompts)]
        assert kept and all(k >= 3 for k in kept) is holds, (retention, kept)
