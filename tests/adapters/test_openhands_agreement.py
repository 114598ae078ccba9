"""The config side of the OpenHands runtime/config agreement (brief 6d).

``data/openhands_agreement.toml`` is checked here (``check-config`` needs z3, absent from the
OpenHands SDK's own venv); ``test_openhands_adapter.py`` drives the real SDK with the same file
in ``.venvs/py3.12-openhands`` and the guard never refuses a session of its shape.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tailguard.cli.main import main

POLICY = Path(__file__).resolve().parent / "data" / "openhands_agreement.toml"


def check_config(path: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check-config", str(path)], stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def test_check_config_calls_the_agreement_knobs_safe() -> None:
    code, text = check_config(POLICY)
    if "needs the optional package 'z3'" in text:
        pytest.skip("check-config needs z3 (the dev extra; CI's 3.11 run has it)")
    assert code == 0 and ": safe:" in text, text


def test_past_the_preview_the_same_knobs_are_unsafe(tmp_path: Path) -> None:
    """Broken on purpose: events longer than the SDK's 500-character preview; the check must
    then report a hole (the guard refuses there: test_openhands_adapter.py)."""
    bad = tmp_path / "bad.toml"
    bad.write_text(POLICY.read_text().replace("max_event_chars = 500\n", ""))
    code, text = check_config(bad)
    if "needs the optional package 'z3'" in text:
        pytest.skip("check-config needs z3 (the dev extra; CI's 3.11 run has it)")
    assert code == 1 and "hole" in text, text
