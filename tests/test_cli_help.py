"""Every command's --help states its exit codes, and every option has help text."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from tailguard.cli.main import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = sub.choices[name]
    return found


def _nested(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    out = [(parser.prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for p in action.choices.values():
                out += _nested(p)
    return out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_states_exit_codes_and_documents_every_option(name: str) -> None:
    for prog, parser in _nested(_subparser(name)):
        assert parser.epilog and parser.epilog.startswith("exit codes: "), f"{prog} --help gives no exit codes"
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help and action.help is not argparse.SUPPRESS, f"{prog}: {action.dest} has no help"


def test_top_level_help_points_to_the_exit_codes() -> None:
    proc = subprocess.run([sys.executable, "-m", "tailguard", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "exit codes:" in proc.stdout


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py")))
def test_every_benchmark_honours_help(script: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: "), f"{script} --help did not print a usage line"
