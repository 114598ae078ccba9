"""The HTML reports in a real browser: headless Chromium (Debian's package) over the
DevTools protocol (:mod:`tailguard.audit.html.browser`).

Each example report is loaded from disk; the test reads the rendered page: every hole of the
audit's JSON is a drawn mark (non-zero box) with a visible label naming its range, clause and
line; focus on a mark shows its tip; the console has no error or warning; the page made no
request but for its own file; a screenshot is taken (and is a PNG of the page's size). It is
skipped, with the reason in the summary, only where no Chromium can be found;
``TAILGUARD_REQUIRE_BROWSER=1`` (set by ``.ci/run`` once it has installed Chromium) turns that
skip into a failure.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tailguard.audit.html.browser import Browser, find_chromium
from tests.cli_helpers import run_cli
from tests.test_html_report import big_log

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""(() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
  const marks = [...document.querySelectorAll('g.mk')].map(g => ({
    kind: g.dataset.kind, lo: g.dataset.lo, hi: g.dataset.hi, line: g.dataset.line,
    box: box(g.querySelector('.shape') || g), title: (g.querySelector('title') || {}).textContent || ''}));
  const labels = [...document.querySelectorAll('text.lbl')].map(t => ({
    kind: t.dataset.kind, lo: t.dataset.lo, hi: t.dataset.hi, line: t.dataset.line,
    text: t.textContent, box: box(t), visible: getComputedStyle(t).visibility}));
  const first = document.querySelector('g.mk.hole') || document.querySelector('g.mk');
  let tip = null, tipBefore = null;
  if (first) {
    tipBefore = getComputedStyle(first.querySelector('.tip')).visibility;
    first.focus();
    tip = [document.activeElement === first, getComputedStyle(first.querySelector('.tip')).visibility];
  }
  return {marks, labels, tip, tipBefore, text: document.body.innerText,
          external: [...document.querySelectorAll('[src],[href],link,script,iframe,img')].length};
})()"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = find_chromium()
    if binary is None:
        if os.environ.get("TAILGUARD_REQUIRE_BROWSER") == "1":
            pytest.fail("TAILGUARD_REQUIRE_BROWSER=1 but no Chromium found")
        pytest.skip("NOTICE: no Chromium on this machine (apt-get install chromium, or set CHROMIUM): "
                    "the HTML report's browser test did not run")
    with Browser(binary) as b:
        yield b


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def _check_page(b: Browser, page: Path) -> dict[str, object]:
    loaded = b.load(page, PROBE)
    assert loaded.console_errors == [], loaded.console_errors
    assert loaded.requests == [page.resolve().as_uri()], f"the page fetched more than itself: {loaded.requests}"
    value = loaded.value
    assert isinstance(value, dict)
    assert value["external"] == 0
    w, h = _png_size(loaded.png)
    assert w >= 1000 and h > 300
    if value["tip"] is not None:  # a page with marks: focus on one shows its tip
        assert value["tipBefore"] == "hidden" and value["tip"] == [True, "visible"], "focus does not show the tip"
    return value


TRACES = sorted((ROOT / "examples" / "traces").glob("*.jsonl"))


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.stem)
def test_session_report_in_chromium(browser: Browser, trace: Path, tmp_path: Path) -> None:
    profile = "partitioned" if "langchain" in trace.stem else "strict"
    page = tmp_path / "r.html"
    code, _out, err = run_cli("audit", "--profile", profile, "--html", str(page), str(trace))
    assert code in (0, 1), err
    value = _check_page(browser, page)
    _, js, _ = run_cli("audit", "--profile", profile, "--format", "json", str(trace))
    audit = json.loads(js)
    marks, labels = value["marks"], value["labels"]
    assert isinstance(marks, list) and isinstance(labels, list)
    assert value["tip"] == [True, "visible"]
    for c in audit["compactions"]:
        for lo, hi in c["holes"]:
            key = (str(lo), str(hi), str(c["line"]))
            drawn = [m for m in marks if m.get("kind") == "hole" and (m["lo"], m["hi"], m["line"]) == key]
            assert drawn and all(m["box"][0] > 0 and m["box"][1] > 0 for m in drawn), f"hole {key} not drawn"
            assert f"[{lo}, {hi})" in drawn[0]["title"]
            named = [x for x in labels if x.get("kind") == "hole" and (x["lo"], x["hi"], x["line"]) == key]
            assert named, f"hole {key} has no label"
            assert named[0]["visible"] == "visible" and named[0]["box"][0] > 0
            assert named[0]["text"].startswith(f"hole [{lo}, {hi}) · no_hole · ")
            assert "line " in named[0]["text"]
    text = value["text"]
    assert isinstance(text, str)
    if trace.stem == "seed-incident":  # the "Done when", as the browser shows it
        assert "hole [0, 8) · no_hole · truncated at line 3, never summarized or spilled" in text
        assert "truncation [0, 8) (8 turns) at line 3" in text


@pytest.mark.parametrize("policy", ["seed-incident", "seed-repaired"])
def test_policy_report_in_chromium(browser: Browser, policy: str, tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    code, _, err = run_cli("check-config", "--html", str(page), str(ROOT / "examples" / "policies" / f"{policy}.toml"))
    assert code in (0, 1), err
    value = _check_page(browser, page)
    text = value["text"]
    assert isinstance(text, str)
    if code == 1:
        assert "occupancy (tokens) over appends" in text
        holes = [m for m in value["marks"] if m.get("kind") == "hole"]  # type: ignore[union-attr]
        assert holes and all(m["box"][0] > 0 for m in holes)
    else:
        assert "Why it is safe" in text and "occupancy in tokens ≤" in text


def test_big_log_renders(browser: Browser, tmp_path: Path) -> None:
    """A long log's page (aggregate rows) renders without errors, holes drawn and labelled."""
    trace = tmp_path / "big.jsonl"
    big_log(trace, 100_000)
    page = tmp_path / "big.html"
    code, _, err = run_cli("audit", "--html", str(page), str(trace))
    assert code == 1, err
    value = _check_page(browser, page)
    holes = [m for m in value["marks"] if m.get("kind") == "hole"]  # type: ignore[union-attr]
    assert holes and all(m["box"][0] > 0 for m in holes)
    assert any(x["kind"] == "hole" for x in value["labels"])  # type: ignore[union-attr]


def test_a_200000_character_id_keeps_the_page_width(browser: Browser, tmp_path: Path) -> None:
    """Issue 30 point 10: a 200,000-character summary id, override, adopt reason and unit made
    the page 2,167,056 px wide. Elided in the layout (the text and JSON reports keep them whole),
    the page is as wide as the window."""
    long = "x" * 200_000
    header = {"event": "session", "unit": long, "recovery_floor_span": 12, "floor_unit": "turns",
              "truncator_unit": "turns"}
    lines = [json.dumps(header), '{"event": "append", "count": 40}', '{"event": "truncate", "range": [0, 8]}',
             '{"event": "append", "count": 8}',
             json.dumps({"event": "compact", "summary_input": [8, 48], "summary_covers": [8, 36], "tail_start": 36,
                         "summary": "s" + long, "override": "o" + long})]
    trace = tmp_path / "long.jsonl"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    page = tmp_path / "long.html"
    code, _, err = run_cli("audit", "--html", str(page), str(trace))
    assert code == 1, err
    loaded = browser.load(page, "(() => ({w: document.documentElement.scrollWidth}))()", screenshot=False)
    assert loaded.console_errors == []
    value = loaded.value
    assert isinstance(value, dict) and value["w"] <= 1240, value
