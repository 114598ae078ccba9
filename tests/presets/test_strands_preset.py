"""Differential test of the Strands presets against strands-agents.

The comparison is :mod:`tailguard.doctor.drivers.strands` (which ``tailguard doctor`` runs too):
the real ``Agent`` with its tool loop and the real ``SlidingWindowConversationManager`` /
``SummarizingConversationManager``, on a scripted subclass of Strands' ``Model`` (Strands ships no
test model), the preset's model stepped beside it and the marker oracle (the driver's docstring
says what is compared). Here: Hypothesis's sessions, the harness's own checks (a wrong
translation is caught), check-config's verdicts replayed on Strands, and doctor in this venv.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import ModelRun, Turn

# strands-agents needs watchdog < 7 and google-adk 2.15 needs watchdog >= 7: it cannot share the
# `frameworks` venv, so it is skipped where it is not installed even in CI (docs/presets/strands.md).
# TAILGUARD_REQUIRE_STRANDS=1 (a venv built for it, with watchdog 6): a missing strands fails, never skips
if os.environ.get("TAILGUARD_REQUIRE_STRANDS") != "1":
    pytest.importorskip("strands", reason="install the strands extra (its own venv: watchdog, see docs)")

from hypothesis import HealthCheck, given, settings, strategies as st
from strands.agent.conversation_manager import SlidingWindowConversationManager, SummarizingConversationManager

from tailguard.doctor.drivers import strands as sd
from tailguard.doctor.drivers.strands import (
    SUMMARY_SYSTEM,
    Invocation,
    Step,
    compare_sliding,
    compare_summarizing,
    invocation,
    long_session,
    of_messages,
    policy,
)
from tailguard.doctor.harness import Mismatch
from tailguard.pipeline.presets.strands import SLIDING, SUMMARIZING

EXAMPLES = 20
SLOW_EXAMPLES = 150
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_the_installed_version_is_the_validated_one() -> None:
    from importlib.metadata import version

    assert f"strands-agents {version('strands-agents')}" in SLIDING.validated_on
    assert SLIDING.validated_on == SUMMARIZING.validated_on


# -- the sliding window: a turn is an invocation ------------------------------------------------------


@st.composite
def sliding_cases(draw: st.DrawFn, max_invocations: int = 14) -> tuple[list[int], int, bool | int]:
    window_size = draw(st.integers(2, 12))
    most = min(3, (window_size - 2) // 2)  # an invocation fits the window (tool_pair_fallback aside)
    shapes = draw(st.lists(st.integers(0, most), min_size=1, max_size=max_invocations))
    return shapes, window_size, draw(st.sampled_from([False, True, 2]))


@SETTINGS
@given(sliding_cases())
def test_sliding_window_agrees_with_the_preset_model(case: tuple[list[int], int, bool | int]) -> None:
    compare_sliding(*case)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(sliding_cases(max_invocations=40))
def test_sliding_window_agrees_with_the_preset_model_long(case: tuple[list[int], int, bool | int]) -> None:
    compare_sliding(*case)


def test_the_sliding_harness_compares_real_trims() -> None:
    """A session that trims several times is compared; a wrong limit is caught; window_size 0
    clears everything (the stage's limit 0)."""
    assert compare_sliding([0, 1, 0, 2, 0, 0, 1, 0, 0, 3], 8) >= 5
    assert compare_sliding([1, 0, 2], 0) == 3
    with pytest.raises(Mismatch):
        compare_sliding([0, 1, 0, 2, 0, 0, 1, 0, 0, 3], 8, limit=7)


def test_an_invocation_over_the_window_is_cut_at_a_tool_pair() -> None:
    """``tool_pair_fallback``: an invocation of 8 messages with window_size 5 leaves no prompt to
    cut at; Strands cuts before its first tool call after ``len - window_size`` and the model
    drops the whole invocation (it cannot split a turn): a hole either way, the model's larger."""
    sess = sd.build(SlidingWindowConversationManager(window_size=5))
    sess.invoke(12, invocation(3))
    raw, _ = sd.context_tags(sess.agent.messages)
    assert raw == [3, 4, 5, 6, 7]  # [m3] is the second tool call: the first at or after 8 - 5
    sim = ModelRun(policy(SLIDING.name, "window_size = 5", mpt=(2, 8)))
    _, kinds = sim.append(Turn("tools", (1,) * 8))
    assert any(k.startswith("hole") for k in kinds) and sim.state.verbatim == [], kinds
    assert sd.lost(sess.sent, sess.agent.messages, sess.model.prompts) == {0, 1, 2}


# -- the summarizer: a turn is a message, or a tool call with its result --------------------------------


@st.composite
def summarizing_cases(draw: st.DrawFn, max_invocations: int = 20) -> tuple[list[Invocation], int, int, float]:
    size = st.integers(20, 60)
    session = [Invocation(draw(size), [(draw(size), draw(size)) for _ in range(draw(st.integers(0, 2)))],
                          draw(size)) for _ in range(draw(st.integers(max_invocations // 2, max_invocations)))]
    # preserve >= 8 and a window >= 800: the summary call and the kept messages always fit, so
    # Strands never falls back to truncating text blocks (overflow_truncation); summary_ratio >= 0.3
    # never takes the previous summary alone there (test_a_stuck_summary_round_is_refused_by_name)
    return session, draw(st.integers(800, 1200)), draw(st.integers(8, 12)), draw(st.sampled_from([0.3, 0.5, 0.8]))


@SETTINGS
@given(summarizing_cases())
def test_summarizing_agrees_with_the_preset_model(case: tuple[list[Invocation], int, int, float]) -> None:
    COMPARED.append(compare_summarizing(*case))


COMPARED: list[int] = []


def test_the_random_summarizing_sessions_summarize() -> None:
    """The random sessions above are not vacuous: most of them summarize at least once."""
    if not COMPARED:
        pytest.skip("run with test_summarizing_agrees_with_the_preset_model")
    assert sum(1 for c in COMPARED if c) >= len(COMPARED) // 2, COMPARED


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(summarizing_cases(max_invocations=30))
def test_summarizing_agrees_with_the_preset_model_long(case: tuple[list[Invocation], int, int, float]) -> None:
    compare_summarizing(*case)


def test_a_stuck_summary_round_is_refused_by_name() -> None:
    """With summary_ratio 0.1 a round on a context of at most 19 messages takes only the previous
    summary: Strands raises the overflow out of the agent call (a session the stage, keeping
    preserve_recent_messages, would call safe). The preset refuses such a session shape by name,
    and accepts it once no 19-message context can overflow."""
    session = [Invocation(20, [], 20), Invocation(20, [(20, 20), (20, 20)], 20),
               Invocation(20, [(20, 31), (60, 60)], 60), Invocation(60, [(60, 60)], 60),
               Invocation(60, [(60, 60)], 20)]
    manager = SummarizingConversationManager(summary_ratio=0.1, preserve_recent_messages=8,
                                             summarization_system_prompt=SUMMARY_SYSTEM)
    sess = sd.build(manager, window=800)
    with pytest.raises(Exception, match="only the previous summary is old enough"):
        for inv in session:
            sess.invoke(inv.prompt, inv.steps())
    knobs = "summary_ratio = 0.1\npreserve_recent_messages = 8\nwindow = 800\nsummary_tokens = 30"
    with pytest.raises(Exception, match="only the previous summary"):
        policy(SUMMARIZING.name, knobs, mpt=(1, 2), max_tokens=60)
    policy(SUMMARIZING.name, knobs.replace("800", "1200"), mpt=(1, 2), max_tokens=60)  # 18 * 60 + 30 fits


def test_the_summarizing_harness_compares_real_summaries() -> None:
    """Summaries at prompts and at tool results, several rounds, compared; a model that keeps
    more than preserve_recent_messages is caught."""
    assert compare_summarizing(long_session(), 1000, 8, 0.3) >= 3
    assert compare_summarizing(long_session(), 1000, 10, 0.8) >= 3
    with pytest.raises(Mismatch):
        compare_summarizing(long_session(), 1000, 8, 0.8, keep=14)


def test_preserve_recent_messages_keeps_one_fewer_at_a_tool_result() -> None:
    """When the cut lands on a tool result Strands moves it forward: one fewer message than
    preserve_recent_messages stays, so the preset calls a floor of preserve_recent_messages
    unsafe-or-undecided and preserve_recent_messages - 1 safe."""
    manager = SummarizingConversationManager(summary_ratio=0.8, preserve_recent_messages=3,
                                             summarization_system_prompt=SUMMARY_SYSTEM)
    sess = sd.build(manager, window=450)
    sess.invoke(100, [Step(100, result=100), Step(100, result=100), Step(60)])
    # at the second tool result: 5 messages, 500 tokens; count = min(int(4.0), 5 - 3) = 2, the
    # message at 2 is a tool result, so 3 are summarized and 2 < 3 kept
    assert [len(s) for s in sess.model.shown] == [3]
    assert sess.model.requests[2] == [3, 4]


# -- check-config's verdicts replayed on Strands --------------------------------------------------------


def check_config(text: str, *extra: str) -> tuple[int, dict[str, Any]]:
    from tailguard.cli.main import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.toml"
        path.write_text(text)
        out = io.StringIO()
        rc = main(["check-config", "--format", "json", *extra, str(path)], stdout=out, stderr=io.StringIO())
    result: dict[str, Any] = json.loads(out.getvalue())["policies"][0]
    return rc, result


def test_the_defaults_counterexample_reproduces_on_strands() -> None:
    """check-config's hole for the shipped default (examples/presets/strands-defaults.toml)
    replayed on Strands with the trace's messages per invocation: Strands deletes exactly the
    invocations the finding names, and the marker oracle finds them lost."""
    rc, found = check_config(Path("examples/presets/strands-defaults.toml").read_text())
    assert rc == 1 and found["findings"][0]["kind"] == "hole"
    messages = found["findings"][0]["messages"]
    offsets = found["findings"][0]["offsets"]
    sess = sd.build(SlidingWindowConversationManager())  # the shipped default, window_size 40
    for count in messages:
        sess.invoke(12, of_messages(count))
    dropped = [j for j, tags in enumerate(sess.invocations)
               if set(tags) <= sd.lost(sess.sent, sess.agent.messages, sess.model.prompts)]
    assert dropped == offsets and dropped, (dropped, offsets)  # the finding's offsets are turn indices


def summarizing_text(floor: int, preserve: int = 10) -> str:
    return (f'name = "p"\nturn_tokens = [1, 8000]\nmessages_per_turn = [1, 2]\nfloor = {floor}\n'
            f'floor_unit = "messages"\n[framework]\nname = "{SUMMARIZING.name}"\nwindow = 200000\n'
            f"preserve_recent_messages = {preserve}\n")


def test_the_summarizing_floor_boundary() -> None:
    """A floor of preserve_recent_messages - 1 is safe; preserve_recent_messages itself is refused
    by name (Strands may keep one fewer, or many more when summary_ratio binds: the stages cannot
    tell which); the shipped defaults with a floor of 9 are safe and Strands keeps it."""
    assert check_config(summarizing_text(9))[1]["verdict"] == "safe"
    rc, entry = check_config(summarizing_text(10))
    assert rc == 2 and "preserve_recent_messages" in entry["error"]
    assert compare_summarizing(long_session(20), 1000, 10, 0.3) >= 3


def test_knobs_are_checked_as_strands_checks_them() -> None:
    with pytest.raises(ValueError):
        SlidingWindowConversationManager(per_turn=0)
    with pytest.raises(Exception, match="per_turn must be a positive integer"):
        policy(SLIDING.name, "per_turn = 0")
    with pytest.raises(ValueError):
        SummarizingConversationManager(summarization_agent=object(), summarization_system_prompt="x")  # type: ignore[arg-type]
    with pytest.raises(Exception, match="Cannot provide both"):
        policy(SUMMARIZING.name, 'window = 1000\nsummarization_agent = true\nsummarization_system_prompt = "x"',
               mpt=(1, 2))
    assert SummarizingConversationManager(summary_ratio=5).summary_ratio == 0.8
    assert policy(SUMMARIZING.name, "window = 1000\nsummary_ratio = 5", mpt=(1, 2)).stages[0].keep == 10
    for knob in ("pin_first = 2", "proactive_compression = true"):
        with pytest.raises(Exception, match=r"not modelled|false only"):
            policy(SLIDING.name, knob)
    with pytest.raises(Exception, match="set window"):
        policy(SUMMARIZING.name, "", mpt=(1, 2))
    with pytest.raises(Exception, match="messages_per_turn"):
        policy(SLIDING.name, "", mpt=(1, 4))


# -- tailguard doctor in this venv ------------------------------------------------------------------------


def doctor_strands() -> tuple[int, dict[str, Any]]:
    from tailguard.cli.main import main

    out = io.StringIO()
    code = main(["doctor", "--framework", "strands", "--quick", "--json"], stdout=out, stderr=io.StringIO())
    entry: dict[str, Any] = json.loads(out.getvalue())["frameworks"][0]
    return code, entry


def test_doctor_agrees_on_strands() -> None:
    """``tailguard doctor`` in Strands' own venv: the validated version, and Strands agrees with
    both presets and the adapter (tailguard.doctor.drivers.strands)."""
    code, entry = doctor_strands()
    assert code == 0 and entry["status"] == "ok", entry
    assert entry["compactions"] > 0 and entry["adapter_runs"] == 3, entry  # not vacuous


def test_a_broken_strands_preset_or_adapter_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sliding-window preset's limit one message over window_size (the model keeps an
    invocation Strands drops; the fixed session's odd invocations make one message show): the fixed
    session disagrees at its first trim; then, the presets
    sound, a guard that never refuses (``on_refuse`` forced to ``defer``) lets the lossy sliding
    session through, the adapter check's disagreement."""
    from tailguard.pipeline import presets

    good = presets.find(SLIDING.name)
    assert good is not None

    def one_more(values: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        top, stages = good.translate(values)
        return top, [dict(stages[0], limit=stages[0]["limit"] + 1)]

    with monkeypatch.context() as patch:
        patch.setitem(presets._BY_NAME, good.name, dataclasses.replace(good, translate=one_more))
        code, entry = doctor_strands()
    d = entry["disagreement"]
    assert code == 1 and entry["status"] == "disagrees" and d["check"] == "preset", entry
    assert (d["case"], d["compaction"]) == (1, 1) and "Strands kept invocations" in d["what"], d

    class Lenient(sd.GuardedConversationManager):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "on_refuse": "defer"})

    monkeypatch.setattr(sd, "GuardedConversationManager", Lenient)
    code, entry = doctor_strands()
    d = entry["disagreement"]
    assert code == 1 and d["check"] == "adapter" and "the adapter refused none of the 10 invocations" in d["what"], d
