"""Screenshots of the HTML reports for the docs, and the check that they are current.

    python tools/html_screenshots.py          # render every example report, screenshot it
    python tools/html_screenshots.py --check  # exit 1 if a screenshot is stale

Pixels differ across machines (fonts, Chromium versions), so "current" is defined on the
input, not the pixels: ``docs/img/html-report.json`` records, for every screenshot, the
sha256 of the HTML page it was rendered from. ``--check`` (and the test
``tests/test_html_report.py::test_screenshots_are_current``) renders every page afresh and
compares: a change to the report that is not followed by new screenshots fails. The
screenshots are taken by the same driver and probe as the browser test
(:mod:`tailguard.audit.html.browser`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
SIDECAR = IMG / "html-report.json"

#: (screenshot name, kind, input relative to the repository root, profile)
EXAMPLES: tuple[tuple[str, str, str, str], ...] = (
    ("session-seed-incident", "audit", "examples/traces/seed-incident.jsonl", "strict"),
    ("session-langchain-lost-summary", "audit", "examples/traces/langchain-lost-summary.jsonl", "partitioned"),
    ("session-healthy", "audit", "examples/traces/healthy.jsonl", "strict"),
    ("policy-seed-incident", "check-config", "examples/policies/seed-incident.toml", "partitioned"),
    ("policy-seed-repaired", "check-config", "examples/policies/seed-repaired.toml", "partitioned"),
)
MAX_HEIGHT = 1500  # screenshots are cropped to the top of the page: the picture


def render(kind: str, source: str, profile: str) -> str:
    """The page ``tailguard audit --html`` / ``check-config --html`` writes, run from the root."""
    from tailguard.audit.html import policy_report, session_report

    if kind == "audit":
        with open(ROOT / source, "rb") as f:
            return session_report(f, source, profile)
    from tailguard.pipeline.model import Profile
    from tailguard.pipeline.policy import load_policy
    from tailguard.pipeline.report import Report
    from tailguard.pipeline.solver import decide

    prof: Profile = "strict" if profile == "strict" else "partitioned"
    policy = load_policy(str(ROOT / source))
    policy = dataclasses.replace(policy, file=source)
    return policy_report([Report(policy, decide(policy, profile=prof), [])], profile)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stale() -> list[str]:
    """Names whose recorded HTML hash differs from a fresh render (or that are missing)."""
    try:
        recorded = json.loads(SIDECAR.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    out = []
    for name, kind, source, profile in EXAMPLES:
        entry = recorded.get(name, {})
        if entry.get("html_sha256") != digest(render(kind, source, profile)) or not (IMG / f"{name}.png").exists():
            out.append(name)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a screenshot is stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for name in bad:
            print(f"docs/img/{name}.png is stale: run python tools/html_screenshots.py", file=sys.stderr)
        return 1 if bad else 0
    import tempfile

    from tailguard.audit.html.browser import Browser, find_chromium

    binary = find_chromium()
    if binary is None:
        print("no Chromium found (apt-get install chromium, or set CHROMIUM)", file=sys.stderr)
        return 2
    record: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp, Browser(binary) as browser:
        for name, kind, source, profile in EXAMPLES:
            html = render(kind, source, profile)
            page = Path(tmp) / f"{name}.html"
            page.write_text(html, encoding="utf-8")
            loaded = browser.load(page, "document.title", max_height=MAX_HEIGHT)
            if loaded.console_errors:
                print(f"{name}: console errors: {loaded.console_errors}", file=sys.stderr)
                return 1
            (IMG / f"{name}.png").write_bytes(loaded.png)
            cmd = "tailguard audit" if kind == "audit" else "tailguard check-config"
            record[name] = {"html_sha256": digest(html),
                            "from": f"{cmd} --profile {profile} --html {name}.html {source}"}
            print(f"docs/img/{name}.png ({len(loaded.png):,} bytes)")
    SIDECAR.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
