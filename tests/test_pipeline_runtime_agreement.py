"""Agreement with the runtime (brief 6b, normative): check-config's executable model and
``tailguard audit`` judge the same sessions the same way, under the same profile.

Hypothesis draws small 1.0 policies (truncate and compact stages in turns or tokens, small
windows, pinned turns, base tokens, ``input_limit``, and ``input = "candidates" | "all"``)
and concrete sessions (sequences of turn sizes). Each session runs through the model
(:mod:`tailguard.pipeline.model`); its event log (:func:`tailguard.pipeline.trace.session_log`)
is replayed by the runtime ledger (:func:`tailguard.audit.replay.replay`) under the same profile,
and, as a second oracle, each compaction's equivalent case (SPEC.md 9.3) is decided by the
generated checker. Both directions of 6b are checked, and more: at every compaction the
failed clauses and the holes are exactly what the model's findings so far predict
(``no_hole`` with the union of the model's holes, ``floor_in_tail`` for a floor left out of
the context, ``floor_in_input`` under ``strict`` for a floor not shown to the summarizer).

Overflows are not audit-visible (the event log has no budget): an overflow finding is
ignored by the comparison, so a session whose only findings are overflows must give an
audit with every compaction allowed. Static findings (a unit mismatch) are not session
findings either: the log is written in the floor's unit. Summaries are 1.0's
(``summary = "separate"``, always seen whole) until ``summary = "message"`` exists.

Longer run::

    TAILGUARD_SLOW=1 TAILGUARD_RUNTIME_EXAMPLES=5000 pytest -m slow tests/test_pipeline_runtime_agreement.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from tailguard._generated.checker import check_case
from tailguard.audit.replay import Verdict, replay
from tailguard.base.vocab import Pair
from tailguard.pipeline.model import FLOOR_INPUT, PROFILES, SUMMARY_DROPPED, Profile, State, step
from tailguard.pipeline.policy import Compact, Policy, Spill as SpillStage, Stage, Truncate, load_policy
from tailguard.pipeline.solver import decide
from tailguard.pipeline.trace import SessionLog, render_jsonl, session_log
from tailguard.runtime.eventlog import Compact as CompactLine, Session, Spill, Truncate as TruncateLine, iter_events
from tests.cli_helpers import run_cli

EX = Path(__file__).resolve().parents[1] / "examples" / "policies"


def _ledger_supports(profile: str) -> str:
    """Empty when the runtime ledger judges ``profile``, else why not."""
    log = ['{"event": "session", "unit": "turns", "recovery_floor_span": 0, "floor_unit": "turns", '
           '"truncator_unit": "turns"}', '{"event": "append", "count": 1}',
           '{"event": "compact", "summary_input": [0, 1], "summary_covers": [0, 1], "tail_start": 1}']
    try:
        list(replay(iter_events(log), profile=profile))
    except ValueError as exc:
        return f"the runtime ledger does not judge profile {profile!r} yet: {exc}"
    return ""


PROFILE_PARAMS = [
    pytest.param(p, marks=pytest.mark.skipif(bool(_ledger_supports(p)), reason=_ledger_supports(p)))
    for p in PROFILES
]

# -- the model side --------------------------------------------------------------------


def _clamp(policy: Policy, raw: list[int]) -> list[int]:
    return [min(max(x, policy.turn_min), policy.turn_max) for x in raw]


def _model_losses(policy: Policy, sizes: list[int], profile: Profile, messages: list[int] | None = None,
                  failures: frozenset[int] = frozenset()) -> list[tuple[str, str, tuple[int, ...]]]:
    """Every hole and floor finding of the session, run step by step (overflows left out)."""
    state = State()
    out = []
    for k, size in enumerate(sizes):
        count = messages[k] if messages else None
        out += [(f.kind, f.detail, f.offsets)
                for f in step(policy, state, size, profile=profile, messages=count,
                              spill_fails=k + 1 in failures)
                if f.kind in ("hole", "floor")]
    return out


# -- the runtime side ------------------------------------------------------------------


def _audit(log: SessionLog, profile: str) -> dict[int, Verdict]:
    """The runtime ledger's verdict on every compact line, by line number."""
    verdicts = replay(iter_events(render_jsonl(log.lines).splitlines(), "<model>"), profile=profile)
    return {v.line: v for v in verdicts if isinstance(v, Verdict)}


