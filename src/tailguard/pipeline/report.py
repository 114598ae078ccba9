"""Rendering of check-config results: text (linter style), JSON and SARIF 2.1.0."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tailguard.base.safeio import printable
from tailguard.pipeline.model import ARGS_CLIPPED, FLOOR_INPUT, SUMMARY_DROPPED, Finding
from tailguard.pipeline.policy import ClipArgs, Compact, Policy, Spill, Truncate
from tailguard.pipeline.solver import Decision
from tailguard.pipeline.suggest import Fix, Outcome

RULES: dict[str, str] = {
    "hole": "a turn leaves the context without ever being summarized",
    "floor": "a compaction leaves part of the recovery floor out of the context (profile strict: or "
             "out of the summarizer's input)",
    "overflow": "the context stays over a truncate limit with nothing left to drop, or over the "
                "model's window after the stages",
    "unenforceable": "the recovery floor's unit differs from the unit of a truncator that can fire",
    "dead_stage": "note: a truncate stage that no session ever reaches (the policy is safe without "
                  "it; a unit mismatch there is harmless)",
    "unreachable": "note: a compact stage whose trigger is above every occupancy the stages before "
                   "it allow, so it never fires, or above the window",
    "unknown": "the checker ran out of budget before deciding",
    "input": "the policy file cannot be read or parsed (exit 2)",
}

FULL: dict[str, str] = {
    "hole": "Some session of the policy makes a stage remove a turn that no summary covers: a "
            "truncate stage drops it, or a compaction's summarizer input limit leaves it unseen. "
            "Nothing in the context or in any summary can bring it back.",
    "floor": "After some compaction, part of the recovery floor (the newest F units of the "
             "history) is not verbatim in the context; under --profile strict, or not in what "
             "the summarizer was shown.",
    "overflow": "Some session leaves the context over a truncate stage's limit with nothing left "
                "to drop (base, pinned turns and the summary alone exceed it), or over the "
                "model's window once every stage has run.",
    "unenforceable": "The floor is counted in one unit and a truncate stage that can fire "
                     "evicts in another, so no truncation can honour the floor.",
    "dead_stage": "A truncate stage that no session of any length reaches: the policy is proved "
                  "safe without it ever firing.",
    "unreachable": "A compact stage whose trigger is above every occupancy the stages before it "
                   "allow, so it never fires before a loss, or above the model's window, so it "
                   "fires only on a context the model cannot take.",
    "unknown": "The checker ran out of a budget (--budget or --depth) before it could prove the "
               "policy safe or find a failing session. Unknown is never a pass.",
    "input": "The policy file cannot be read or parsed; the message names the line and key.",
}

HINTS: dict[str, str] = {
    "hole": "compact earlier (lower the trigger), raise the limit, or lift input_limit",
    "floor": "keep at least the floor verbatim (raise keep) or lower the floor",
    "overflow": "raise the limit or shrink what cannot be dropped (base, pinned, summary); over "
                "the window: truncate or compact below it",
    "unenforceable": "express the floor in the truncator's unit",
    "dead_stage": "nothing to fix; keep it as a safety net or remove it",
    "unreachable": "lower the trigger below the limit of the truncate stage before it (or below "
                   "the window), or run the compact stage first",
    "unknown": "raise the budget the message names (--budget or --depth)",
    "input": "fix the key the message names (docs/check-config.md, Policy format)",
}
HINT_FLOOR_INPUT = ("show the summarizer the tail too (input = \"all\"), or, if the framework "
                    "keeps the tail verbatim without summarizing it, check and audit with "
                    "--profile partitioned")


HINT_ARGS_CLIPPED = ("switch argument clipping off (deepagents: truncate_args_settings = false), "
                     "or raise its trigger or keep above what the context holds")


def hint(f: Finding) -> str:
    """The fix sentence for a finding."""
    if f.kind == "hole" and f.detail == ARGS_CLIPPED:
        return HINT_ARGS_CLIPPED
    return HINT_FLOOR_INPUT if f.kind == "floor" and f.detail == FLOOR_INPUT else HINTS[f.kind]


@dataclass
class Report:
    """One policy's result, with the outcome of ``--suggest`` when it ran."""

    policy: Policy
    decision: Decision
    suggested: Outcome | None = None

    @property
    def fixes(self) -> list[Fix]:
        return self.suggested.fixes if self.suggested else []


