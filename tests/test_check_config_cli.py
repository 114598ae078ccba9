"""``tailguard check-config``: exit codes, JSON/SARIF shapes, event logs the audit judges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import run_cli

EX = Path(__file__).resolve().parents[1] / "examples" / "policies"
SEED, REPAIRED = str(EX / "seed-incident.toml"), str(EX / "seed-repaired.toml")
OPENHANDS = str(EX / "openhands-window-then-summarizer.toml")
LANGCHAIN = str(EX / "langchain-no-trim.toml")


def one(out: str) -> dict[str, Any]:
    """The only policy of a JSON report (brief 7b's shape)."""
    data = json.loads(out)
    assert set(data) == {"verdict", "policies"} and len(data["policies"]) == 1
    entry: dict[str, Any] = data["policies"][0]
    assert data["verdict"] == entry["verdict"]
    return entry


def test_safe_exit_0_and_json_object() -> None:
    code, out, _ = run_cli("check-config", "--format", "json", REPAIRED)
    assert code == 0
    data = one(out)
    assert data["verdict"] == "safe" and data["findings"] == []


def test_unsafe_exit_1_same_json_shape_for_several() -> None:
    code, out, _ = run_cli("check-config", "--format", "json", SEED, REPAIRED)
    assert code == 1
    data = json.loads(out)
    assert data["verdict"] == "unsafe"
    seed, repaired = data["policies"]
    assert (seed["file"], repaired["file"]) == (SEED, REPAIRED)
    assert (seed["verdict"], repaired["verdict"]) == ("unsafe", "safe")
    kinds = {(f["kind"], f["stage"]) for f in seed["findings"]}
    assert kinds == {("unenforceable", 0), ("hole", 0)}
    hole = next(f for f in seed["findings"] if f["kind"] == "hole")
    assert len(hole["trace"]) == 9 and hole["explanation"]


def test_unknown_exit_3_names_budget() -> None:
    # a small solver budget (1M units, not the default 100M) runs out in seconds, not a
    # minute; a safe policy (the concrete falsifier breaks the unsafe examples at any budget,
    # and never proves anything), whose proof needs more than 1M units
    halt = str(Path(OPENHANDS).with_name("deepagents-offload-halt.toml"))
    code, out, _ = run_cli("check-config", "--format", "json", "--depth", "5", "--budget", "1", halt)
    assert code == 3
    data = one(out)
    assert data["verdict"] == "unknown" and "budget" in data["unknown_reason"]
    assert "--depth 5" in data["unknown_reason"] and "(now 1)" in data["unknown_reason"]
    assert data["exhausted"] in ("depth", "budget")


def test_bad_input_exit_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('turn_tokens = [1, 5]\nfloor = 2\nfloor_unit = "turn"\n', encoding="utf-8")
    code, out, err = run_cli("check-config", str(bad))
    assert code == 2 and out == ""
    assert f"{bad}:3: floor_unit: unit must be" in err and "Traceback" not in err
    code, _, err = run_cli("check-config", str(tmp_path / "missing.toml"))
    assert code == 2 and "missing.toml:0: file:" in err


def test_sarif_points_at_stage_line() -> None:
    code, out, _ = run_cli("check-config", "--format", "sarif", SEED)
    assert code == 1
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0"
    regions = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
               for r in sarif["runs"][0]["results"]}
    assert regions == {("unenforceable", 9), ("hole", 9)}


def test_text_reads_like_a_linter() -> None:
    code, out, _ = run_cli("check-config", SEED)
    assert code == 1
    assert f"{SEED}:9: hole: stage 0 (truncate tokens > 160000, line 9) drops" in out
    assert "session (9 appends" in out and "fix:" in out