def _checker(log: SessionLog, profile: str) -> dict[int, tuple[tuple[str, ...], tuple[Pair, ...]]]:
    """The generated checker on each compaction's equivalent case (SPEC.md 9.3; prior
    coverage by the lineage rule of 4c, with at most one summary in the context: a
    compaction that saw it inherits its coverage, one with ``"saw": []`` does not)."""
    events = iter(iter_events(render_jsonl(log.lines).splitlines(), "<model>"))
    header = next(events)
    assert isinstance(header, Session)
    n, trunc, cover, spills = 0, [], [], []
    out = {}
    for ev in events:
        if isinstance(ev, TruncateLine):
            trunc.append([ev.lo, ev.hi])
        elif isinstance(ev, Spill):
            spills.append([ev.lo, ev.hi])
        elif isinstance(ev, CompactLine):
            case: dict[str, Any] = {
                "history_end": n, "tail_start": ev.tail_start, "summary_input": list(ev.summary_input),
                "summary_covers": list(ev.summary_covers), "recovery_floor_span": header.recovery_floor_span,
                "floor_unit": header.floor_unit, "truncator_unit": header.truncator_unit,
                "prior_truncations": [list(t) for t in trunc], "prior_coverage": [list(c) for c in cover],
                "spills": [list(s) for s in spills]}
            if ev.saw is not None and not ev.saw:
                case["prior_coverage"] = []
            d = check_case(case, profile)
            out[ev.line] = (d.failed, d.holes)
            lo, hi = max(ev.summary_input[0], ev.summary_covers[0]), min(ev.summary_input[1], ev.summary_covers[1])
            cover = ([] if ev.saw is not None and not ev.saw else cover) + _minus(
                [(lo, hi)] if lo < hi else [], trunc)
        else:
            n += getattr(ev, "amount", 0)
    return out


def _minus(ranges: list[Pair], cut: list[list[int]]) -> list[Pair]:
    for c_lo, c_hi in cut:
        ranges = [piece for lo, hi in ranges
                  for piece in ((lo, min(hi, c_lo)), (max(lo, c_hi), hi)) if piece[0] < piece[1]]
    return ranges


def _union(ranges: list[Pair]) -> tuple[Pair, ...]:
    out: list[Pair] = []
    for lo, hi in sorted(r for r in ranges if r[0] < r[1]):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)


def _inside(small: tuple[Pair, ...], big: tuple[Pair, ...]) -> bool:
    return all(any(b_lo <= lo and hi <= b_hi for b_lo, b_hi in big) for lo, hi in small)


# -- the comparison --------------------------------------------------------------------


def expected(log: SessionLog, line: int) -> tuple[set[str], tuple[Pair, ...]]:
    """What the model's findings say the audit must answer at compact ``line``: failed
    clauses and holes. Holes persist (nothing spills them); a floor violation belongs to
    its own compaction."""
    failed: set[str] = set()
    holes: list[Pair] = []
    for loss in log.losses:
        if loss.compaction is None or loss.compaction > line:
            continue
        if loss.finding.kind == "hole":
            failed.add("no_hole")
            holes += loss.ranges
        elif loss.compaction == line:
            failed.add("floor_in_input" if loss.finding.detail == FLOOR_INPUT else "floor_in_tail")
    return failed, _union(holes)


def check_agreement(policy: Policy, raw: list[int], profile: Profile, raw_messages: list[int] | None = None,
                    failures: frozenset[int] = frozenset()) -> None:
    sizes = _clamp(policy, raw)
    lo, hi = policy.messages_per_turn
    messages = [min(max(m, lo), hi) for m in raw_messages[: len(sizes)]] + [lo] * (
        len(sizes) - len(raw_messages)) if raw_messages is not None else []
    log = session_log(policy, sizes, profile, messages=messages, failures=failures)
    losses = _model_losses(policy, sizes, profile, messages, failures)
    assert [(x.finding.kind, x.finding.detail, x.finding.offsets) for x in log.losses] == losses
    audit = _audit(log, profile)
    checker = _checker(log, profile)
    assert sorted(audit) == sorted(checker) == list(log.compactions)
    first_loss = min((x.compaction for x in log.losses if x.compaction is not None), default=None)
    for line, verdict in audit.items():
        got = (set(verdict.decision.failed), verdict.decision.holes)
        ctx = (profile, policy, sizes, render_jsonl(log.lines), line)
        # direction 1: no finding yet (overflows aside) -> allowed
        if first_loss is None or line < first_loss:
            assert verdict.decision.allowed, ctx
        # the exact correspondence, of which direction 2 is a part
        assert got == expected(log, line), (got, expected(log, line), ctx)
        assert (set(checker[line][0]), checker[line][1]) == got, (checker[line], ctx)
    # direction 2: every hole or floor violation is refused at the first compaction at or
    # after it, with its offsets among the holes named
    for loss in log.losses:
        if loss.compaction is None:
            continue  # the session ends before any compaction judges it
        verdict = audit[loss.compaction]
        assert not verdict.decision.allowed, (loss, profile, policy, sizes)
        if loss.finding.kind == "hole":
            assert _inside(loss.ranges, verdict.decision.holes), (loss, verdict, policy, sizes)


