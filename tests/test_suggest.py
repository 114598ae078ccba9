"""``check-config --suggest`` (issue 10 point 5): verified, sane, multi-knob fixes, pruned by
monotonicity, stoppable by --timeout and signals with the fixes verified so far.

Every fix is re-checked here independently of the search's own re-check: its SARIF
replacements are applied to the policy file and the edited text is parsed and decided.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from tailguard.pipeline.model import State, step
from tailguard.pipeline.policy import Compact, Policy, Truncate, load_policy, parse_policy
from tailguard.pipeline.report import Report, render_json, render_sarif
from tailguard.pipeline.solver import Budget, decide
from tailguard.pipeline.suggest import suggest
from tailguard.pipeline.suggest_knobs import knobs, sane_turn_floor
from tailguard.pipeline.suggest_patch import Replacement, apply_edits
from tailguard.pipeline.suggest_stop import StopFlag
from tests.cli_helpers import run_cli

EX = Path(__file__).resolve().parents[1] / "examples" / "policies"
SEED = EX / "seed-incident.toml"

# LangChain's SummarizationMiddleware at real sizes in the stage language (keep in turns):
# a 200k model, summarize at 170k tokens, keep 20, trim_tokens_to_summarize 4000.
LANGCHAIN_REAL = """\
name = "langchain-real"
window = 200000
turn_tokens = [1, 8000]
floor = 8
floor_unit = "turns"

[[stage]]
kind = "compact"
trigger_unit = "tokens"
trigger = 170000
keep_unit = "turns"
keep = 20
summary_tokens = 1000
input_limit = 4000
"""


def entry_of(out: str) -> dict[str, Any]:
    data = json.loads(out)
    [entry] = data["policies"]
    assert isinstance(entry, dict)
    return entry


def recheck(path: Path, fix: dict[str, Any], sarif_fix: dict[str, Any], profile: str) -> None:
    """Apply the SARIF replacements to the file, parse and decide: safe; and the JSON changes
    are the values of the edited policy."""
    source = path.read_text(encoding="utf-8").splitlines()
    reps = []
    for r in sarif_fix["artifactChanges"][0]["replacements"]:
        region, text = r["deletedRegion"], r["insertedContent"]["text"]
        insert = "startColumn" in region
        reps.append(Replacement(region["startLine"], text.lstrip("\n") if insert else text, insert))
    edited = parse_policy(apply_edits(source, reps), str(path))
    assert decide(edited, profile="strict" if profile == "strict" else "partitioned").verdict == "safe"
    for change in fix["changes"]:
        key, new = change["knob"], change["to"]
        if key == "turn_tokens":
            assert edited.turn_max == new
        elif key.startswith("stage."):
            _, i, name = key.split(".")
            assert getattr(edited.stages[int(i)], name) == new
        else:
            assert getattr(edited, key) == new


def suggest_both(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """One search, rendered as JSON and SARIF (as check-config --suggest renders it)."""
    lines: list[str] = []
    policy = load_policy(str(path))
    decision = decide(policy)
    report = Report(policy, decision, suggest(policy, decision, Budget(), progress=lines.append))
    entry = entry_of(render_json([report]))
    results = json.loads(render_sarif([report]))["runs"][0]["results"]
    errors = [r for r in results if r["level"] == "error"]
    assert errors and all(r.get("fixes") == errors[0].get("fixes") for r in errors)
    return entry, errors[0].get("fixes", []), "\n".join(lines)


def test_seed_incident_needs_several_knobs_and_every_fix_is_safe_and_sane() -> None:
    """No single knob repairs the seed's incident; the fixes move several, each re-checked."""
    entry, sarif_fixes, err = suggest_both(SEED)
    fixes = entry["fixes"]
    assert fixes and entry["suggest"]["complete"]
    assert all(len(f["changes"]) >= 2 for f in fixes)
    assert len(sarif_fixes) == len(fixes)
    policy = load_policy(str(SEED))
    for fix, sarif_fix in zip(fixes, sarif_fixes, strict=True):
        assert fix["verdict"] == "safe"
        recheck(SEED, fix, sarif_fix, "partitioned")
        for c in fix["changes"]:
            if c["knob"] == "stage.0.limit":  # no window: the 160k truncator is the hard ceiling
                assert c["to"] <= 160000
            if c["knob"] == "turn_tokens":
                assert c["to"] >= sane_turn_floor(policy) >= 5000
    # the single-knob searches were tried and pruned or failed, each probe on stderr
    assert "probe 1/" in err and "-> unsafe" in err and "re-check:" in err
    assert any("no safe value" in p or "monotone" in p for p in entry["suggest"]["pruned"])


