"""The README's "Proved properties" list is complete: every theorem listed, none missing."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tailguard.cli.prove import load_theorems
from tailguard.tooling.theorems import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_proved_properties_list_matches_the_registry() -> None:
    load_theorems()
    section = _section((ROOT / "README.md").read_text(), "Proved properties")
    listed = re.findall(r"^- \*\*(\w+)\*\*", section, flags=re.M)
    assert sorted(listed) == sorted(REGISTRY), "README lists theorems that do not exist, or misses some"
    for tid, thm in REGISTRY.items():
        line = next(ln for ln in section.splitlines() if ln.startswith(f"- **{tid}**"))
        module_path = thm.module.replace(".", "/") + ".py"
        assert f"]({module_path}" in line, f"{tid} must link to its proof {module_path}"
        assert (ROOT / module_path).exists()


def test_quick_start_commands_present() -> None:
    text = (ROOT / "README.md").read_text()
    quick = _section(text, "Quick start")
    assert "examples/cases/seed-incident.json" in quick
    assert "bash .ci/test" in quick or "pytest" in quick


# -- the README's examples print what they show ---------------------------------------------

def _blocks(lang: str) -> list[tuple[int, str]]:
    """``(first body line number, body)`` of every fenced block of ``lang`` ("" = no language) in the README."""
    found: list[tuple[int, str]] = []
    opened: tuple[str, int, list[str]] | None = None
    for number, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1):
        if opened is None:
            if line.startswith("```"):
                opened = (line[3:].strip(), number + 1, [])
        elif line.startswith("```"):
            if opened[0] == lang:
                found.append((opened[1], "".join(x + "\n" for x in opened[2])))
            opened = None
        else:
            opened[2].append(line)
    return found


def _split_comment(line: str) -> tuple[str, str] | None:
    """``code  # shown`` -> (code, shown), or None when the line has no trailing comment."""
    import tokenize
    from io import StringIO

    try:
        tokens = list(tokenize.generate_tokens(StringIO(line).readline))
    except (tokenize.TokenError, IndentationError):
        return None
    comments = [t for t in tokens if t.type == tokenize.COMMENT]
    if not comments:
        return None
    col = comments[-1].start[1]
    return line[:col].rstrip(), comments[-1].string[1:].strip()


def test_python_examples_print_what_they_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``expr  # value`` line of a python block evaluates to that value, every
    ``print(...)  # text`` line prints that text; other comments are prose and are skipped."""
    import ast
    import contextlib
    import io

    monkeypatch.chdir(tmp_path)  # examples write files (session.jsonl)
    checked = 0
    namespace: dict[str, object] = {}  # one session, as a reader goes: later blocks use earlier imports
    for start, body in _blocks("python"):
        lines = body.splitlines()
        out: list[str] = []
        for i, line in enumerate(lines):
            split = _split_comment(line)
            if split is None or not split[0].strip():
                out.append(line)
                continue
            code, shown = split
            indent = code[: len(code) - len(code.lstrip())]
            try:
                node = ast.parse(code.strip(), mode="eval").body
            except SyntaxError:
                out.append(line)
                continue
            where = f"README.md:{start + i}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                out.append(f"{indent}_check_print(lambda: {code.strip()}, {shown!r}, {where!r})")
                checked += 1
                continue
            try:
                ast.literal_eval(shown)
            except (ValueError, SyntaxError):
                out.append(line)  # prose, e.g. "# allowed"
                continue
            out.append(f"{indent}_check_value(({code.strip()}), {shown!r}, {where!r})")
            checked += 1

        def _check_print(fn: object, shown: str, where: str) -> None:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                fn()  # type: ignore[operator]
            assert buf.getvalue().rstrip("\n") == shown, f"{where}: prints {buf.getvalue()!r}, README shows {shown!r}"

        def _check_value(value: object, shown: str, where: str) -> None:
            assert value == ast.literal_eval(shown), f"{where}: gives {value!r}, README shows {shown}"

        namespace.update(_check_print=_check_print, _check_value=_check_value)
        exec(compile("\n".join(out), f"README.md:{start}", "exec"), namespace)
    assert checked >= 3, f"only {checked} checked example lines: the README's examples moved or the parser broke"


def test_console_examples_print_what_they_show() -> None:
    import subprocess
    import sys

    runs = 0
    for start, body in _blocks(""):
        if not body.startswith("$ tailguard "):
            continue
        for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
            command, _, shown = chunk.partition("\n")
            argv = command.split()
            assert argv[0] == "tailguard"
            proc = subprocess.run([sys.executable, "-m", "tailguard", *argv[1:]], cwd=ROOT, capture_output=True,
                                  text=True, timeout=120)
            assert proc.stdout == shown, f"README.md:{start}: `{command}` prints\n{proc.stdout}"
            runs += 1
    assert runs >= 2


def test_quick_start_decides_the_seed_incident_as_it_says() -> None:
    from tests.cli_helpers import run_cli

    quick = _section((ROOT / "README.md").read_text(), "Quick start")
    assert "exit 1" in quick and "[0, 8)" in quick
    code, out, _ = run_cli("check", "--format", "json", str(ROOT / "examples/cases/seed-incident.json"))
    assert code == 1
    assert '"holes": [[0, 8]]' in out


def _quick_start_commands() -> list[str]:
    quick = _section((ROOT / "README.md").read_text(), "Quick start")
    return [body.strip() for _, body in _blocks("sh") if body.strip() in quick]


def test_quick_start_first_command_runs_as_written(tmp_path: Path) -> None:
    """The first quick-start command, run by a shell as written (its venv moved out of the
    checkout): a fresh venv, the package alone, and the seed's incident refused (exit 1)."""
    import subprocess

    first = _quick_start_commands()[0]
    assert first.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && ")
    venv = tmp_path / "venv"
    command = first.replace(".venv", shlex_quote(str(venv)))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "refuse" in proc.stdout and "[0, 8)" in proc.stdout, proc.stdout
    assert (venv / "bin" / "tailguard").exists()


def test_quick_start_test_command_is_what_ci_runs() -> None:
    """The second quick-start command is the install ``.ci/run`` makes, then ``bash .ci/test``,
    which ``.ci/run`` runs next: CI executes it on every clean clone."""
    second = _quick_start_commands()[1]
    install = "pip install -c .ci/constraints.txt -e '.[dev,frameworks,fleet,parquet]'"
    assert second == f"python3 -m venv .venv && . .venv/bin/activate && {install} && bash .ci/test"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m venv .venv\n" in ci and "python -m pip install --quiet -c .ci/constraints.txt -e " \
        "'.[dev,frameworks,fleet,parquet]'\n" in ci
    assert ci.index(install.split(" -e ")[1]) < ci.rindex(" bash .ci/test ")


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