@dataclass(frozen=True)
class BadFile:
    """A file that could not be read or parsed, reported in place of its policy (verdict
    ``error``); ``message`` is ``FILE:LINE: key: reason``."""

    file: str
    line: int
    key: str
    reason: str
    message: str


Entry = Report | BadFile


def overall(entries: list[Entry]) -> str:
    """The verdict the exit code reports: ``error`` (2) if any file is unusable, else
    ``unsafe`` (1) if any policy is, else ``unknown`` (3) if any is, else ``safe`` (0)."""
    verdicts = {"error" if isinstance(e, BadFile) else e.decision.verdict for e in entries}
    for verdict in ("error", "unsafe", "unknown"):
        if verdict in verdicts:
            return verdict
    return "safe"


EXIT_CODES = {"safe": 0, "unsafe": 1, "error": 2, "unknown": 3}


def finding_line(policy: Policy, f: Finding) -> int:
    """The source line a finding points at: its stage's, the ``window`` key's, else 1."""
    if 0 <= f.stage < len(policy.stages):
        return policy.stages[f.stage].line
    if f.stage == len(policy.stages) and policy.window:
        return policy.line_of("window")
    return 1


def describe_stage(policy: Policy, index: int) -> str:
    """``stage 0 (truncate tokens > 160000, line 9)``."""
    if index == len(policy.stages) and policy.window:
        return f"the window ({policy.window} tokens, line {policy.line_of('window')})"
    if not 0 <= index < len(policy.stages):
        return "the policy"
    s = policy.stages[index]
    if isinstance(s, Truncate):
        what = f"truncate {s.unit} > {s.limit}"
    elif isinstance(s, Spill):
        what = f"spill, on failure {s.on_failure}"
    elif isinstance(s, ClipArgs):
        what = (f"clip_args at {s.trigger} {s.trigger_unit}, keep {s.keep} {s.keep_unit}, "
                f"turns of >= {s.min_tokens} tokens")
    else:
        assert isinstance(s, Compact)
        what = f"compact at {s.describe_trigger()}, keep {s.keep} {s.keep_unit}"
        if s.keep_less_pinned:
            what += " pinned included"
    return f"stage {index} ({what}, line {s.line})"


def _ranges(offsets: tuple[int, ...]) -> str:
    """``turns [3, 5), [7, 8)``: maximal runs of turn indices."""
    runs: list[list[int]] = []
    for i in sorted(offsets):
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return "turns " + ", ".join(f"[{lo}, {hi})" for lo, hi in runs) if runs else ""


def explain(policy: Policy, f: Finding) -> str:
    """One sentence: what breaks, where."""
    where = describe_stage(policy, f.stage)
    if f.kind == "unenforceable":
        why = "it evicts in the failing session" if f.detail.endswith("this session") else \
            "it was not proved dead"
        return f"{where}: the floor is {policy.floor} {policy.floor_unit} but this stage " \
               f"truncates in another unit, so no truncation can honour it ({why})"
    if f.kind == "dead_stage" and isinstance(policy.stages[f.stage], Spill):
        return f"{where} never writes: no compact stage follows it"
    if f.kind == "dead_stage":
        return f"{where} never fires: no session of any length reaches its limit"
    if f.kind == "unreachable" and f.offsets[0] == len(policy.stages):
        return f"{where} fires only on a context already over the model's window: its trigger " \
               f"is above {describe_stage(policy, f.offsets[0])}"
    if f.kind == "unreachable":
        return f"{where} can never fire before a loss: its trigger is above what " \
               f"{describe_stage(policy, f.offsets[0])} lets through"
    if f.kind == "hole" and f.detail == SUMMARY_DROPPED:
        return f"{where} after append {f.step} does not show the earlier summary whole to the " \
               f"summarizer (summary = \"message\"): {_ranges(f.offsets)}, which only it held, " \
               f"are lost"
    if f.kind == "hole" and f.detail == ARGS_CLIPPED:
        return f"{where} clips the tool-call arguments of {_ranges(f.offsets)} after append {f.step}: " \
               f"the model, the offload and the summarizer get only the clipped view, so the " \
               f"arguments are held nowhere"
    if f.kind == "hole":
        verb = "drops" if isinstance(policy.stages[f.stage], Truncate) else "hides from the summarizer"
        return f"{where} {verb} {_ranges(f.offsets)} after append {f.step}: never summarized"
    if f.kind == "floor" and f.detail == FLOOR_INPUT:
        return f"{where} after append {f.step} summarizes without showing floor " \
               f"{_ranges(f.offsets)} to the summarizer (floor {policy.floor} {policy.floor_unit}; " \
               f"profile strict: the floor must be in the summarizer input)"
    if f.kind == "floor":
        return f"{where} after append {f.step} leaves floor {_ranges(f.offsets)} out of the " \
               f"context (floor {policy.floor} {policy.floor_unit})"
    if f.stage == len(policy.stages):
        return f"{where} is exceeded after append {f.step}: {f.detail} once every stage has run"
    return f"{where} after append {f.step}: {f.detail} with nothing left to drop"


