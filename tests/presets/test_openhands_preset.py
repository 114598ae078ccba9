"""Differential test of the ``openhands.CondenserPipeline`` preset against the OpenHands SDK.

The SDK runs as installed (:mod:`tailguard.doctor.drivers.openhands`, which ``tailguard doctor``
runs too; openhands-sdk needs Python >= 3.12 and cannot share a venv with
the other frameworks: CI runs this file in ``.venvs/py3.12-openhands``, ``.ci/versions``).
Its own ``LLMSummarizingCondenser`` (and a ``PipelineCondenser`` around it) condenses a
conversation's ``View``, rebuilt from the event log with ``View.from_events`` after every
event, as the agent loop does; its summarizer is the SDK's own ``TestLLM``, recording each
prompt and answering with the markers it could read. Every condensation is compared with the
preset's model stepped on the same events: the events forgotten, those shown whole to the
summarizer, whether the previous summary was shown, and the events that stayed. Then the
marker oracle: every event's marker is in the final view or in the summary.

Event 0 is the system prompt event (the agent loop puts it first); every event is a turn of
one message whose size in tokens is its text's length in characters. The token rule is compared
too (the driver's ``run_tokens``: an agent LLM counting one token per character): the same
events forgotten and kept, hard context resets included (``hard_reset_forgets_pinned``).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata as md
import os
import sys
from typing import Any

import pytest

if sys.version_info < (3, 12):
    pytest.skip("openhands-sdk requires Python >= 3.12 (pip on 3.11 finds no version); CI runs this "
                "file in .venvs/py3.12-openhands (.ci/versions)", allow_module_level=True)

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, Mismatch

# offline: litellm reads its bundled model map instead of fetching it; no banner on import
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
if not REQUIRE:  # CI (TAILGUARD_REQUIRE_FRAMEWORKS=1): a missing SDK fails, never skips
    pytest.importorskip("openhands.sdk", reason="install the openhands extra (Python >= 3.12)")

from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.doctor.drivers.openhands import (
    RecordingLLM,
    check_outcome,
    policy_of,
    run,
    run_tokens,
    token_policy,
)
from tailguard.pipeline.policy import Compact, Policy
from tailguard.pipeline.presets import find
from tailguard.pipeline.presets.openhands import PREVIEW_CHARS


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    """``chars``: ``max_event_chars`` (500: every event and summary is shown whole; None: the
    careful model, with events up to 900 characters)."""
    max_size = draw(st.integers(4, 24))
    keep_first = draw(st.integers(0, max_size // 2 - 2))
    return {"max_size": max_size, "keep_first": keep_first, "summary_tokens": draw(st.integers(20, 300)),
            "chars": draw(st.sampled_from([PREVIEW_CHARS, None]))}


# At most 60 events: the fake summary ("SUMMARY [t0m0] ... [t59m0]") then stays under 500
# characters, as max_event_chars = 500 states; longer runs are the careful model's.
@st.composite
def sessions(draw: st.DrawFn, max_events: int = 60, longest: int = 900) -> tuple[list[int], list[str]]:
    count = draw(st.integers(1, max_events))
    sizes = draw(st.lists(st.integers(12, longest), min_size=count, max_size=count))
    roles = ["system", *draw(st.lists(st.sampled_from(["user", "assistant"]), min_size=count - 1,
                                      max_size=count - 1))]
    return sizes, roles


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(session=sessions(), k=knobs(), pipeline=st.booleans())
def test_the_sdk_agrees_with_the_preset_model(session: tuple[list[int], list[str]], k: dict[str, Any],
                                              pipeline: bool) -> None:
    if k["chars"] is not None:
        session = ([min(size, 300) for size in session[0]], session[1])
    check(run(*session, k, pipeline=pipeline), k)


check = check_outcome  # the marker oracle against the model (the driver's, which doctor runs)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(session=sessions(max_events=200), k=knobs())
def test_the_sdk_agrees_with_the_preset_model_long(session: tuple[list[int], list[str]], k: dict[str, Any]) -> None:
    k = {**k, "chars": None}  # past 60 events the fake summary outgrows 500 characters
    check(run(*session, k), k)


def alternating(count: int) -> tuple[list[int], list[str]]:
    return [100] * count, ["system", *(["user", "assistant"] * count)[: count - 1]]


def test_the_harness_compares_real_condensations() -> None:
    """Many condensations, each compared, the previous summary among the forgotten events."""
    out = run(*alternating(60), {"max_size": 10, "keep_first": 2, "summary_tokens": 50, "chars": 500})
    assert out.compared >= 8 and out.lost == set()


def test_a_long_summary_is_shown_cut_and_loses_markers() -> None:
    """Past 500 characters the previous summary is shown cut (N_CHAR_PREVIEW): the SDK loses
    the markers only it held, and the careful model reports holes."""
    k = {"max_size": 10, "keep_first": 2, "summary_tokens": 50, "chars": None}
    out = run(*alternating(120), k)
    assert out.compared >= 15 and out.lost and out.model_holes > 0


def test_a_long_event_is_shown_cut() -> None:
    sizes, roles = alternating(20)
    sizes[5] = 501
    k = {"max_size": 10, "keep_first": 2, "summary_tokens": 50, "chars": None}
    out = run(sizes, roles, k)
    assert out.lost == {"[t5m0]"} and out.model_holes > 0
    with pytest.raises(Mismatch, match="showed"):  # stated short, the event is not shown whole
        run(sizes, roles, {**k, "chars": 500})


def test_the_default_sizes_condense_as_documented() -> None:
    """The SDK's defaults (240, 2): the first condensation at event 241 keeps the system
    prompt, the first user message and the newest 240 // 2 - 2 - 1 = 117 events."""
    out = run(*alternating(242), {"max_size": 240, "keep_first": 2, "summary_tokens": 1000, "chars": 500})
    assert out.compared == 1


