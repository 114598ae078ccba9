"""The policy view: a counterexample session over appends, or the invariant, in words.

For an unsafe policy, the failing session ``check-config`` found (its trace of turn sizes)
is run through the executable model (:func:`tailguard.pipeline.model.step`, the authority
every verdict is replayed through) one append at a time: a chart of the occupancy after the
append and after the stages against each trigger, ceiling and the window; a table of each
stage's action per append; and, below, the session view of the event log
``check-config --emit-trace`` writes for it (:func:`tailguard.pipeline.trace.session_log`),
audited under the same profile, so that the offsets that became holes are on the session
axis. For a safe policy, the inductive invariant the verdict was certified with.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailguard.audit.html.page import page
from tailguard.audit.html.session_data import collect
from tailguard.audit.html.session_view import render_session
from tailguard.audit.html.svg import esc, fmt, patterns
from tailguard.base.safeio import elide
from tailguard.base.vocab import Pair
from tailguard.pipeline.model import Event, Profile, State, step
from tailguard.pipeline.policy import Compact, Policy, Truncate
from tailguard.pipeline.report import BadFile, Report, describe_stage, explain, hint, overall
from tailguard.pipeline.trace import render_jsonl, session_log

__all__ = ["invariant_words", "policy_page", "simulate"]

MAX_STEPS_DRAWN = 400  # appends drawn one bar each; longer traces are drawn in buckets
MAX_TABLE = 200  # appends listed in the per-stage table


@dataclass
class Step:
    """One append of the counterexample: size, occupancy (per unit) after it and after the
    stages, what each stage did, and the findings of this append."""

    number: int
    size: int
    peak: dict[str, int]
    after: dict[str, int]
    actions: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    by_stage: dict[int, str] = field(default_factory=dict)  # stage index -> what it did


def _units(policy: Policy) -> list[str]:
    used: list[str] = []
    for s in policy.stages:
        for u in ((s.unit,) if isinstance(s, Truncate) else
                  sorted(s.trigger_units) if isinstance(s, Compact) else ()):
            if u not in used:
                used.append(u)
    if getattr(policy, "window", 0) and "tokens" not in used:
        used.append("tokens")
    return sorted(used, key=("tokens", "turns", "messages").index) or ["tokens"]


def _runs(offsets: Sequence[int]) -> str:
    out: list[list[int]] = []
    for i in sorted(offsets):
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return ", ".join(fmt(lo, hi) for lo, hi in out)


def simulate(policy: Policy, trace: Sequence[int], profile: Profile, messages: Sequence[int] = (),
             failures: Sequence[int] = ()) -> list[Step]:
    """Run the trace through the model, one append at a time, recording what each stage did
    (``messages`` and spill ``failures`` as in :class:`tailguard.pipeline.model.Session`)."""
    state = State()
    units = _units(policy)
    steps: list[Step] = []
    for number, size in enumerate(trace, start=1):
        before = {u: state.occupancy(policy, u) for u in units}
        count = messages[number - 1] if messages else policy.messages_per_turn[0]  # step()'s default
        grown = {"tokens": size, "messages": count, "turns": 1}
        peak = {u: before[u] + grown[u] for u in units}
        events: list[Event] = []
        found = step(policy, state, size, events, profile, count, number in failures)
        st = Step(number, size, peak, {u: state.occupancy(policy, u) for u in units})
        pending: Pair | None = None
        for k, ev in enumerate(events):
            if ev.kind == "truncate":
                pending = (ev.data[0], ev.data[1])
                nxt = events[k + 1] if k + 1 < len(events) else None
                stage = nxt.finding.stage if nxt is not None and nxt.finding is not None else -1
                st.actions.append(f"{describe_stage(policy, stage)}: drops turns {fmt(*pending)}")
                st.by_stage[stage] = f"drops turns {fmt(*pending)}"
            elif ev.kind == "compact":
                stage_i, seen, tail = ev.data[:3]  # (stage, seen, tail, inherited)
                what = f"summarizes turns {fmt(seen, tail)}" if seen < tail else "summarizes no turn"
                st.actions.append(f"{describe_stage(policy, stage_i)}: {what}, tail from turn {tail}")
                st.by_stage[stage_i] = f"{what}, tail from turn {tail}"
            elif ev.kind == "attempt":
                compacts = [i for i, x in enumerate(policy.stages) if isinstance(x, Compact)]
                what = f"triggers with nothing to summarize (tail from turn {ev.data[0]})"
                if len(compacts) == 1:
                    st.actions.append(f"{describe_stage(policy, compacts[0])}: {what}")
                    st.by_stage[compacts[0]] = what
                else:
                    st.actions.append(f"a compact stage {what}")
        for f in found:
            turns = f" turns {_runs(f.offsets)}" if f.offsets else ""
            st.findings.append(f"{f.kind}{turns}: {explain(policy, f)}")
        steps.append(st)
    return steps


def _limits(policy: Policy, unit: str) -> list[tuple[str, str, int]]:
    """(css class, label, value) of every threshold in ``unit``."""
    out: list[tuple[str, str, int]] = []
    for i, s in enumerate(policy.stages):
        if isinstance(s, Truncate) and s.unit == unit:
            out.append(("ceiling", f"ceiling (stage {i} truncate) {s.limit:,}", s.limit))
        elif isinstance(s, Compact):
            for value in sorted({v for clause in s.clauses for u, v in clause if u == unit}):
                out.append(("trigger", f"trigger (stage {i} compact) {value:,}", value))
    window = int(getattr(policy, "window", 0) or 0)
    if window and unit == "tokens":
        out.append(("window", f"window {window:,}", window))
    return out


def occupancy_svg(policy: Policy, steps: list[Step], unit: str) -> str:
    """Occupancy in ``unit`` over appends: after the append (dashed) and after the stages
    (filled), against the thresholds; appends with a finding carry a crossed red mark."""
    width, left, plot_w, top, plot_h = 1180, 90, 860, 30, 220
    limits = _limits(policy, unit)
    top_value = max([1, *[s.peak[unit] for s in steps], *[v for _, _, v in limits]])
    top_value = int(top_value * 1.08) + 1
    count = max(len(steps), 1)
    bucket = max(1, -(-count // MAX_STEPS_DRAWN))
    slots = -(-count // bucket)
    bar_w = plot_w / slots

    def y(v: int) -> float:
        return top + plot_h - plot_h * v / top_value

    parts = [f'<text x="8" y="18" class="rowlabel">occupancy ({esc(unit)}) over appends</text>',
             f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}"/>',
             f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}"/>']
    for frac in (0, 0.25, 0.5, 0.75, 1.0):
        v = int(top_value * frac)
        parts.append(f'<text class="tick" x="{left - 30}" y="{y(v) + 4:.1f}">{v:,}</text>')
    for k in range(slots):
        group = steps[k * bucket:(k + 1) * bucket]
        if not group:
            continue
        peak = max(s.peak[unit] for s in group)
        after = max(s.after[unit] for s in group)
        x = left + k * bar_w
        first, last = group[0].number, group[-1].number
        label = f"append {first}" if first == last else f"appends {first} to {last}"
        sizes = ", ".join(str(s.size) for s in group[:8]) + (", ..." if len(group) > 8 else "")
        actions = "; ".join(a for s in group for a in s.actions)[:600]
        tip = f"{label} (size {sizes}): {peak:,} {unit} after the append, {after:,} after the stages" + \
            (f"; {actions}" if actions else "")
        bad = [f for s in group for f in s.findings]
        cls = "mk occbar" + (" finding" if bad else "")
        parts.append(
            f'<g class="{cls}" tabindex="0" data-kind="occupancy" data-append="{first}" '
            f'data-peak="{peak}" data-after="{after}">'
            f"<title>{esc(tip + ('; ' + '; '.join(bad) if bad else ''))}</title>"
            f'<rect class="occ" x="{x + 0.5:.1f}" y="{y(after):.1f}" width="{max(bar_w - 1, 0.8):.1f}" '
            f'height="{top + plot_h - y(after):.1f}"/>'
            f'<rect class="occ peak" x="{x + 0.5:.1f}" y="{y(peak):.1f}" width="{max(bar_w - 1, 0.8):.1f}" '
            f'height="{max(y(after) - y(peak), 0):.1f}"/>'
            + (f'<rect class="shape" style="fill:url(#p-hole);stroke:#67000d" x="{x + 0.5:.1f}" '
               f'y="{top + plot_h + 3}" width="{max(bar_w - 1, 2):.1f}" height="8"/>' if bad else "")
            + f'<text class="tip" x="{left:.1f}" y="{top - 4}">{esc(tip[:160])}</text></g>')
    for k, (cls, label, v) in enumerate(limits):
        yy = y(v)
        parts.append(f'<line class="limit {cls}" x1="{left}" y1="{yy:.1f}" x2="{left + plot_w}" y2="{yy:.1f}"/>'
                     f'<text class="sub" x="{left + plot_w + 4}" y="{yy + 4 + 11 * (k % 2):.1f}">{esc(label)}</text>')
    lane_y = top + plot_h + 48
    for i in range(len(policy.stages)):
        parts.append(f'<text class="sub" x="8" y="{lane_y + 9}">stage {i} {esc(policy.stages[i].kind)}</text>')
        for k in range(slots):
            group = steps[k * bucket:(k + 1) * bucket]
            did = [f"append {s.number}: {s.by_stage[i]}" for s in group if i in s.by_stage]
            if not did:
                continue
            x = left + k * bar_w
            kind = "trunc" if isinstance(policy.stages[i], Truncate) else "honest"
            tip = f"{describe_stage(policy, i)}: " + "; ".join(did)[:400]
            parts.append(f'<g class="mk {kind} action" tabindex="0" data-kind="action" data-stage="{i}" '
                         f'data-append="{group[0].number}">'
                         f'<title>{esc(tip)}</title><rect class="shape" x="{x + 1:.1f}" y="{lane_y}" '
                         f'width="{max(bar_w - 2, 1.5):.1f}" height="11"/>'
                         f'<text class="tip" x="{left:.1f}" y="{top - 4}">{esc(tip[:160])}</text></g>')
        lane_y += 16
    step_every = max(1, slots // 10)
    for k in range(0, slots, step_every):
        parts.append(f'<text class="tick" x="{left + (k + 0.5) * bar_w:.1f}" y="{top + plot_h + 24}">'
                     f"{k * bucket + 1}</text>")
    parts.append(f'<text class="sub" x="{left}" y="{top + plot_h + 40}">append number'
                 + (f" (bars of {bucket} appends)" if bucket > 1 else "")
                 + "; dashed: after the append, filled: after the stages; crossed red: a finding</text>")
    height = lane_y + 8
    return (f'<svg class="view" role="img" aria-label="occupancy in {esc(unit)}" width="{width}" '
            f'height="{height:.0f}" viewBox="0 0 {width} {height:.0f}">{patterns()}{"".join(parts)}</svg>')


def _stage_table(policy: Policy, steps: list[Step]) -> str:
    units = list(steps[0].peak) if steps else []
    head = "".join(f"<th>{esc(u)} after append</th><th>{esc(u)} after stages</th>" for u in units)
    head += "".join(f"<th>{esc(describe_stage(policy, i))}</th>" for i in range(len(policy.stages)))
    rows: list[str] = []
    shown = [s for s in steps if s.actions or s.findings]
    for s in (shown if len(steps) > MAX_TABLE else steps)[:MAX_TABLE]:
        occ = "".join(f"<td>{s.peak[u]:,}</td><td>{s.after[u]:,}</td>" for u in units)
        acts = "".join(f"<td>{esc(s.by_stage.get(i, '-'))}</td>" for i in range(len(policy.stages)))
        finds = "<br>".join(f'<span class="bad">{esc(f)}</span>' for f in s.findings)
        rows.append(f'<tr data-append="{s.number}"><td>{s.number}</td><td>{s.size:,}</td>{occ}'
                    f"{acts}<td>{finds}</td></tr>")
    note = ""
    if len(steps) > MAX_TABLE:
        note = f"<p>Only appends at which a stage acted are listed (the first {MAX_TABLE}).</p>"
    return (f"<table class=\"steps\"><thead><tr><th>append</th><th>size (tokens)</th>{head}"
            f"<th>finding</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{note}")


def invariant_words(policy: Policy, method: str, profile: Profile, rlimit: int | None = None) -> list[str]:
    """The certificate of a ``safe`` verdict, in words.

    Houdini's lemmas (occupancy bounds from the policy's own constants) are re-found by the
    same deterministic search the engine ran and read off as sentences; a Spacer invariant
    is named but not restated (it is a formula over the abstract state).
    """
    out = [
        f"Proved by {method}.",
        "The certificate Inv is a set of session states such that: the empty session is in Inv; "
        "every append from a state in Inv that loses nothing leads back into Inv; and no append "
        "from a state in Inv loses a turn, breaks the recovery floor or overflows. By induction "
        "on the number of appends, no session of any length reaches a finding.",
    ]
    if method.startswith("inductive occupancy bounds"):
        lemmas = _houdini_lemmas(policy, profile, rlimit)
        if lemmas:
            out.append("Inv is the conjunction of these occupancy bounds (each inductive, together "
                       "excluding every finding):")
            out.extend(lemmas)
        else:
            out.append("(The bounds could not be read back here; the verdict stands on the re-checked "
                       "certificate.)")
    elif "Spacer" in method:
        out.append("Inv was found by z3's Spacer over the abstract state (pinned turns and their tokens, "
                   "the summary's size, the count and tokens of verbatim turns, the newest turns' sizes) "
                   "and re-checked with a plain solver; the formula is not restated here.")
    return out


def _houdini_lemmas(policy: Policy, profile: Profile, rlimit: int | None) -> list[str]:
    try:
        from tailguard.pipeline.encode import needed_window
        from tailguard.pipeline.houdini import houdini
        from tailguard.pipeline.solver import Budget, own_context

        budget = Budget()
        need = needed_window(policy)
        width = need if need <= budget.max_window else 1
        with own_context():
            lemma = houdini(policy, width, budget.rlimit if rlimit is None else rlimit, profile=profile)
        if lemma is None:
            return []
        final = inspect.getclosurevars(lemma).nonlocals.get("final", [])
        words: list[tuple[str, int, str, str]] = []
        for fn in final:
            v: Mapping[str, Any] = inspect.getclosurevars(fn).nonlocals
            when = {"always": "always", "no summary": "while there is no summary yet",
                    "summary": "once there is a summary"}.get(str(v.get("guard")), str(v.get("guard")))
            words.append((str(v["unit"]), int(v["value"]), str(v.get("guard")), when))
        kept = [w for w in words if not any(o is not w and o[0] == w[0] and o[1] <= w[1] and
                                            o[2] in ("always", w[2]) and (o[1], o[2]) != (w[1], w[2])
                                            for o in words)]
        return [f"occupancy in {u} ≤ {v:,} after the stages of every append, {when}"
                for u, v, _, when in dict.fromkeys(kept)]
    except Exception:  # a best-effort reading of the engine's internals
        return []


def _policy_section(r: Report, profile: Profile, rlimit: int | None) -> str:
    p, d = r.policy, r.decision
    cls = "good" if d.verdict == "safe" else "bad"
    out = [f'<section class="policy" data-verdict="{esc(d.verdict)}"><h2>Policy {esc(elide(p.name, 120))}: '
           f'<span class="{cls}">{esc(d.verdict)}</span></h2>',
           f"<p>{esc(elide(p.file, 120))}, profile {esc(d.profile)}, floor {p.floor:,} {esc(p.floor_unit)}, "
           f"turns of {p.turn_min:,} to {p.turn_max:,} tokens; {esc(d.method or d.detail)}.</p>"]
    stages = "".join(f"<li>{esc(describe_stage(p, i))}</li>" for i in range(len(p.stages)))
    out.append(f"<ol start=\"0\" class=\"stages\">{stages}</ol>")
    if d.findings:
        out.append('<h3>Findings</h3><ul class="findings">' + "".join(
            f'<li data-kind="{esc(f.kind)}"><span class="bad">{esc(f.kind)}</span>: {esc(explain(p, f))}'
            f"<br>fix: {esc(hint(f))}</li>" for f in d.findings) + "</ul>")
    if d.verdict == "safe":
        words = invariant_words(p, d.method, profile, rlimit)
        prose = "".join(f"<p>{esc(w)}</p>" for w in words if not w.startswith("occupancy"))
        bounds = "".join(f"<li>{esc(w)}</li>" for w in words if w.startswith("occupancy"))
        out.append(f'<h3>Why it is safe</h3><div class="invariant">{prose}'
                   + (f"<ul>{bounds}</ul>" if bounds else "") + "</div>")
    elif d.verdict == "unknown":
        out.append(f"<p>Unknown: {esc(d.detail)}. Never reported as safe.</p>")
    if d.trace:
        steps = simulate(p, d.trace, profile, d.messages, d.failures)
        out.append(f"<h3>The counterexample session ({len(d.trace):,} appends)</h3>")
        for unit in _units(p):
            out.append(f'<div class="scroll">{occupancy_svg(p, steps, unit)}</div>')
        out.append(_stage_table(p, steps))
        log = session_log(p, list(d.trace), profile, extend=True, messages=d.messages,
                          failures=frozenset(d.failures))
        lines = render_jsonl(log.lines).encode().splitlines(keepends=True)
        source = f"{p.file} (counterexample event log)"
        data = collect(lines, source, profile)
        out.append(render_session(data, "The counterexample on the session axis"))
    out.append("</section>")
    return "\n".join(out)


def _bad_file_section(b: BadFile) -> str:
    """An unusable file, in its place: verdict ``error``, never left out and never ``safe``."""
    return (f'<section class="policy" data-verdict="error"><h2>File {esc(elide(b.file, 120))}: '
            f'<span class="bad">error</span></h2><p>Not checked: the file is unusable: '
            f"<code>{esc(b.message)}</code>.</p></section>")


def policy_page(reports: Sequence[object], profile: str, rlimit: int | None = None) -> str:
    """The page for check-config's reports; an unusable file (:class:`BadFile`) is shown in
    its place and makes the page's verdict ``error`` (the exit code's, never ``safe``)."""
    prof: Profile = "strict" if profile == "strict" else "partitioned"
    entries = [r for r in reports if isinstance(r, (Report, BadFile))]
    sections = [_policy_section(r, prof, rlimit) if isinstance(r, Report) else _bad_file_section(r)
                for r in entries]
    verdict = overall(entries) if entries else "error"
    names = ", ".join(elide(r.policy.name if isinstance(r, Report) else r.file, 120) for r in entries) or "no policy"
    return page(f"tailguard check-config: {names} ({verdict}, profile {prof})", "\n".join(sections))
