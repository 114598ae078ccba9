"""The HTML post-mortems (issue 13), without a browser: content, exit codes, determinism,
escaping, no external reference, the size bound on a million-event log, current screenshots.

The browser half (the rendered DOM, the console, screenshots) is
``tests/test_html_report_browser.py``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tailguard.audit.html import session_report
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
TRACES = sorted((ROOT / "examples" / "traces").glob("*.jsonl"))
POLICIES = {p.stem: p for p in (ROOT / "examples" / "policies").glob("*.toml")}

# anything that could make a page fetch something: a scheme, a protocol-relative reference,
# an attribute or CSS that loads, a script
_EXTERNAL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|\bsrc\s*=|\bhref\s*=|@import|url\((?!#)|<script|<link|<iframe)",
                       re.I)


HEADER = {"event": "session", "unit": "turns", "recovery_floor_span": 2, "floor_unit": "turns",
          "truncator_unit": "turns"}


def big_log(path: Path, events: int) -> None:
    """A long healthy-looking session: append 10, spill then truncate the two oldest turns,
    compact; every 7th cycle truncates without the spill (a hole, refused) and spills late,
    which repairs it. Offsets grow to about 2.5 offsets per event."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"event": "session", "unit": "turns", "recovery_floor_span": 4,
                            "floor_unit": "turns", "truncator_unit": "turns"}) + "\n")
        n, t, written, k = 0, 0, 1, 0
        while written < events:
            n += 10
            hole = k % 7 == 3
            lines = ['{"event": "append", "count": 10}']
            if not hole:
                lines.append(f'{{"event": "spill", "range": [{t}, {t + 2}]}}')
            lines.append(f'{{"event": "truncate", "range": [{t}, {t + 2}]}}')
            lines.append(f'{{"event": "compact", "summary_input": [{t + 2}, {n}], '
                         f'"summary_covers": [{t + 2}, {n - 4}], "tail_start": {n - 4}}}')
            if hole:
                lines.append(f'{{"event": "spill", "range": [{t}, {t + 2}]}}')
            f.write("\n".join(lines) + "\n")
            written += len(lines)
            t, k = n - 4, k + 1


def _audit_json(trace: Path, profile: str = "strict") -> dict[str, object]:
    code, out, _ = run_cli("audit", "--format", "json", "--profile", profile, str(trace))
    assert code in (0, 1)
    data: dict[str, object] = json.loads(out)
    return data


def test_done_when_seed_incident(tmp_path: Path) -> None:
    """The issue's "Done when": the page shows the hole [0, 8) and the truncation at line 3."""
    report = tmp_path / "r.html"
    trace = ROOT / "examples" / "traces" / "seed-incident.jsonl"
    code, out, err = run_cli("audit", "--html", str(report), str(trace))
    assert code == 1 and err == ""
    assert "refuse no_hole: offsets [0, 8) were truncated at line 3" in out  # the usual output too
    page = report.read_text(encoding="utf-8")
    hole = re.search(r'<g class="mk hole"[^>]*data-lo="0" data-hi="8"[^>]*data-line="5"[^>]*data-cause-lines="3"',
                     page)
    assert hole, "no hole mark [0, 8) judged at line 5 and caused by line 3"
    assert "hole [0, 8) · no_hole · truncated at line 3, never summarized or spilled" in page
    assert re.search(r'<g class="mk trunc"[^>]*data-lo="0" data-hi="8"[^>]*data-line="3"', page)
    assert "truncation [0, 8) (8 turns) at line 3" in page


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.stem)
@pytest.mark.parametrize("profile", ["strict", "partitioned", "seed"])
def test_every_hole_of_the_audit_json_is_a_labelled_mark(trace: Path, profile: str, tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    code_html, _, _ = run_cli("audit", "--profile", profile, "--html", str(report), str(trace))
    data = _audit_json(trace, profile)
    assert code_html == (1 if data["violations"] else 0)
    page = report.read_text(encoding="utf-8")
    compactions = data["compactions"]
    assert isinstance(compactions, list)
    for c in compactions:
        for lo, hi in c["holes"]:
            assert re.search(rf'<g class="mk hole"[^>]*data-lo="{lo}" data-hi="{hi}"[^>]*data-line="{c["line"]}"',
                             page), f"hole [{lo}, {hi}) of line {c['line']} is not drawn"
            assert re.search(rf'<text class="lbl hole"[^>]*data-lo="{lo}" data-hi="{hi}" data-line="{c["line"]}">'
                             rf"hole \[{lo}, {hi}\) · no_hole · [^<]*line \d+", page), "hole not labelled"
        verdict = "refused" if c["decision"] == "refuse" else "allowed"
        assert f'<g class="row {verdict}" data-line="{c["line"]}">' in page
    # the page's own tally is the audit's
    assert f"{len(compactions)}, " + (f"{data['violations']} refused" if data["violations"] else "all allowed") in page


def test_lost_summary_hole_names_the_summary(tmp_path: Path) -> None:
    trace = ROOT / "examples" / "traces" / "langchain-lost-summary.jsonl"
    page = session_report(trace.open("rb"), "t.jsonl", "partitioned")
    assert "hole [0, 9) · no_hole · covered only by summary &#x27;s1&#x27; (line 3), not seen or kept by line 5" in page
    assert 'data-cause-lines="3"' in page


def test_inherited_and_honest_coverage_are_drawn() -> None:
    trace = ROOT / "examples" / "traces" / "healthy.jsonl"
    page = session_report(trace.open("rb"), "h.jsonl", "strict")
    # line 8: the earlier summary's honest part [8, 36) is inherited; its own is [36, 56)
    assert re.search(r'<g class="mk inherited"[^>]*data-lo="8" data-hi="36"', page)
    assert re.search(r'<g class="mk honest"[^>]*data-lo="36" data-hi="56"', page)
    assert re.search(r'<g class="mk spill"[^>]*data-lo="0" data-hi="8"[^>]*data-line="3"', page)
    assert re.search(r'<g class="mk floor"[^>]*data-lo="56" data-hi="68"', page)
    assert re.search(r'<g class="mk tail"[^>]*data-lo="56" data-hi="68"', page)
    assert "None: every compaction was allowed." in page


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.stem)
def test_deterministic_and_self_contained(trace: Path) -> None:
    a = session_report(trace.open("rb"), str(trace.relative_to(ROOT)), "strict")
    b = session_report(trace.open("rb"), str(trace.relative_to(ROOT)), "strict")
    assert a == b
    assert not _EXTERNAL.search(a), _EXTERNAL.search(a)
    assert a.startswith("<!DOCTYPE html>") and a.rstrip().endswith("</html>")