def test_no_ceiling_above_the_window(tmp_path: Path) -> None:
    text = SEED.read_text(encoding="utf-8").replace("floor = 12\n", "window = 200000\nfloor = 12\n")
    path = tmp_path / "seed-window.toml"
    path.write_text(text, encoding="utf-8")
    entry, sarif_fixes, _ = suggest_both(path)
    raised = [c for f in entry["fixes"] for c in f["changes"] if c["knob"] == "stage.0.limit"]
    assert raised and all(160000 < c["to"] <= 200000 for c in raised)
    for fix, sarif_fix in zip(entry["fixes"], sarif_fixes, strict=True):
        recheck(path, fix, sarif_fix, "partitioned")


def test_langchain_at_real_sizes_exact_input_limit(tmp_path: Path) -> None:
    """One monotone knob: the boundary is exact (169,980 safe, 169,979 not), found in seconds."""
    path = tmp_path / "langchain-real.toml"
    path.write_text(LANGCHAIN_REAL, encoding="utf-8")
    start = time.process_time()
    code, out, _ = run_cli("check-config", "--format", "json", "--suggest", str(path))
    assert code == 1 and time.process_time() - start < 30
    [single] = [f for f in entry_of(out)["fixes"] if len(f["changes"]) == 1]
    assert single["changes"][0] == {"knob": "stage.0.input_limit", "line": 14, "from": 4000,
                                    "to": 169980, "beyond": 169979, "beyond_verdict": "unsafe"}
    assert single["weakens_requirement"] is False


def test_strict_profile_suggests_input_all() -> None:
    path = EX / "langchain-no-trim.toml"
    code, out, _ = run_cli("check-config", "--profile", "strict", "--format", "json", "--suggest",
                           str(path))
    assert code == 1
    fixes = entry_of(out)["fixes"]
    assert {"knob": "stage.0.input", "from": "candidates", "to": "all"}.items() <= \
        fixes[0]["changes"][0].items()


def test_text_lists_each_fix_and_how_the_search_went() -> None:
    code, out, err = run_cli("check-config", "--suggest", str(SEED))
    assert code == 1
    assert "  suggest 1: " in out and "re-checked safe" in out
    assert "  suggest: search complete (" in out
    assert err.startswith(f"suggest: {SEED}: searching")


def test_a_stop_keeps_the_fixes_verified_before_it() -> None:
    """The flag set right after the first verified fix: that fix is kept, nothing after it."""
    policy = load_policy(str(SEED))
    decision = decide(policy)
    flag = StopFlag()
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("re-check:") and line.endswith(")") and "-> safe" in line:
            flag.set("test")

    outcome = suggest(policy, decision, Budget(), flag=flag, progress=progress)
    assert outcome.stopped == "test" and len(outcome.fixes) == 1
    assert outcome.fixes[0].verdict == "safe"
    assert not any(line.startswith("probe") for line in lines[lines.index(next(
        x for x in lines if x.startswith("re-check:"))) + 1:])


SMALL_LANGCHAIN = """\
name = "small-langchain"
turn_tokens = [1, 800]
messages_per_turn = [1, 2]
floor = 2
floor_unit = "messages"

[framework]
name = "langchain.SummarizationMiddleware"
window = 20000
trigger = ["tokens", 17000]
keep = ["messages", 4]
trim_tokens_to_summarize = 400
"""