def to_json(r: Report) -> dict[str, Any]:
    """The stable JSON shape: verdict and findings, plus how it was decided."""
    d = r.decision
    findings = [
        {"kind": f.kind, "stage": f.stage, "step": f.step, "offsets": list(f.offsets),
         "trace": [] if f.kind == "unenforceable" else list(d.trace),
         "explanation": explain(r.policy, f), "detail": f.detail, "line": finding_line(r.policy, f),
         **({"messages": list(d.messages)} if d.messages and f.kind != "unenforceable" else {}),
         **({"spill_failures": list(d.failures)} if d.failures and f.kind != "unenforceable" else {})}
        for f in d.findings
    ]
    out: dict[str, Any] = {"file": r.policy.file, "name": r.policy.name, "profile": d.profile,
                           "verdict": d.verdict, "findings": findings, "method": d.method,
                           "seconds": round(d.seconds, 3)}
    if d.detail:
        out["unknown_reason" if d.verdict == "unknown" else "detail"] = d.detail
    if d.exhausted:
        out["exhausted"] = d.exhausted
    if d.notes:
        out["notes"] = [{"kind": f.kind, "stage": f.stage, "line": r.policy.stages[f.stage].line,
                         "explanation": explain(r.policy, f), "detail": f.detail} for f in d.notes]
    if r.suggested is not None:
        out["fixes"] = [f.as_json() for f in r.suggested.fixes]
        out["suggest"] = r.suggested.as_json()
    return out


def render_text(reports: list[Entry]) -> str:
    """Linter-style text: ``FILE:LINE: kind: explanation`` then the session and the fix.
    A bad file is left out: its ``FILE:LINE: key: reason`` went to stderr, as for every
    command, and printing it twice on a terminal helps no one."""
    lines: list[str] = []
    for r in reports:
        if isinstance(r, BadFile):
            continue
        d, p = r.decision, r.policy
        p = replace(p, name=printable(p.name), file=printable(p.file))  # shown, not obeyed
        if d.verdict == "safe":
            lines.append(f"{p.file}: safe: {p.name}: no session of any length loses a turn "
                         f"(profile {d.profile}; {d.method}, {d.seconds:.2f}s)")
        elif d.verdict == "unknown":
            lines.append(f"{p.file}:1: unknown: {p.name}: {d.detail} (profile {d.profile})")
        for f in d.notes:
            lines.append(f"{p.file}:{p.stages[f.stage].line}: note: {f.kind}: {explain(p, f)}")
        for f in d.findings:
            line = finding_line(p, f)
            lines.append(f"{p.file}:{line}: {f.kind}: {explain(p, f)}")
            fields = _fields(f)
            if fields:
                lines.append(f"  {fields}")
            if f.kind != "unenforceable" and d.trace:
                lines.append(f"  session ({len(d.trace)} appends, tokens each): {_trace(d.trace)}")
                if d.messages:
                    lines.append(f"  messages each: {_trace(d.messages)}")
                if d.failures:
                    lines.append(f"  spill writes fail at appends: {_trace(d.failures)}")
            lines.append(f"  fix: {hint(f)}")
        if r.suggested is not None:
            lines.extend(_suggest_text(r))
        if d.verdict == "unsafe":
            kinds = ", ".join(sorted({f.kind for f in d.findings}))
            lines.append(f"{p.file}: unsafe: {p.name}: {len(d.findings)} finding(s) ({kinds}), "
                         f"profile {d.profile}, {d.seconds:.2f}s")
    return "\n".join(lines) + "\n" if lines else ""


