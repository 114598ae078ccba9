"""Issue 17, inputs and command line: every repro of the review, pinned.

Each test names the finding it pins. Bad input is exit 2 with a message naming where, never
a traceback and never a silent allow; a closed stdout keeps the verdict's exit code.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tailguard._generated import checker
from tailguard._generated.checker import CaseError, check, check_case, explain
from tailguard.base import jsonstrict
from tailguard.cli import main as cli_main
from tailguard.runtime.eventlog import EventLogError, iter_events, torn_reason
from tailguard.spill import FileSpillStore
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")

README_CASE: dict[str, Any] = {
    "history_end": 60, "tail_start": 48, "summary_input": (8, 60), "summary_covers": (8, 48),
    "recovery_floor_span": 12, "floor_unit": "turns", "truncator_unit": "turns",
}
HEADER = ('{"event": "session", "unit": "turns", "recovery_floor_span": 12, "floor_unit": "turns", '
          '"truncator_unit": "turns"}')
INCIDENT = [HEADER, '{"event": "append", "count": 40}', '{"event": "truncate", "range": [0, 8]}',
            '{"event": "append", "count": 8}',
            '{"event": "compact", "summary_input": [8, 48], "summary_covers": [8, 36], "tail_start": 36}']
HEALTHY = [HEADER, '{"event": "append", "count": 48}',
           '{"event": "compact", "summary_input": [0, 48], "summary_covers": [0, 36], "tail_start": 36}']


def _case_json(**changes: Any) -> dict[str, Any]:
    case = {k: list(v) if isinstance(v, tuple) else v for k, v in README_CASE.items()}
    case.update(prior_truncations=[[0, 8]], prior_coverage=[], spills=[])
    case.update(changes)
    return case


def _write(tmp_path: Path, name: str, data: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


# -- point 1: check() fails closed ---------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: map(tuple, [[0, 8]]),
    lambda: ((lo, hi) for lo, hi in [(0, 8)]),
    lambda: iter([(0, 8)]),
    lambda: {(0, 8)},
    lambda: [[0, 8]],
])
def test_readme_example_with_an_iterator_refuses(make: Any) -> None:
    """Finding: ``prior_truncations=map(tuple, [[0, 8]])`` gave allow (well_formed consumed it)."""
    for profile in ("strict", "partitioned"):
        d = check(profile, **README_CASE, prior_truncations=make())
        assert (d.decision, d.failed, d.holes) == ("refuse", ("no_hole",), ((0, 8),))
    seed_case = {**README_CASE, "summary_input": (0, 60), "tail_start": 12}  # its floor [0, 12)
    assert check("seed", **seed_case, prior_truncations=make()).failed == ("truncation_clear",)


def test_an_iterator_is_consumed_exactly_once() -> None:
    pulls = []

    def gen() -> Iterator[tuple[int, int]]:
        pulls.append(1)
        yield (0, 8)

    assert check("strict", **README_CASE, prior_truncations=gen()).decision == "refuse"
    assert pulls == [1]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("history_end", 60.0, "history_end: expected an integer, got float 60.0"),
    ("history_end", float("inf"), "history_end: expected an integer, got float inf"),
    ("recovery_floor_span", float("nan"), "recovery_floor_span: expected an integer, got float nan"),
    ("tail_start", True, "tail_start: expected an integer, got bool True"),
    ("summary_input", (8, 60, 1), "summary_input: expected a pair [lo, hi], got (8, 60, 1)"),
    ("summary_covers", iter([8, 48]), "summary_covers: expected a pair [lo, hi], got <list_iterato"),
    ("prior_truncations", [(0, 8.0)], "prior_truncations[0][1]: expected an integer, got float 8.0"),
    ("prior_truncations", [(0, 8, 9)], "prior_truncations[0]: expected a pair [lo, hi], got (0, 8, 9)"),
    ("prior_truncations", "08", "prior_truncations: expected a list of [lo, hi] pairs, got str"),
    ("prior_coverage", {0: 8}, "prior_coverage: expected a list of [lo, hi] pairs, got dict"),
    ("spills", 7, "spills: expected a list of [lo, hi] pairs, got int"),
    ("spills", [None], "spills[0]: expected a pair [lo, hi], got None"),
    ("floor_unit", b"turns", "floor_unit: expected a unit name (string), got bytes b'turns'"),
])
def test_check_rejects_non_integers_and_non_pairs_naming_the_field(field: str, value: Any, message: str) -> None:
    """Finding: ``check()`` accepted floats and ``inf`` and raised bare errors."""
    args = {**README_CASE, field: value}
    with pytest.raises(CaseError) as info:
        check("strict", **args)
    assert str(info.value).startswith(message)
    assert info.value.field == message.split(":")[0]


def test_huge_integers_are_a_case_error_not_a_crash() -> None:
    """Finding: huge integers crashed (the CLI at 4,300 digits; explain() on its str())."""
    big = 10**checker.MAX_INT_DIGITS
    for field in ("history_end", "tail_start", "recovery_floor_span"):
        with pytest.raises(CaseError, match=f"^{field}: an integer of more than 1,000 digits"):
            check("strict", **{**README_CASE, field: big})
    with pytest.raises(CaseError, match=r"^spills\[0\]\[0\]: an integer of more than"):
        check("strict", **README_CASE, spills=[(-big, 0)])
    with pytest.raises(CaseError, match=r"^summary_input: expected a pair \[lo, hi\], got \(0, 1, 1000") as info:
        check("strict", **{**README_CASE, "summary_input": (0, 1, big)})
    assert len(str(info.value)) < 120  # abbreviated, never 1,000 digits
    # the largest integers inside the limit decide, and explain() can print them
    edge = big - 1
    case = {**README_CASE, "history_end": edge, "tail_start": edge, "summary_input": (0, edge)}
    d = check("strict", **case)
    assert "no_hole" in d.failed
    assert all(isinstance(s, str) for s in explain("strict", d, **case))


def test_more_intervals_than_the_limit_raise_before_the_work() -> None:
    """Finding: ``check`` on 1 M intervals took 3.9 s and 468 MB with no cap."""
    limit = checker.MAX_INTERVALS
    ok = [(0, 1)] * (limit // 2)
    with pytest.raises(CaseError, match="more than 100,000 intervals in the case"):
        check("strict", **README_CASE, prior_truncations=ok, prior_coverage=ok, spills=[(0, 1)])
    endless = ((i, i + 1) for i in iter(int, 1))  # an endless generator: read up to the limit only
    with pytest.raises(CaseError, match=r"^prior_truncations: more than"):
        check("strict", **README_CASE, prior_truncations=endless)
    assert check("strict", **README_CASE, prior_truncations=ok, prior_coverage=ok).decision == "refuse"


def test_list_arguments_default_to_empty_and_immutably() -> None:
    import inspect

    params = inspect.signature(check).parameters
    for name in ("prior_truncations", "prior_coverage", "spills"):
        assert params[name].default == ()
    healthy = {**README_CASE, "summary_input": (0, 60), "summary_covers": (0, 48)}
    assert check("strict", **healthy) == check("strict", **healthy, prior_truncations=[], prior_coverage=[],
                                               spills=[]) == ("allow", (), ())
    assert check("strict", **README_CASE).holes == ((0, 8),)  # never summarized: a hole without any list


def test_check_case_reads_strictly_and_requires_every_field() -> None:
    with pytest.raises(CaseError, match=r"^spills: missing field"):
        check_case({k: v for k, v in _case_json().items() if k != "spills"})
    with pytest.raises(CaseError, match=r"^profile: unknown profile"):
        check_case(_case_json(), ["strict"])  # type: ignore[arg-type]
    assert check_case(_case_json()).failed == ("no_hole",)


def test_generated_checker_exports_only_its_api() -> None:
    names: dict[str, Any] = {}
    exec("from tailguard._generated.checker import *", names)  # the star import is the test
    exported = set(names) - {"__builtins__"}
    assert exported == set(checker.__all__)
    assert not exported & {"Any", "Mapping", "Iterable", "NamedTuple", "Callable", "annotations"}
    assert {"check", "check_case", "explain", "read_case", "Decision", "CaseError"} <= exported


def test_generated_checker_states_and_keeps_its_python_range() -> None:
    """The header says 3.9 to 3.13; the source parses as 3.9 and runs on each installed interpreter."""
    from tailguard.backends.python_render import PYTHON_RANGE

    path = ROOT / "src/tailguard/_generated/checker.py"
    source = path.read_text(encoding="utf-8")
    assert f"Runs on Python {PYTHON_RANGE[0]} to {PYTHON_RANGE[1]}." in source
    ast.parse(source, feature_version=(3, 9))
    lo, hi = (int(v.split(".")[1]) for v in PYTHON_RANGE)
    probe = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('c', sys.argv[1]); "
             "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
             "print(m.check('strict', history_end=60, tail_start=48, summary_input=(8, 60), "
             "summary_covers=(8, 48), recovery_floor_span=12, floor_unit='turns', truncator_unit='turns', "
             "prior_truncations=map(tuple, [[0, 8]])).failed)")
    ran = []
    for minor in range(lo, hi + 1):
        exe = interpreter(minor)
        if exe is None:
            continue
        proc = subprocess.run([exe, "-c", probe, str(path)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stdout.strip() == "('no_hole',)", (exe, proc.stderr)
        ran.append(minor)
    assert sys.version_info[1] in ran or not ran


def interpreter(minor: int) -> str | None:
    """A Python 3.``minor`` that runs: on PATH (a pyenv shim may exist and refuse to run), or one
    of pyenv's versions."""
    candidates = [shutil.which(f"python3.{minor}"),
                  *(str(p) for p in sorted(Path.home().glob(f".pyenv/versions/3.{minor}.*/bin/python3.{minor}")))]
    for exe in candidates:
        if exe is not None and subprocess.run([exe, "-c", "pass"], capture_output=True).returncode == 0:
            return exe
    return None