def test_a_stop_while_tightening_a_monotone_knob_keeps_its_safest_value(tmp_path: Path) -> None:
    """A monotone knob safe at its safest value is a verified fix before the bisection that
    tightens it starts: a stop during the bisection (a --timeout on a slow policy) still
    prints it. Here the trim is safe at the window (20,000) and tightens to 16,998."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL_LANGCHAIN)
    policy = load_policy(str(path))
    flag, seen = StopFlag(), []

    def progress(line: str) -> None:
        seen.append(line)
        if line.startswith("probe") and any(x.startswith("re-check:") for x in seen[:-1]):
            flag.set("test")

    outcome = suggest(policy, decide(policy), Budget(), flag=flag, progress=progress)
    assert outcome.stopped == "test"
    [fix] = outcome.fixes
    assert [(c.key, c.new) for c in fix.changes] == [("framework.trim_tokens_to_summarize", 20000)]
    complete = suggest(policy, decide(policy), Budget())
    assert ("framework.trim_tokens_to_summarize", 16998) in [
        (c.key, c.new) for f in complete.fixes for c in f.changes]


def test_timeout_prints_no_fix_and_the_verdicts_exit_code(tmp_path: Path) -> None:
    path = tmp_path / "langchain-real.toml"
    path.write_text(LANGCHAIN_REAL, encoding="utf-8")
    start = time.monotonic()
    code, out, _ = run_cli("check-config", "--suggest", "--timeout", "0.01", str(path))
    assert code == 1 and time.monotonic() - start < 20
    assert "suggest: no verified fix found (stopped by timeout" in out
    code, _, err = run_cli("check-config", "--suggest", "--timeout", "0", str(path))
    assert code == 2 and "--timeout must be > 0" in err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_prints_the_best_so_far(tmp_path: Path, sig: signal.Signals) -> None:
    text = SEED.read_text(encoding="utf-8").replace("floor = 12\n", "window = 200000\nfloor = 12\n")
    path = tmp_path / "seed-window.toml"
    path.write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tailguard", "check-config", "--format", "json", "--suggest",
         str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    for line in proc.stderr:  # the first verified fix, then the signal
        if line.startswith("re-check:") and "-> safe" in line:
            proc.send_signal(sig)
            break
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    entry = entry_of(out)
    assert entry["suggest"]["stopped"] == sig.name and not entry["suggest"]["complete"]
    assert entry["fixes"] and all(f["verdict"] == "safe" for f in entry["fixes"])


# -- monotonicity (suggest_knobs' proof, checked on the executable model) -------------------

@st.composite
def policies(draw: st.DrawFn) -> Policy:
    stages: list[Truncate | Compact] = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            stages.append(Truncate(draw(st.sampled_from(["turns", "tokens"])), draw(st.integers(1, 16))))
        else:
            stages.append(Compact(
                draw(st.sampled_from(["turns", "tokens"])), draw(st.integers(1, 16)),
                draw(st.sampled_from(["turns", "tokens"])), draw(st.integers(0, 8)),
                draw(st.integers(0, 4)), draw(st.integers(0, 12)),
                input=draw(st.sampled_from(["candidates", "all"]))))
    lo = draw(st.integers(1, 3))
    return Policy("p", lo, lo + draw(st.integers(0, 4)), draw(st.integers(0, 10)),
                  draw(st.sampled_from(["turns", "tokens"])), tuple(stages),
                  base_tokens=draw(st.integers(0, 3)), keep_first=draw(st.integers(0, 2)),
                  window=draw(st.sampled_from([0, 12, 20])))


def run(policy: Policy, trace: list[int], profile: str) -> tuple[list[Any], list[set[Any]]]:
    state, states, found = State(), [], []
    for size in trace:
        findings = step(policy, state, size, profile="strict" if profile == "strict" else "partitioned")
        # each finding as (kind, stage, offset) per offset it names, or (kind, stage, -1)
        found.append({(f.kind, f.stage, o) for f in findings for o in (f.offsets or (-1,))})
        states.append((tuple(state.verbatim), state.summary, state.summary_tokens, state.body))
    return states, found


@settings(max_examples=300, deadline=None)
@given(policies(), st.data(), st.sampled_from(["partitioned", "strict"]))
def test_floor_input_limit_and_turn_max_are_monotone(policy: Policy, data: st.DataObject,
                                                    profile: str) -> None:
    """For a fixed session the states do not depend on floor, input_limit or turn_max, and
    the findings at the safer value are a subset: the property the pruning relies on."""
    trace = data.draw(st.lists(st.integers(policy.turn_min, policy.turn_max), max_size=30))
    states, found = run(policy, trace, profile)
    lower = Policy(**{**policy.__dict__, "floor": data.draw(st.integers(0, policy.floor))})
    s2, f2 = run(lower, trace, profile)
    assert s2 == states and all(a <= b for a, b in zip(f2, found, strict=True))
    wider = tuple(
        Compact(**{**s.__dict__, "input_limit": data.draw(st.sampled_from(
            [0, s.input_limit + data.draw(st.integers(0, 8))]))}) if isinstance(s, Compact)
        and s.input_limit else s for s in policy.stages)
    s3, f3 = run(Policy(**{**policy.__dict__, "stages": wider}), trace, profile)
    assert s3 == states and all(a <= b for a, b in zip(f3, found, strict=True))
    bigger = Policy(**{**policy.__dict__, "turn_max": policy.turn_max + 5})
    assert run(bigger, trace, profile) == (states, found)


def test_knob_ranges_are_sane() -> None:
    policy = load_policy(str(SEED))
    table = {(k.stage, k.field, k.direction): k for k in knobs(policy, "partitioned")}
    assert (0, "limit", 1) not in table  # no window: the hard ceiling stays
    assert table[(1, "trigger", -1)].lo == 40000  # a quarter of 160k
    assert table[(None, "turn_max", -1)].lo == 5000
    assert table[(None, "floor", -1)].lo == 3


def test_a_preset_fix_edits_the_frameworks_own_knob() -> None:
    """A preset policy (brief 6c) states no stage keys: the fix names and edits the framework
    knob that translates to the fixed value (runs once the presets are in the package)."""
    pytest.importorskip("tailguard.pipeline.presets")
    path = EX.parent / "presets" / "langchain-defaults.toml"
    entry, sarif_fixes, _ = suggest_both(path)
    [fix] = [f for f in entry["fixes"] if len(f["changes"]) == 1]
    change = fix["changes"][0]
    assert (change["knob"], change["translates_to"]) == \
        ("framework.trim_tokens_to_summarize", "stage.0.input_limit")
    line = path.read_text(encoding="utf-8").splitlines()[change["line"] - 1]
    assert line.startswith("trim_tokens_to_summarize")
    source = path.read_text(encoding="utf-8").splitlines()
    [rep] = sarif_fixes[0]["artifactChanges"][0]["replacements"]
    edited = apply_edits(source, [Replacement(rep["deletedRegion"]["startLine"],
                                              rep["insertedContent"]["text"])])
    policy = parse_policy(edited, str(path))
    assert policy.stages[0].input_limit == change["to"]  # type: ignore[union-attr]
    assert decide(policy).verdict == "safe"


def test_a_fix_the_recheck_does_not_prove_safe_is_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The re-check of the edited file is what decides: make it fail and nothing is printed."""
    from tailguard.pipeline import suggest as module

    policy = load_policy(str(SEED))
    decision = decide(policy)
    real = module.Search.decide

    def recheck_says_unknown(self: Any, target: Policy, budget: Budget, ignore_static: bool = False) -> Any:
        got = real(self, target, budget, ignore_static)
        if budget is self.budget:  # the re-check (probes use the smaller probe budgets)
            return replace(got, verdict="unknown")
        return got

    monkeypatch.setattr(module.Search, "decide", recheck_says_unknown)
    outcome = suggest(policy, decision, Budget())
    assert outcome.fixes == []
    assert any("the re-check unknown" in p for p in outcome.pruned)