def test_a_wrong_tail_is_caught() -> None:
    """A translation keeping one event more than the SDK (the old repository's rule read with
    the pinned events counted twice) must be reported."""
    k = {"max_size": 12, "keep_first": 2, "summary_tokens": 50, "chars": 500}
    good = policy_of(k)
    stage = dataclasses.replace(good.stages[0], keep=good.stages[0].keep + 1)  # type: ignore[call-overload]
    with pytest.raises(Mismatch, match="kept"):
        run(*alternating(30), k, policy=dataclasses.replace(good, stages=(stage,)))


def test_a_wrong_trigger_is_caught() -> None:
    k = {"max_size": 12, "keep_first": 2, "summary_tokens": 50, "chars": 500}
    good = policy_of(k)
    stage = dataclasses.replace(good.stages[0], trigger=good.stages[0].trigger - 1)  # type: ignore[call-overload]
    with pytest.raises(Mismatch, match="model compacted, the SDK did not"):
        run(*alternating(30), k, policy=dataclasses.replace(good, stages=(stage,)))


class ForgetfulLLM(RecordingLLM):
    """A summarizer that drops the oldest tag it read: the oracle must see the loss."""

    __test__ = False

    def read(self, prompt: str) -> list[str]:
        return super().read(prompt)[1:]


def test_the_oracle_sees_a_lost_marker() -> None:
    llm = ForgetfulLLM(model="test-model", usage_id="condenser")
    out = run(*alternating(30), {"max_size": 10, "keep_first": 2, "summary_tokens": 50, "chars": 500}, llm=llm)
    assert out.lost, out


def test_the_installed_sdk_is_the_validated_one() -> None:
    preset = find("openhands.CondenserPipeline")
    assert preset is not None
    for entry in preset.validated_on:
        package, version = entry.split(" ")
        assert md.version(package) == version, f"validated on {entry}, installed {md.version(package)}"


# -- the token rule (exact; `hard_reset_forgets_pinned` declared) ------------------------


@SETTINGS
@given(session=sessions(max_events=40, longest=300), limit=st.integers(1500, 4000), keep_first=st.integers(0, 3))
def test_the_token_rule_is_modelled_exactly(session: tuple[list[int], list[str]], limit: int,
                                              keep_first: int) -> None:
    run_tokens(*session, limit, keep_first)


def test_the_token_rule_condenses_and_resets() -> None:
    compared, resets = run_tokens(*alternating(40), 2000, 2)
    assert compared >= 2 and resets == 0
    # the oldest unpinned event holds more than the tokens to shed: forgetting it alone is under
    # minimum_progress (0.1 of the view), so the SDK resets: it forgets every event after the
    # system prompt, the pinned first user message too, all shown to the summarizer
    sizes, roles = [100, 12, 500, *([12] * 40)], alternating(43)[1]
    assert run_tokens(sizes, roles, 900, 2)[1] == 1
    # with keep_first = 1 the reset forgets no pinned event: the model's (no tail) is exact, and
    # the comparison goes on past it
    compared, resets = run_tokens([100, 500, *([12] * 60)], alternating(62)[1], 900, 1)
    assert resets >= 1 and compared >= 2
    # every keep_first: keep_first <= 1 compared through two resets, >= 2 up to the first
    sizes, roles = [100, 12, 12, 500, *([12] * 70)], alternating(74)[1]
    assert [run_tokens(sizes, roles, 900, first) for first in range(4)] == [(3, 2), (3, 2), (1, 1), (1, 1)]


def test_the_token_rule_keeps_under_half_less_the_pinned_events() -> None:
    """Events of 100 under max_tokens 2000 with keep_first 2 (200 tokens pinned): the SDK keeps
    the newest events under 1000 - 200 tokens, 7 of them. A keep one event longer (the pinned
    events not subtracted) or shorter, or no hard context reset, is caught."""
    sizes, roles = alternating(40)
    assert run_tokens(sizes, roles, 2000, 2)[0] >= 2

    def wrong(limit: int, keep_first: int, **change: Any) -> Policy:
        good = token_policy(limit, keep_first)
        stage = good.stages[1]
        assert isinstance(stage, Compact) and stage.keep_less_pinned == (keep_first > 0)
        return dataclasses.replace(good, stages=(good.stages[0], dataclasses.replace(stage, **change)))

    for change in ({"keep_less_pinned": False}, {"keep": 999 - 100}):
        with pytest.raises(Mismatch, match="the model deleted"):
            run_tokens(sizes, roles, 2000, 2, policy=wrong(2000, 2, **change))
    with pytest.raises(Mismatch, match="the model deleted"):  # the reset of the test above
        run_tokens([100, 500, *([12] * 60)], alternating(62)[1], 900, 1, policy=wrong(900, 1, min_progress=0.0))


def test_doctor_agrees_on_the_sdk() -> None:
    """``tailguard doctor`` in the SDK's own venv: the validated version, and the SDK agrees with
    the preset and the adapter (tailguard.doctor.drivers.openhands)."""
    import io
    import json

    from tailguard.cli.main import main

    out = io.StringIO()
    code = main(["doctor", "--framework", "openhands", "--quick", "--json"], stdout=out, stderr=io.StringIO())
    entry = json.loads(out.getvalue())["frameworks"][0]
    assert code == 0 and entry["status"] == "ok", entry
    assert entry["compactions"] > 0 and entry["adapter_runs"] == 1, entry