# -- strategies ------------------------------------------------------------------------

units = st.sampled_from(["turns", "tokens"])
units_11 = st.sampled_from(["turns", "tokens", "messages"])


@st.composite
def stages(draw: st.DrawFn, kind: str = "any", spec11: bool = False) -> Stage:
    unit = units_11 if spec11 else units
    if spec11 and kind == "any" and draw(st.integers(0, 3)) == 0:
        return SpillStage(draw(st.sampled_from(["halt", "proceed"])))
    if kind == "truncate" or (kind == "any" and draw(st.booleans())):
        return Truncate(draw(unit), draw(st.integers(0, 16)))
    keep_unit = draw(unit)
    keep = draw(st.integers(0, 4) if keep_unit == "turns" else st.integers(0, 8))
    limit = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 5, 8]))
    extra = {}
    if spec11:
        extra = {"summary": draw(st.sampled_from(["separate", "message"])),
                 "clip": limit > 0 and draw(st.booleans()),
                 "input_limit_unit": draw(st.sampled_from(["tokens", "messages"]))}
    return Compact(draw(unit), draw(st.integers(0, 14)), keep_unit, keep,
                   draw(st.integers(0, 3)), limit,
                   input=draw(st.sampled_from(["candidates", "all"])), **extra)  # type: ignore[arg-type]


@st.composite
def policies(draw: st.DrawFn, spec11: bool = False) -> Policy:
    lo = draw(st.integers(1, 2))
    mlo = draw(st.integers(1, 2)) if spec11 else 1
    return Policy(
        name="random", turn_min=lo, turn_max=draw(st.integers(lo, 4)),
        floor=draw(st.integers(0, 5)), floor_unit=draw(units_11 if spec11 else units),
        stages=tuple(draw(st.permutations(  # at least one compact stage, so sessions compact
            [draw(stages("compact", spec11)), *draw(st.lists(stages(spec11=spec11), max_size=2))]))),
        base_tokens=draw(st.integers(0, 3)), keep_first=draw(st.integers(0, 2)),
        messages_per_turn=(mlo, draw(st.integers(mlo, 3))) if spec11 else (1, 1),
    )


# a uniform length (Hypothesis' own lists are mostly short: too short to compact)
sessions = st.integers(0, 40).flatmap(lambda n: st.lists(st.integers(1, 4), min_size=n, max_size=n))

# LangChain's SummarizationMiddleware shape with no trim (no input_limit), scaled down:
# summarize at a token trigger, keep the newest turns, the summarizer shown the
# candidates only, a floor no longer than the kept tail. The shape on which check-config
# (safe) and the strict runtime audit (refusing every compaction) disagreed.
LANGCHAIN = Policy("langchain-no-trim", 1, 4, 3, "turns", (Compact("tokens", 12, "turns", 3, 2),),
                   base_tokens=1)
LANGCHAIN_SESSION = [4, 1, 3, 4, 2, 4, 4, 1, 4, 3, 4, 4, 2, 4, 4, 4, 1, 4]