def _fields(f: Finding) -> str:
    """The finding's machine-readable fields: ``append=9 stage=0 offsets=[0, 1)`` (the
    append is 1-based; the offsets are turn indices, as maximal half-open runs)."""
    if f.kind in ("unenforceable", "dead_stage", "unreachable"):
        return ""
    out = f"append={f.step} stage={f.stage}"
    if f.offsets:
        out += f" offsets={_ranges(f.offsets).removeprefix('turns ')}"
    return out


def _suggest_text(r: Report) -> list[str]:
    """``--suggest``'s lines: each verified fix, then how the search went."""
    o = r.suggested
    assert o is not None
    lines = []
    for n, fix in enumerate(o.fixes, start=1):
        moved = ", ".join(f"{c.key} {c.old} -> {c.new} (line {c.line})" for c in fix.changes)
        weak = "; weakens a requirement" if fix.requirement else ""
        lines.append(f"  suggest {n}: {moved}: re-checked {fix.verdict} ({fix.found_by}{weak})")
        for c in fix.changes:
            if c.beyond is not None:
                lines.append(f"    {c.key} = {c.beyond} is {c.beyond_verdict or 'not safe'}")
    how = f"{o.probes} probes ({o.refuted} refuted by replaying a known failing session), " \
          f"{o.seconds:.1f} s"
    if not o.fixes:
        why = f"stopped by {o.stopped}" if o.stopped else "searched every sane range"
        lines.append(f"  suggest: no verified fix found ({why}; {how})")
    elif o.stopped:
        lines.append(f"  suggest: stopped by {o.stopped}: the best fixes so far ({how})")
    else:
        lines.append(f"  suggest: search complete ({how})")
    return lines


def _trace(trace: tuple[int, ...]) -> str:
    parts: list[str] = []
    i = 0
    while i < len(trace):
        j = i
        while j < len(trace) and trace[j] == trace[i]:
            j += 1
        parts.append(f"{trace[i]}" if j - i == 1 else f"{trace[i]} x{j - i}")
        i = j
    return ", ".join(parts)


def bad_json(b: BadFile) -> dict[str, Any]:
    """A bad file's entry in ``policies``."""
    return {"file": b.file, "verdict": "error", "findings": [], "line": b.line, "key": b.key,
            "error": b.message}


def render_json(reports: list[Entry]) -> str:
    """Brief 7b: one shape whatever the number of files, ``{"verdict": OVERALL, "policies":
    [...]}``, OVERALL being the verdict the exit code reports; a bad file is an entry with
    verdict ``error`` in its place."""
    data = {"verdict": overall(reports),
            "policies": [bad_json(r) if isinstance(r, BadFile) else to_json(r) for r in reports]}
    return json.dumps(data, indent=2) + "\n"


def sarif_uri(file: str) -> dict[str, str]:
    """A normalized artifact location: relative to the working directory (``uriBaseId``
    ``%SRCROOT%``, forward slashes) when the file is under it, else an absolute file URI."""
    from urllib.parse import quote

    path = Path(file).resolve()
    try:
        rel = path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return {"uri": path.as_uri()}  # percent-encodes the file name's bytes
    # RFC 3986: every byte of the name but the unreserved ones and "/" percent-encoded, a
    # non-UTF-8 name's own bytes included (never a lone surrogate in the JSON)
    return {"uri": quote(os.fsencode(rel), safe="/"), "uriBaseId": "%SRCROOT%"}