@pytest.mark.parametrize("profile", ["partitioned", "strict"])
def test_emitted_trace_makes_the_audit_report_the_loss(tmp_path: Path, profile: str) -> None:
    """Audited under the same profile, the emitted log allows every compaction before the
    model's loss and refuses the one that judges it, its last line."""
    for policy in sorted(EX.glob("*.toml")):
        log = tmp_path / f"{policy.stem}-{profile}.jsonl"
        code, _, _ = run_cli("check-config", "--profile", profile, "--emit-trace", str(log), str(policy))
        if code == 0:
            assert not log.exists()
            continue
        lines = log.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        assert header["event"] == "session" and header["unit"] == header["floor_unit"]
        assert header["source"]["profile"] == profile
        code, out, _ = run_cli("audit", "--profile", profile, "--format", "json", str(log))
        assert code == 1, out
        judged = json.loads(out)["compactions"]
        assert [c["decision"] for c in judged] == ["allow"] * (len(judged) - 1) + ["refuse"], policy
        assert judged[-1]["line"] == len(lines)
        assert {"no_hole", "floor_in_tail", "floor_in_input"} & set(judged[-1]["failed"])


def test_profile_flag_and_reports_name_it() -> None:
    code, out, _ = run_cli("check-config", "--format", "json", LANGCHAIN)
    assert code == 0
    data = one(out)
    assert (data["verdict"], data["profile"]) == ("safe", "partitioned")
    code, out, _ = run_cli("check-config", "--profile", "strict", "--format", "json", LANGCHAIN)
    assert code == 1
    data = one(out)
    assert (data["verdict"], data["profile"]) == ("unsafe", "strict")
    [floor] = data["findings"]
    assert floor["kind"] == "floor" and floor["detail"] == "floor turns not in the summarizer input"
    assert "summarizer" in floor["explanation"] and floor["trace"]
    code, out, _ = run_cli("check-config", "--profile", "strict", LANGCHAIN)
    assert code == 1 and "profile strict" in out
    assert "fix: show the summarizer the tail too" in out
    code, out, _ = run_cli("check-config", REPAIRED)
    assert code == 0 and "profile partitioned" in out
    code, out, _ = run_cli("check-config", "--profile", "strict", "--format", "sarif", LANGCHAIN)
    run = json.loads(out)["runs"][0]
    assert run["properties"]["profile"] == "strict"
    assert [(r["ruleId"], r["properties"]["profile"]) for r in run["results"]] == [("floor", "strict")]
    code, out, _ = run_cli("check-config", "--profile", "seed", LANGCHAIN)  # argparse: usage error
    assert code == 2 and out == ""