def test_the_pattern_check_can_fail() -> None:
    for bad in ('<img src="x.png">', "<a href='#'>", "see https://example.org", "url(http://x)",
                "<script>", "@import 'x.css'", '<link rel="stylesheet">', "//cdn.example/x.js"):
        assert _EXTERNAL.search(bad) or bad.startswith("//"), bad
    assert not _EXTERNAL.search('fill:url(#p-hole)')


def test_odd_input_is_escaped(tmp_path: Path) -> None:
    odd = '<script>alert("x")</script>&</svg>'
    trace = tmp_path / "odd <&>.jsonl"
    lines = [
        HEADER,
        {"event": "append", "count": 10},
        {"event": "spill", "range": [0, 2], "handle": odd},
        {"event": "compact", "summary_input": [0, 10], "summary_covers": [0, 8], "tail_start": 8, "summary": odd},
        {"event": "append", "count": 5},
        {"event": "compact", "summary_input": [8, 15], "summary_covers": [8, 13], "tail_start": 13,
         "summary": "b", "saw": []},
    ]
    trace.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    report = tmp_path / "r.html"
    code, _, err = run_cli("audit", "--html", str(report), str(trace))
    assert code == 1, err
    page = report.read_text(encoding="utf-8")
    assert "<script" not in page and "</svg>&" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&lt;/svg&gt;" in page
    assert "odd &lt;&amp;&gt;.jsonl" in page
    assert not _EXTERNAL.search(page)


def test_inconsistent_offsets_are_drawn_not_raised(tmp_path: Path) -> None:
    """Offsets the audit refuses with well_formed (negative, reversed, past the end, huge),
    a refusal line and a summary eviction: the page is written and the exit code is the audit's."""
    big = 10**40
    lines = [
        {**HEADER, "recovery_floor_span": -3, "floor_unit": "tokens"},
        {"event": "append", "count": 5},
        {"event": "truncate", "range": [4, 2]},
        {"event": "compact", "summary_input": [-5, 1000], "summary_covers": [7, 3], "tail_start": 99},
        {"event": "refusal", "summary_input": [0, 5], "summary_covers": [0, 5], "tail_start": 5,
         "failed": ["no_hole"], "holes": [[0, 2]]},
        {"event": "evict_summary", "summary": "0"},
        {"event": "append", "count": big},
        {"event": "compact", "summary_input": [0, big], "summary_covers": [0, big - 9], "tail_start": big - 9},
    ]
    trace = tmp_path / "odd.jsonl"
    trace.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    for profile in ("strict", "partitioned", "seed"):
        report = tmp_path / f"{profile}.html"
        code, _, err = run_cli("audit", "--profile", profile, "--html", str(report), str(trace))
        assert (code, err) == (run_cli("audit", "--profile", profile, str(trace))[0], "")
        page = report.read_text(encoding="utf-8")
        assert '<li data-line="5">line 5: refused (no_hole)' in page  # the guard's refusal line
        assert "evict_summary" in page