def _code_flow(r: Report, f: Finding) -> list[dict[str, Any]]:
    """The failing session as a SARIF ``codeFlow``: one thread-flow location per append, in
    order (``executionOrder`` is the append's number), at the finding's line; the last one
    names the finding."""
    trace, line = r.decision.trace, finding_line(r.policy, f)
    where = {"physicalLocation": {"artifactLocation": sarif_uri(r.policy.file),
                                  "region": {"startLine": max(1, line)}}}
    steps: list[dict[str, Any]] = [
        {"executionOrder": n, "location": {**where, "message": {"text": f"append {n}: {size} tokens"}}}
        for n, size in enumerate(trace, start=1)]
    if steps:
        steps[-1]["location"]["message"]["text"] += f"; {f.kind} at stage {f.stage}: {explain(r.policy, f)}"
    return [{"message": {"text": f"the failing session: {len(trace)} appends"},
             "threadFlows": [{"locations": steps}]}]


def _fixes(r: Report) -> list[dict[str, Any]]:
    """``--suggest``'s verified fixes as SARIF ``fix`` objects: each changed knob's line
    replaced by ``key = value`` (or the line inserted after its table's header). A fix whose
    file cannot be edited in place has no ``artifactChanges`` and is left out (SARIF needs
    at least one); JSON still lists it."""
    out: list[dict[str, Any]] = []
    try:
        with open(r.policy.file, encoding="utf-8") as f:
            source = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        source = []
    for fix in r.fixes:
        if not fix.replacements:
            continue
        out.append({"description": {"text": fix.text}, "artifactChanges": [{
            "artifactLocation": sarif_uri(r.policy.file),
            "replacements": [rep.sarif(source) for rep in fix.replacements]}]})
    return out


def render_sarif(reports: list[Entry]) -> str:
    """SARIF 2.1.0, one result per finding, located at the faulty stage's line, with the
    failing session as a ``codeFlow`` and ``--suggest``'s fixes as ``fixes`` on each;
    the profile is a property of the run and of every result. A bad file is an ``error``
    result (rule ``input``) at its line, so one bad file never empties the document."""
    from tailguard import SPEC_VERSION, __version__

    results: list[dict[str, Any]] = []
    for r in reports:
        if isinstance(r, BadFile):
            results.append(_result(r.file, r.line, "input", "error", f"{r.key}: {r.reason}", ""))
            continue
        profile = r.decision.profile
        fixes = _fixes(r)
        for f in r.decision.findings:
            result = _result(r.policy.file, finding_line(r.policy, f), f.kind, "error",
                             explain(r.policy, f), profile)
            if r.decision.trace and f.kind != "unenforceable":
                result["codeFlows"] = _code_flow(r, f)
            if fixes:
                result["fixes"] = fixes
            results.append(result)
        for f in r.decision.notes:
            results.append(_result(r.policy.file, finding_line(r.policy, f), f.kind, "note",
                                   explain(r.policy, f), profile))
        if r.decision.verdict == "unknown":
            result = _result(r.policy.file, 1, "unknown", "warning", r.decision.detail, profile)
            if fixes:
                result["fixes"] = fixes
            results.append(result)
    profiles = sorted({r.decision.profile for r in reports if isinstance(r, Report)}) or \
        ["partitioned"]
    rules = [{"id": k, "shortDescription": {"text": v}, "fullDescription": {"text": FULL[k]},
              "help": {"text": HINTS.get(k, "")}} for k, v in RULES.items()]
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "tailguard check-config",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": "https://example.invalid/tailguard/docs/check-config.md",
                "rules": rules,
                "properties": {"spec_version": SPEC_VERSION},
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "results": results,
            "properties": {"profile": profiles[0] if len(profiles) == 1 else profiles},
        }],
    }
    return json.dumps(sarif, indent=2) + "\n"


def _result(file: str, line: int, rule: str, level: str, text: str, profile: str) -> dict[str, Any]:
    suffix = f" (profile {profile})" if profile else ""
    return {
        "ruleId": rule, "level": level, "message": {"text": f"{text}{suffix}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": sarif_uri(file), "region": {"startLine": max(1, line)},
        }}],
        **({"properties": {"profile": profile}} if profile else {}),
    }