def test_suggest_boundary_is_exact(tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text(
        'turn_tokens = [1, 3]\nfloor = 2\nfloor_unit = "tokens"\n'
        '[[stage]]\nkind = "truncate"\nunit = "tokens"\nlimit = 12\n'
        '[[stage]]\nkind = "compact"\ntrigger_unit = "tokens"\ntrigger = 11\n'
        'keep_unit = "turns"\nkeep = 2\nsummary_tokens = 1\n', encoding="utf-8")
    code, out, _ = run_cli("check-config", "--format", "json", "--suggest", str(policy))
    assert code == 1
    singles = {f["changes"][0]["knob"]: f["changes"][0] for f in one(out)["fixes"]
               if len(f["changes"]) == 1}
    trig = singles["stage.1.trigger"]
    assert (trig["to"], trig["beyond"], trig["beyond_verdict"]) == (10, 11, "unsafe")
    # no window: the truncator's 12 tokens are the hard ceiling, never raised; and turns of
    # at most 3 tokens are not shrunk further (sane turn sizes, docs/check-config.md)
    assert "stage.0.limit" not in singles and "turn_tokens" not in singles


def test_a_bad_file_is_reported_in_place_and_the_others_are_checked(tmp_path: Path) -> None:
    """Issue 10 point 6: one malformed file in a batch used to empty the whole output."""
    bad = tmp_path / "bad.toml"
    bad.write_text('turn_tokens = [1, 5]\nfloor = 2\nfloor_unit = "turn"\n', encoding="utf-8")
    code, out, err = run_cli("check-config", "--format", "json", SEED, str(bad), REPAIRED)
    assert code == 2 and f"{bad}:3: floor_unit: unit must be" in err
    data = json.loads(out)
    assert data["verdict"] == "error"
    assert [e["verdict"] for e in data["policies"]] == ["unsafe", "error", "safe"]
    entry = data["policies"][1]
    assert (entry["file"], entry["line"], entry["key"]) == (str(bad), 3, "floor_unit")
    assert entry["error"].startswith(f"{bad}:3: floor_unit: unit must be")
    code, out, _ = run_cli("check-config", "--format", "sarif", SEED, str(bad))
    assert code == 2
    results = json.loads(out)["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"unenforceable", "hole", "input"}
    [error] = [r for r in results if r["ruleId"] == "input"]
    assert error["level"] == "error"
    assert error["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    code, out, err = run_cli("check-config", str(bad), REPAIRED)
    assert code == 2 and "safe: seed-repaired" in out and str(bad) not in out
    assert f"{bad}:3: floor_unit: unit must be" in err


def test_sarif_has_version_rule_help_relative_uris_code_flow_and_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 point 6."""
    import tailguard

    monkeypatch.chdir(EX.parents[1])
    code, out, _ = run_cli("check-config", "--format", "sarif", SEED)
    assert code == 1
    run = json.loads(out)["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["version"] == tailguard.__version__
    assert driver["properties"]["spec_version"] == tailguard.SPEC_VERSION
    assert all(r["fullDescription"]["text"] and r["help"]["text"] for r in driver["rules"])
    ids = {r["id"] for r in driver["rules"]}
    assert {r["ruleId"] for r in run["results"]} <= ids
    for result in run["results"]:
        where = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert where == {"uri": "examples/policies/seed-incident.toml", "uriBaseId": "%SRCROOT%"}
    [hole] = [r for r in run["results"] if r["ruleId"] == "hole"]
    steps = hole["codeFlows"][0]["threadFlows"][0]["locations"]
    texts = [s["location"]["message"]["text"] for s in steps]
    assert texts[:2] == ["append 1: 20000 tokens", "append 2: 20000 tokens"]
    assert texts[-1].startswith("append 9: 1 tokens; hole at stage 0: stage 0 (truncate")
    assert [s["executionOrder"] for s in steps] == list(range(1, 10))
    [unenforceable] = [r for r in run["results"] if r["ruleId"] == "unenforceable"]
    assert "codeFlows" not in unenforceable
    outside = tmp_path / "p.toml"
    outside.write_text(
        'turn_tokens = [1, 3]\nfloor = 2\nfloor_unit = "tokens"\n'
        '[[stage]]\nkind = "truncate"\nunit = "tokens"\nlimit = 12\n'
        '[[stage]]\nkind = "compact"\ntrigger_unit = "tokens"\ntrigger = 11\n'
        'keep_unit = "turns"\nkeep = 2\nsummary_tokens = 1\n', encoding="utf-8")
    code, out, _ = run_cli("check-config", "--format", "sarif", "--suggest", str(outside))
    assert code == 1
    results = json.loads(out)["runs"][0]["results"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"] == \
        {"uri": outside.resolve().as_uri()}
    fixes = results[0]["fixes"]
    changes = {(f["artifactChanges"][0]["replacements"][0]["deletedRegion"]["startLine"],
                f["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"])
               for f in fixes}
    assert (11, "trigger = 10") in changes
    assert all(r["fixes"] == fixes for r in results if r["level"] == "error")


def test_json_findings_carry_append_number_and_offsets() -> None:
    code, out, _ = run_cli("check-config", "--format", "json", SEED)
    assert code == 1
    hole = next(f for f in one(out)["findings"] if f["kind"] == "hole")
    assert (hole["step"], hole["offsets"], len(hole["trace"])) == (9, [0], 9)