def test_torn_last_line_is_noted_as_the_audit_ignores_it(tmp_path: Path) -> None:
    trace = tmp_path / "torn.jsonl"
    trace.write_text(json.dumps(HEADER) + '\n{"event": "append", "count": 5}\n{"event": "app', encoding="utf-8")
    report = tmp_path / "r.html"
    code, _, err = run_cli("audit", "--html", str(report), str(trace))
    assert code == 0 and "torn last line ignored" in err
    assert "Line 3: torn last line ignored" in report.read_text(encoding="utf-8")
    code, _, err = run_cli("audit", "--strict-tail", "--html", str(tmp_path / "s.html"), str(trace))
    assert code == 2 and not (tmp_path / "s.html").exists()


def test_bad_input_exits_2_without_a_page(tmp_path: Path) -> None:
    trace = tmp_path / "bad.jsonl"
    trace.write_text(json.dumps(HEADER) + '\n{"event": "append", '
                     '"count": "many"}\n', encoding="utf-8")
    report = tmp_path / "r.html"
    code, _out, err = run_cli("audit", "--html", str(report), str(trace))
    assert code == 2 and "bad.jsonl:2: count:" in err and "Traceback" not in err
    assert not report.exists()
    code, _, err = run_cli("audit", "--html", str(report), "-")
    assert code == 2 and "--html: needs one log as a file" in err
    code, _, err = run_cli("audit", "--html", str(report), str(trace), str(trace))
    assert code == 2 and "not stdin or several" in err
    seed = ROOT / "examples" / "traces" / "seed-incident.jsonl"
    code, _, err = run_cli("audit", "--html", str(tmp_path / "no" / "such" / "dir.html"), str(seed))
    assert code == 2 and "--html: cannot write" in err and "Traceback" not in err


def test_million_event_log_stays_small(tmp_path: Path) -> None:
    """A million events: the page stays under 250 KB (63 KB measured) and draws a bounded number of marks."""
    trace = tmp_path / "big.jsonl"
    big_log(trace, 1_000_000)
    start = time.perf_counter()
    page = session_report(trace.open("rb"), "big.jsonl", "strict")
    seconds = time.perf_counter() - start
    size = len(page.encode("utf-8"))
    print(f"\nmillion-event log: page {size:,} bytes in {seconds:.1f}s")
    assert size < 250_000, f"{size:,} bytes"
    assert page.count('<g class="mk ') < 3_000
    assert page.count('<g class="row ') <= 24 + 16
    assert "<dd>1,000,000</dd>" in page  # the events after the header, counted
    assert "35,714 refused" in page  # the audit's own tally (every 7th of 250,000 compactions)
    assert not _EXTERNAL.search(page)


def test_scattered_ranges_are_binned(tmp_path: Path) -> None:
    """The worst shape for a picture: 200,000 one-offset truncations scattered through one
    summarizer input, so that the honest coverage is 200,000 pieces: still a small page.
    (Profile seed, which allows it: under strict and partitioned the audit's own sentence for
    this refusal is quadratic in the number of truncation lines, see ledger_explain._lines.)"""
    trace = tmp_path / "scattered.jsonl"
    count = 200_000
    with open(trace, "w", encoding="utf-8") as f:
        f.write(json.dumps(HEADER) + "\n" + f'{{"event": "append", "count": {3 * count + 10}}}\n')
        for i in range(count):
            f.write(f'{{"event": "truncate", "range": [{3 * i}, {3 * i + 1}]}}\n')
        f.write(f'{{"event": "compact", "summary_input": [0, {3 * count + 10}], "summary_covers": [0, {3 * count}], '
                f'"tail_start": {3 * count}}}\n')
    page = session_report(trace.open("rb"), "scattered.jsonl", "seed")
    assert len(page.encode("utf-8")) < 200_000
    assert page.count('<g class="mk ') < 2_000
    assert "200,000 truncations within [0, 599998)" in page
    assert "honest coverage 200,000 pieces within [1, 600000) (400,000 in all)" in page  # merged