@pytest.mark.parametrize("profile", PROFILE_PARAMS)
@settings(max_examples=int(os.environ.get("TAILGUARD_RUNTIME_CI_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies(), raw=sessions)
@example(policy=LANGCHAIN, raw=LANGCHAIN_SESSION)
def test_model_and_audit_agree(profile: Profile, policy: Policy, raw: list[int]) -> None:
    check_agreement(policy, raw, profile)


failure_sets = st.frozensets(st.integers(1, 40), max_size=12)


@pytest.mark.parametrize("profile", PROFILE_PARAMS)
@settings(max_examples=int(os.environ.get("TAILGUARD_RUNTIME_CI_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies(spec11=True), raw=sessions, raw_messages=sessions, failures=failure_sets)
def test_model_and_audit_agree_spec_1_1(profile: Profile, policy: Policy, raw: list[int],
                                        raw_messages: list[int], failures: frozenset[int]) -> None:
    check_agreement(policy, raw, profile, raw_messages, failures)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TAILGUARD_SLOW"), reason="set TAILGUARD_SLOW=1")
@pytest.mark.parametrize("profile", PROFILE_PARAMS)
@settings(max_examples=int(os.environ.get("TAILGUARD_RUNTIME_EXAMPLES", "5000")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies(spec11=True), raw=sessions, raw_messages=sessions, failures=failure_sets)
def test_model_and_audit_agree_long(profile: Profile, policy: Policy, raw: list[int],
                                    raw_messages: list[int], failures: frozenset[int]) -> None:
    check_agreement(policy, raw, profile, raw_messages, failures)


@pytest.mark.parametrize("profile", PROFILE_PARAMS)
@settings(max_examples=int(os.environ.get("TAILGUARD_RUNTIME_CI_EXAMPLES", "150")) // 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies(), raw=sessions)
def test_emitted_trace_refuses_exactly_at_the_loss(profile: Profile, policy: Policy, raw: list[int]) -> None:
    """``--emit-trace``: every compaction before the model's first loss is allowed, and the
    log ends at the compaction that judges it, refused (with the first hole named)."""
    check_emitted(policy, _clamp(policy, raw), profile)


@pytest.mark.parametrize("profile", PROFILE_PARAMS)
@settings(max_examples=int(os.environ.get("TAILGUARD_RUNTIME_CI_EXAMPLES", "150")) // 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(policy=policies(spec11=True), raw=sessions, raw_messages=sessions, failures=failure_sets)
def test_emitted_trace_refuses_exactly_at_the_loss_spec_1_1(
    profile: Profile, policy: Policy, raw: list[int], raw_messages: list[int], failures: frozenset[int]
) -> None:
    sizes = _clamp(policy, raw)
    lo, hi = policy.messages_per_turn
    messages = [min(max(m, lo), hi) for m in raw_messages[: len(sizes)]]
    messages += [lo] * (len(sizes) - len(messages))
    check_emitted(policy, sizes, profile, messages, failures)


def check_emitted(policy: Policy, sizes: list[int], profile: Profile, messages: list[int] | None = None,
                  failures: frozenset[int] = frozenset()) -> None:
    log = session_log(policy, sizes, profile, extend=True, messages=messages or [], failures=failures)
    audit = _audit(log, profile)
    assert sorted(audit) == list(log.compactions)
    if not log.losses:
        assert all(v.decision.allowed for v in audit.values()), (policy, sizes)
        return
    first = log.losses[0]
    last = len(log.lines)
    assert first.compaction == last and log.compactions[-1] == last, (policy, sizes, log.lines)
    for line, verdict in audit.items():
        assert verdict.decision.allowed == (line != last), (line, policy, sizes, render_jsonl(log.lines))
    if first.finding.kind == "hole":
        assert _inside(first.ranges, audit[last].decision.holes)


@pytest.mark.parametrize("profile", PROFILE_PARAMS)
def test_langchain_shape_fixed(profile: Profile) -> None:
    """The shape that disagreed, at small size: partitioned allows every compaction (and
    check-config proves the policy safe); strict refuses every one, with ``floor_in_input``
    only (and check-config says unsafe, with a floor finding naming the summarizer input)."""
    log = session_log(LANGCHAIN, LANGCHAIN_SESSION, profile)
    audit = _audit(log, profile)
    assert len(audit) >= 3
    verdict = decide(LANGCHAIN, profile=profile)
    if profile == "partitioned":
        assert all(v.decision.allowed for v in audit.values())
        assert verdict.verdict == "safe"
    else:
        assert all(v.decision.failed == ("floor_in_input",) for v in audit.values())
        assert verdict.verdict == "unsafe"
        assert [(f.kind, f.detail) for f in verdict.findings] == [("floor", FLOOR_INPUT)]
    check_agreement(LANGCHAIN, LANGCHAIN_SESSION, profile)


@pytest.mark.parametrize("profile", PROFILE_PARAMS)
def test_langchain_example_at_real_size(profile: Profile, tmp_path: Path) -> None:
    """``examples/policies/langchain-no-trim.toml`` at real sizes: a session of maximal
    turns through the model and the audit, and check-config's own verdict and trace (the
    CLI's ``--emit-trace`` log, audited by the CLI under the same profile)."""
    path = EX / "langchain-no-trim.toml"
    policy = load_policy(str(path))
    check_agreement(policy, [policy.turn_max] * 60, profile)
    trace = tmp_path / "loss.jsonl"
    code, _, _ = run_cli("check-config", "--profile", profile, "--emit-trace", str(trace), str(path))
    if profile == "partitioned":
        assert code == 0 and not trace.exists()
        return
    assert code == 1
    code, out, _ = run_cli("audit", "--profile", profile, "--format", "json", str(trace))
    assert code == 1
    compactions = json.loads(out)["compactions"]
    assert [c["decision"] for c in compactions] == ["refuse"]
    assert compactions[0]["failed"] == ["floor_in_input"]


def test_generator_reaches_every_outcome() -> None:
    """Not vacuous: small sessions give allowed compactions, holes (truncated and clipped),
    both floor violations and overflow-only sessions."""
    seen: set[str] = set()
    cases = [
        (Policy("h", 1, 3, 1, "turns", (Truncate("turns", 2), Compact("turns", 3, "turns", 1, 1))),
         [1, 1, 1, 1], "partitioned"),
        (Policy("c", 1, 3, 0, "tokens", (Compact("tokens", 4, "turns", 1, 1, 2),)), [3, 3, 3, 1], "partitioned"),
        (Policy("f", 1, 3, 3, "turns", (Compact("turns", 3, "turns", 1, 1),)), [1, 1, 1, 1], "partitioned"),
        (LANGCHAIN, LANGCHAIN_SESSION, "strict"),
        (LANGCHAIN, LANGCHAIN_SESSION, "partitioned"),
        (Policy("o", 1, 3, 0, "tokens", (Truncate("tokens", 2),), keep_first=2), [3, 3], "partitioned"),
    ]
    for policy, sizes, profile in cases:
        log = session_log(policy, sizes, profile)
        seen |= {f"{x.finding.kind}:{x.finding.detail}" for x in log.losses}
        if any(v.decision.allowed for v in _audit(log, profile).values()):
            seen.add("allowed")
        state = State()
        if any(f.kind == "overflow" for s in sizes for f in step(policy, state, s)):
            seen.add("overflow")
        check_agreement(policy, sizes, profile)
    assert seen >= {"allowed", "hole:truncated, never summarized", "hole:summarizer input clipped",
                    "floor:floor turns not in context", f"floor:{FLOOR_INPUT}", "overflow"}, seen


def test_spec_1_1_outcomes_agree_with_the_audit() -> None:
    """Not vacuous, spec 1.1: a summary dropped by a ``message`` compaction (``"saw": []``,
    its coverage a hole), spilled candidates (``spill`` lines, no hole), a failed
    ``proceed`` write (a hole) and a message-counted session, each audited in agreement."""
    dropping = Policy("m", 1, 2, 0, "turns", (Compact("tokens", 4, "turns", 1, 2, 3, summary="message"),))
    spilled = Policy("s", 1, 2, 0, "turns", (SpillStage("proceed"), Compact("tokens", 4, "turns", 1, 1, 1)))
    counted = Policy("c", 1, 1, 3, "messages", (Compact("turns", 3, "messages", 3, 1),),
                     messages_per_turn=(1, 2))
    seen: set[str] = set()
    for policy, sizes, messages, failures in [
        (dropping, [2, 2, 2, 2], None, frozenset()),
        (spilled, [2, 2, 2, 2], None, frozenset()),
        (spilled, [2, 2, 2, 2], None, frozenset({3})),
        (counted, [1, 1, 1, 1], [1, 2, 2, 1], frozenset()),
    ]:
        for profile in ("partitioned", "strict"):
            check_agreement(policy, sizes, profile, messages, failures)  # type: ignore[arg-type]
        log = session_log(policy, sizes, messages=messages or [], failures=failures)
        seen |= {f"{x.finding.kind}:{x.finding.detail}" for x in log.losses}
        seen |= {"saw []" for e in log.lines if e.get("saw") == []}
        seen |= {"spill" for e in log.lines if e.get("handle") == "spill"}
        seen |= {"messages" for e in log.lines if e["event"] == "session" and e["unit"] == "messages"}
    assert seen >= {f"hole:{SUMMARY_DROPPED}", "saw []", "spill", "hole:summarizer input clipped",
                    "floor:floor turns not in context", "messages"}, seen