@needs_node
def test_js_checker_fails_closed_the_same_way(tmp_path: Path) -> None:
    script = tmp_path / "probe.mjs"
    script.write_text(f"""
import {{ check, CaseError }} from {json.dumps(str(ROOT / "js/tailguard-checker.mjs"))};
const base = {json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in README_CASE.items()})};
const out = [];
out.push(check("strict", {{ ...base, prior_truncations: [[0, 8]].values() }}).failed);
out.push(check("strict", {{ ...base, prior_truncations: new Set([[0, 8]]) }}).failed);
out.push(check("strict", {{ ...base, summary_input: [0, 60], summary_covers: [0, 48] }}).decision);
for (const bad of [{{ history_end: 60.5 }}, {{ history_end: Infinity }}, {{ history_end: 10n }},
                   {{ tail_start: true }}, {{ prior_truncations: "ab" }}, {{ spills: [[0, 1, 2]] }},
                   {{ prior_coverage: Array(100001).fill([0, 1]) }}]) {{
  try {{ check("strict", {{ ...base, ...bad }}); out.push("ALLOWED"); }}
  catch (e) {{ out.push(e instanceof CaseError ? e.message : `not a CaseError: ${{e}}`); }}
}}
console.log(JSON.stringify(out));
""")
    proc = subprocess.run([str(NODE), str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got[:3] == [["no_hole"], ["no_hole"], "allow"]
    assert got[3:] == [
        "history_end: expected an integer, got number 60.5",
        "history_end: expected an integer, got number Infinity",
        "history_end: expected an integer, got bigint 10n",
        "tail_start: expected an integer, got boolean true",
        "prior_truncations: expected a list of [lo, hi] pairs, got string",
        "spills[0]: expected a pair [lo, hi], got [0,1,2]",
        "prior_coverage: more than 100000 intervals in the case (the limit; "
        "prior_truncations, prior_coverage and spills together)",
    ]


# -- point 1: duplicate keys in every JSON input ------------------------------------------------

def test_duplicate_key_in_a_case_file_is_an_input_error(tmp_path: Path) -> None:
    """Finding: the last of two ``prior_truncations`` keys won silently."""
    text = json.dumps(_case_json())[:-1] + ',\n "prior_truncations": []}'
    path = _write(tmp_path, "case.json", text)
    code, out, err = run_cli("check", path)
    assert (code, out) == (2, "")
    assert err == f'tailguard check: {path}:2:2: duplicate key "prior_truncations"\n'


def test_duplicate_key_in_the_event_log_is_an_input_error(tmp_path: Path) -> None:
    """Finding: ``{"event": "truncate", "range": [0, 8], "range": [0, 0]}`` turned a refusal into an allow."""
    lines = list(INCIDENT)
    lines[2] = '{"event": "truncate", "range": [0, 8], "range": [0, 0]}'
    path = _write(tmp_path, "t.jsonl", "\n".join(lines) + "\n")
    for fmt in ("text", "json"):
        code, out, err = run_cli("audit", "--format", fmt, path)
        assert (code, out, err) == (2, "", f'{path}:3: range: duplicate key "range" in one object\n')
    with pytest.raises(EventLogError, match=r'^t:2: b: duplicate key "b"'):
        list(iter_events([HEADER, '{"event": "append", "x": {"b": 1, "b": 1}}'], "t"))


def _store_with_record(tmp_path: Path, raw: bytes) -> str:
    store = tmp_path / "store"
    FileSpillStore(store, create=True).put(b"hello")
    (store / "records" / (hashlib.sha256(raw).hexdigest() + ".json")).write_bytes(raw)
    return str(store)


@pytest.mark.parametrize(("raw", "reason"), [
    (b'{"format": 1, "format": 1, "handle": "x", "size": 0, "session": null, "range": null, '
     b'"unit": null, "time": "t"}', 'duplicate key "format"'),
    (b'{"a": ' + b"[" * 3000 + b"]" * 3000 + b"}", "nested 3,001 deep (the limit is 64)"),
    (b'{"size": ' + b"9" * 5000 + b"}", "an integer of 5,000 digits (the limit is 1,000)"),
])
def test_a_planted_spill_record_is_rejected_not_a_traceback(tmp_path: Path, raw: bytes, reason: str) -> None:
    """Findings: duplicate keys in a spill record; deep JSON in a planted record (``list``, ``verify``)."""
    store = _store_with_record(tmp_path, raw)
    code, out, err = run_cli("spill", "list", "--store", store)
    assert code == 1 and reason in err and "Traceback" not in err
    assert len(out.splitlines()) == 1  # the intact record is still listed
    code, out, _ = run_cli("spill", "verify", "--store", store)
    assert code == 1 and "PROBLEM corrupt-record records/" in out and reason in out


def test_surrogates_in_spill_list_are_printed_escaped(tmp_path: Path) -> None:
    """Finding: a lone surrogate in a record's session crashed ``spill list``."""
    store = tmp_path / "store"
    handle = FileSpillStore(store, create=True).put(b"x")
    doc = {"format": 1, "handle": handle, "size": 1, "session": "\ud800s", "range": None, "unit": None,
           "time": "2026-01-01T00:00:00.000000Z"}
    raw = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()
    (store / "records" / (hashlib.sha256(raw).hexdigest() + ".json")).write_bytes(raw)
    proc = subprocess.run([PY, "-m", "tailguard", "spill", "list", "--store", str(store)],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
    assert b'"\\ud800s"' in proc.stdout


# -- point 3: torn logs -------------------------------------------------------------------------

def test_torn_last_line_is_a_warning_and_the_prefix_is_judged(tmp_path: Path) -> None:
    """Finding: a torn last line made ``audit`` judge nothing (exit 2)."""
    refusing = _write(tmp_path, "r.jsonl", "\n".join(INCIDENT) + '\n{"event": "append", "cou')
    clean = _write(tmp_path, "c.jsonl", "\n".join(HEALTHY) + '\n{"event": "trunc')
    for path, verdict in ((refusing, 1), (clean, 0)):
        n = 6 if path == refusing else 4
        for fmt in ("text", "json"):
            code, out, err = run_cli("audit", "--format", fmt, path)
            assert code == verdict, err
            assert err.startswith(f"{path}:{n}: warning: torn last line ignored (no line end; not valid JSON")
            assert f"judged lines 1 to {n - 1}" in err
        code, out, err = run_cli("audit", "--strict-tail", path)
        assert (code, out) == (2, "")
        assert err.startswith(f"{path}:{n}: line: torn last line")


def test_a_torn_line_elsewhere_stays_an_input_error(tmp_path: Path) -> None:
    lines = list(INCIDENT)
    lines.insert(2, '{"event": "append", "cou')
    path = _write(tmp_path, "t.jsonl", "\n".join(lines) + "\n")
    code, out, err = run_cli("audit", path)
    assert (code, out) == (2, "") and err.startswith(f"{path}:3: line: not valid JSON")
    # a last line with no line end that is valid JSON is complete, not torn
    assert run_cli("audit", _write(tmp_path, "ok.jsonl", "\n".join(INCIDENT)))[0] == 1
    assert torn_reason(b'{"event": "append"}') is None
    assert torn_reason(b'{"event": "app\n') is None
    assert torn_reason(b'{"event": "app') is not None
    assert torn_reason(b'{"event": "\xe2\x82') is not None  # cut inside a UTF-8 character


# -- point 4: exit codes that never lie ---------------------------------------------------------

class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stdout_keeps_the_verdicts_exit_code(tmp_path: Path) -> None:
    """Finding: ``main()`` returned 0 on BrokenPipeError whatever the verdict."""
    refusing = _write(tmp_path, "r.jsonl", "\n".join(INCIDENT) + "\n")
    clean = _write(tmp_path, "c.jsonl", "\n".join(HEALTHY) + "\n")
    err = io.StringIO()
    assert cli_main.main(["audit", refusing], stdout=_ClosedPipe(), stderr=err) == 1
    assert cli_main.main(["audit", "--format", "json", refusing], stdout=_ClosedPipe(), stderr=err) == 1
    assert cli_main.main(["audit", clean], stdout=_ClosedPipe(), stderr=err) == 0
    case = _write(tmp_path, "case.json", json.dumps(_case_json()))
    assert cli_main.main(["check", case], stdout=_ClosedPipe(), stderr=err) == 1
    assert err.getvalue() == ""


def test_a_closed_pipe_under_a_real_shell_keeps_exit_1(tmp_path: Path) -> None:
    lines = [HEADER]
    for n in range(10, 1010, 10):  # 100 refusals: far more report than a pipe holds
        lines += ['{"event": "append", "count": 10}',
                  f'{{"event": "compact", "summary_input": [{n - 10}, {n}], "summary_covers": [{n - 10}, {n - 5}], '
                  f'"tail_start": {n - 5}, "saw": []}}']
    path = _write(tmp_path, "big.jsonl", "\n".join(lines) + "\n")
    shell = f'set -o pipefail; "{PY}" -m tailguard audit "{path}" | head -c 10 >/dev/null'
    proc = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_an_internal_error_is_exit_2_with_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Finding: tracebacks with exit 1 (read as a verdict)."""
    import tailguard.cli.check as check_cli

    def boom(*_: object) -> int:
        raise RuntimeError("kaboom\nwith a second line")

    monkeypatch.setattr(check_cli, "run", boom)
    code, out, err = run_cli("check", "x.json")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("tailguard check: internal error (RuntimeError: kaboom with a second line); "
                          "this is a bug in tailguard: please report it")
    monkeypatch.setenv(cli_main.DEBUG_ENV, "1")
    with pytest.raises(RuntimeError):
        run_cli("check", "x.json")


@pytest.mark.parametrize(("text", "message"), [
    (json.dumps(_case_json()).replace("60,", "9" * 4301 + ",", 1),
     ":1:17: an integer of 4,301 digits (the limit is 1,000)"),
    (json.dumps(_case_json()).replace("60,", "9" * 1001 + ",", 1),
     ":1:17: an integer of 1,001 digits (the limit is 1,000)"),
    (json.dumps(_case_json()).replace("60,", "NaN,", 1), ": invalid JSON: NaN is not JSON (numbers must be finite)"),
    (json.dumps(_case_json(extra=json.loads("[" * 65 + "]" * 65))),
     ":1:1: nested 66 deep (the limit is 64)"),
    ("[" * 100_000, ":1:1: nested 100,000 deep (the limit is 64)"),
    (json.dumps(_case_json(prior_coverage=[[0, 1]] * 100_001), separators=(",", ":")),
     ": prior_coverage: more than 100,000 intervals in the case"),
])
def test_check_limits_are_exit_2_naming_where(tmp_path: Path, text: str, message: str) -> None:
    """Finding: an integer of more than 4,300 digits in ``check`` was a traceback."""
    path = _write(tmp_path, "case.json", text)
    code, out, err = run_cli("check", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"tailguard check: {path}{message}"), err


def test_a_case_file_over_the_byte_limit_is_refused_unread(tmp_path: Path) -> None:
    path = _write(tmp_path, "case.json", " " * (jsonstrict.MAX_CASE_BYTES + 1))
    code, _, err = run_cli("check", path)
    assert code == 2 and err == f"tailguard check: {path}: a case file over the limit of 4,194,304 bytes\n"


def test_event_log_limits_are_exit_2_naming_the_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = '{"event": "append", "x": ' + "[" * 3000 + "]" * 3000 + "}"
    huge = '{"event": "append", "count": ' + "1" * 5000 + "}"
    path = _write(tmp_path, "t.jsonl", "\n".join([HEADER, deep]) + "\n")
    assert run_cli("audit", path) == (2, "", f"{path}:2: line: nested 3,001 deep (the limit is 64)\n")
    path = _write(tmp_path, "t.jsonl", "\n".join([HEADER, huge]) + "\n")
    assert run_cli("audit", path) == (2, "", f"{path}:2: line: an integer of 5,000 digits (the limit is 1,000)\n")
    monkeypatch.setattr(jsonstrict, "MAX_LINE_BYTES", 200)
    path = _write(tmp_path, "t.jsonl", "\n".join([HEADER, '{"event": "append", "pad": "' + "x" * 300 + '"}']) + "\n")
    assert run_cli("audit", path) == (2, "", f"{path}:2: line: a line over the limit of 200 bytes\n")


def test_a_non_utf8_file_name_in_text_audit(tmp_path: Path) -> None:
    """Finding: a non-UTF-8 file name crashed the text audit."""
    name = os.fsdecode(b"t\xff.jsonl")
    path = tmp_path / name
    path.write_text("\n".join(INCIDENT) + "\n")
    proc = subprocess.run([PY, "-m", "tailguard", "audit", os.fsencode(path)], capture_output=True, timeout=120)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert b"t\\xff.jsonl:5: compaction refused (no_hole)" in proc.stdout
    case = tmp_path / os.fsdecode(b"c\xff.json")
    case.write_text(json.dumps(_case_json()))
    proc = subprocess.run([PY, "-m", "tailguard", "check", os.fsencode(case)], capture_output=True, timeout=120)
    assert proc.returncode == 1 and b"c\\xff.json: refuse (profile strict)" in proc.stdout


@pytest.mark.parametrize(("body", "message"), [
    ('turn_tokens = [1, ' + "9" * 5000 + ']', ":2: toml: an integer of more than 1,000 digits (the limit)"),
    ('turn_tokens = [1, ' + "9" * 1500 + ']', ":2: turn_tokens.1: an integer of more than 1,000 digits (the limit)"),
    ("x = " + "[" * 3000 + "]" * 3000, ":1: toml: nested too deeply (the limit is 64)"),
    ("x = " + "[" * 80 + "]" * 80, "nested more than 64 deep (the limit)"),
])
def test_check_config_limits_are_exit_2(tmp_path: Path, body: str, message: str) -> None:
    """Finding: huge integers and ~3,000-deep nesting in ``check-config`` were tracebacks."""
    path = _write(tmp_path, "p.toml", f'name = "x"\n{body}\nfloor = 1\nfloor_unit = "turns"\n')
    code, out, err = run_cli("check-config", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"tailguard check-config: {path}") and message in err, err


@pytest.mark.parametrize(("answer", "message"), [
    (b'b\'{"decision": "allow", "failed": [], "holes": [[1, \' + b"9" * 5000 + b\']]}\\n\'',
     "response is not JSON (an integer of 5,000 digits (the limit is 1,000))"),
    (b'b"[" * 100000 + b"\\n"', "response is not JSON (nested 100,000 deep (the limit is 64))"),
    (b'b"\\xff\\xfe{}\\n"', "response is not UTF-8 (byte 1)"),
    (b'b\'{"decision": "\' + b"a" * (2 << 20) + b\'"}\\n\'', "an answer line over the limit of 1,048,576 bytes"),
    (b'b\'{"decision": "allow", "failed": [], "holes": [], "decision": "refuse"}\\n\'',
     'response is not JSON (duplicate key "decision")'),
])
def test_conform_reports_bad_answers_as_garbage(tmp_path: Path, answer: bytes, message: str) -> None:
    """Finding: huge or deep answers crashed ``conform``; non-UTF-8 ones read as a hang."""
    impl = tmp_path / "impl.py"
    impl.write_bytes(b"import sys\nfor line in sys.stdin.buffer:\n    sys.stdout.buffer.write("
                     + answer + b")\n    sys.stdout.buffer.flush()\n")
    code, out, err = run_cli("conform", "--random", "0", "--timeout", "30", "--only", "malformed/01", "--",
                             PY, str(impl))
    assert code == 2, out + err
    assert f"IMPLEMENTATION FAILURE (garbage) on malformed/01 (profile seed): {message}" in out