def test_many_holes_are_binned_and_listed_in_part(tmp_path: Path) -> None:
    """A refusal with 5,000 holes: one merged mark, 20 listed, a count for the rest."""
    trace = tmp_path / "holes.jsonl"
    count = 5_000
    with open(trace, "w", encoding="utf-8") as f:
        f.write(json.dumps(HEADER) + "\n" + f'{{"event": "append", "count": {3 * count + 10}}}\n')
        for i in range(count):
            f.write(f'{{"event": "truncate", "range": [{3 * i}, {3 * i + 1}]}}\n')
        f.write(f'{{"event": "compact", "summary_input": [0, {3 * count + 10}], "summary_covers": [0, {3 * count}], '
                f'"tail_start": {3 * count}}}\n')
    page = session_report(trace.open("rb"), "holes.jsonl", "strict")
    assert len(page.encode("utf-8")) < 60_000
    assert "5,000 holes within [0, 14998) (5,000 turns) · no_hole" in page
    assert page.count('<li class="hole"') == 20 and "and 4,980 more holes (drawn above)" in page
    assert "more characters: tailguard audit prints it whole)" in page


def test_check_config_html(tmp_path: Path) -> None:
    report = tmp_path / "p.html"
    unsafe, safe = POLICIES["seed-incident"], POLICIES["seed-repaired"]
    code, _out, err = run_cli("check-config", "--html", str(report), str(unsafe), str(safe))
    assert code == 1, err
    page = report.read_text(encoding="utf-8")
    assert '<section class="policy" data-verdict="unsafe">' in page
    assert '<section class="policy" data-verdict="safe">' in page
    # the counterexample: occupancy chart with the ceiling and the trigger, stage actions per append
    assert "occupancy (tokens) over appends" in page
    assert "ceiling (stage 0 truncate) 160,000" in page and "trigger (stage 1 compact) 160,000" in page
    assert re.search(r'<tr data-append="9">.*drops turns \[0, 1\)', page)
    # the offsets that became holes, on the session axis below
    assert "The counterexample on the session axis" in page
    assert re.search(r'<g class="mk hole"[^>]*data-lo="0"', page)
    # the safe policy's invariant, in words
    assert "Why it is safe" in page and "occupancy in tokens ≤ 159,999 after the stages of every append" in page
    assert not _EXTERNAL.search(page)
    again = tmp_path / "q.html"
    assert run_cli("check-config", "--html", str(again), str(unsafe), str(safe))[0] == 1
    assert again.read_bytes() == report.read_bytes()
    code, _, err = run_cli("check-config", "--html", str(tmp_path / "no" / "x.html"), str(safe))
    assert code == 2 and "--html: cannot write" in err


def test_check_config_html_unknown(tmp_path: Path) -> None:
    """A budget that runs out: exit 3, and the page says unknown, never safe."""
    report = tmp_path / "u.html"
    policy = POLICIES["deepagents-offload-halt"]  # safe, but not within 1M units (the
    # concrete falsifier breaks the unsafe examples at any budget)
    code, _, err = run_cli("check-config", "--depth", "1", "--budget", "1", "--html", str(report), str(policy))
    assert code == 3, err
    page = report.read_text(encoding="utf-8")
    assert '<section class="policy" data-verdict="unknown">' in page
    assert "Never reported as safe." in page and "Why it is safe" not in page


def test_screenshots_are_current() -> None:
    """docs/img/*.png were rendered from the HTML the code writes now (by its sha256)."""
    import tools.html_screenshots as shots

    assert shots.stale() == [], "run: python tools/html_screenshots.py (needs Chromium)"
    recorded = json.loads(shots.SIDECAR.read_text(encoding="utf-8"))
    assert sorted(recorded) == sorted(name for name, *_ in shots.EXAMPLES)


def test_the_peak_before_the_stages_counts_a_turn_in_its_unit() -> None:
    """The dashed peak bar is the occupancy after the append, before the stages: a turn adds its
    tokens, its messages (the trace's count, else the fewest a turn holds) and one turn."""
    from tailguard.audit.html.policy_view import simulate
    from tailguard.pipeline.policy import Policy, Truncate

    policy = Policy("p", 5, 5, 1, "turns", (Truncate("messages", 100), Truncate("turns", 100),
                                            Truncate("tokens", 1000)), messages_per_turn=(3, 4))
    steps = simulate(policy, [5, 5], "partitioned")
    assert [s.peak for s in steps] == [{"messages": 3, "turns": 1, "tokens": 5},
                                      {"messages": 6, "turns": 2, "tokens": 10}]
    steps = simulate(policy, [5, 5], "partitioned", messages=[4, 3])
    assert [s.peak["messages"] for s in steps] == [4, 7]
    assert [s.after["messages"] for s in steps] == [4, 7]
