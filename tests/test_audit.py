"""``tailguard audit``: the JSON contract, exit codes, post-mortem text, input errors."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest

from tailguard.audit.replay import replay
from tailguard.cli.main import main
from tailguard.runtime.eventlog import iter_events
from tailguard.runtime.ledger import Ledger

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "examples" / "traces"
HEADER = ('{"event": "session", "unit": "turns", "recovery_floor_span": 2, '
          '"floor_unit": "turns", "truncator_unit": "turns"}')


def audit(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(x + "\n" for x in lines))
    return str(path)


def test_seed_incident_strict_json() -> None:
    code, out, err = audit("--format", "json", str(TRACES / "seed-incident.jsonl"))
    assert (code, err) == (1, "")
    assert json.loads(out) == {
        "compactions": [{"line": 5, "decision": "refuse", "failed": ["no_hole"],
                         "holes": [[0, 8]]}],
        "violations": 1, "refusals": 0,
    }
    assert out == ('{"compactions": [{"line": 5, "decision": "refuse", "failed": ["no_hole"], '
                   '"holes": [[0, 8]]}], "violations": 1, "refusals": 0}\n')


def test_seed_incident_passes_the_seed_profile() -> None:
    code, out, _ = audit("--profile", "seed", "--format", "json",
                         str(TRACES / "seed-incident.jsonl"))
    assert code == 0
    assert json.loads(out)["compactions"][0]["decision"] == "allow"


def test_seed_incident_text_is_a_post_mortem() -> None:
    path = str(TRACES / "seed-incident.jsonl")
    code, out, _ = audit(path)
    assert code == 1
    assert out.splitlines() == [
        f"{path}:5: compaction refused (no_hole): summary covers [8, 36) of input [8, 48), "
        "tail starts at 36, history end 48 turns",
        f"{path}:5: refuse no_hole: offsets [0, 8) were truncated at line 3 and never "
        "summarized or spilled",
        f"{path}: 1 compaction judged, 1 refused (profile strict)",
    ]


@pytest.mark.parametrize("profile", ["seed", "strict"])
def test_healthy_trace_is_clean(profile: str) -> None:
    code, out, err = audit("--profile", profile, "--format", "json",
                           str(TRACES / "healthy.jsonl"))
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["violations"] == 0 and len(report["compactions"]) == 2
    code, out, _ = audit("--profile", profile, str(TRACES / "healthy.jsonl"))
    assert code == 0 and out.endswith("2 compactions judged, all allowed "
                                      f"(profile {profile})\n")


def test_no_compaction_is_clean(tmp_path: Path) -> None:
    code, out, _ = audit("--format", "json", write(tmp_path, HEADER, '{"event": "append"}'))
    assert (code, out) == (0, '{"compactions": [], "violations": 0, "refusals": 0}\n')


def test_every_clause_and_override_in_text(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEADER.replace('"truncator_unit": "turns"', '"truncator_unit": "tokens"'),
        '{"event": "append", "count": 20}',
        '{"event": "truncate", "range": [2, 4]}',
        '{"event": "truncate", "range": [19, 20]}',
        '{"event": "compact", "summary_input": [3, 18], "summary_covers": [0, 10], '
        '"tail_start": 19, "override": "on call said so"}',
    )
    code, out, _ = audit(path)
    assert code == 1
    text = out
    for clause in ("units_agree", "floor_in_input", "floor_in_tail", "tail_intact",
                   "seam_contiguous", "summary_honest", "no_hole"):
        assert f"refuse {clause}: " in text, clause
    assert "offsets [19, 20) of the retained tail [19, 20) were truncated at line 4" in text
    assert "claims offsets [0, 4) it never saw; [3, 4) were truncated at line 3" in text
    # each hole names the exact lines that evicted it
    assert "offsets [2, 4) (line 3), [19, 20) (line 4) were truncated and never" in text
    assert "offsets [0, 2), [10, 19) are in no summary, spill or tail" in text
    assert 'committed anyway, override: "on call said so"' in text
    code, out, _ = audit("--format", "json", path)
    assert json.loads(out)["compactions"][0]["failed"] == [
        "units_agree", "floor_in_input", "floor_in_tail", "tail_intact", "seam_contiguous",
        "summary_honest", "no_hole"]


def test_inconsistent_integers_refuse_well_formed_not_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER, '{"event": "append", "count": 5}',
                 '{"event": "truncate", "range": [4, 2]}',
                 '{"event": "compact", "summary_input": [0, 5], "summary_covers": [0, 3], '
                 '"tail_start": 3}')
    code, out, err = audit("--format", "json", path)
    assert (code, err) == (1, "")
    assert json.loads(out)["compactions"] == [
        {"line": 4, "decision": "refuse", "failed": ["well_formed"], "holes": []}]
    code, out, _ = audit(path)
    assert "a recorded range (line 3) has lo > hi" in out


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ((), ":1: event: missing session header (empty log)\n"),
        (('{"event": "append"}',), ':1: event: expected the session header first, got "append"\n'),
        ((HEADER, '{"event": "rewind"}'),
         ':2: event: unknown event kind "rewind"; known: append, truncate, compact, spill, evict_summary, '
         'refusal, adopt, resume\n'),
        ((HEADER, '{"event": "truncate", "range": [0, 1.5]}'),
         ":2: range[1]: expected an integer, got 1.5\n"),
    ],
)
def test_input_errors_exit_2_without_a_partial_report(
    tmp_path: Path, lines: tuple[str, ...], message: str
) -> None:
    # a judged compaction before the bad line must not leak a half report to stdout
    body = list(lines)
    if len(body) == 2:
        body.insert(1, '{"event": "compact", "summary_input": [0, 0], "summary_covers": [0, 0], '
                       '"tail_start": 0}')
        message = message.replace(":2:", ":3:")
    path = write(tmp_path, *body)
    for fmt in ("json", "text"):
        code, out, err = audit("--format", fmt, path)
        assert (code, out) == (2, "")
        assert err == path + message
        assert "Traceback" not in err


def test_unreadable_file_and_bad_profile(tmp_path: Path) -> None:
    code, out, err = audit(str(tmp_path / "missing.jsonl"))
    assert (code, out) == (2, "")
    assert err.startswith("tailguard audit: cannot read ") and "missing.jsonl" in err
    code, _, err = audit("--profile", "lenient", str(TRACES / "healthy.jsonl"))
    assert code == 2 and "--profile" in err


def test_no_progress_output_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    led_log = io.StringIO()
    led = Ledger(2, log=led_log)
    for _ in range(70_000):
        led.append()
    path = tmp_path / "long.jsonl"
    path.write_text(led_log.getvalue())
    code, _, err = audit(str(path))
    assert (code, err) == (0, "")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tailguard.cli.audit as cli_audit

    ticks = iter(range(0, 1000, 2))
    monkeypatch.setattr(cli_audit.time, "monotonic", lambda: float(next(ticks)))
    monkeypatch.setattr(cli_audit, "_PROGRESS_EVERY", 10)
    path = write(tmp_path, HEADER, *['{"event": "append"}'] * 50)
    out, err = io.StringIO(), _Tty()
    assert main(["audit", path], stdout=out, stderr=err) == 0
    assert "tailguard audit: 10 lines" in err.getvalue()
    assert out.getvalue().endswith("all allowed (profile strict)\n")


def test_memory_is_bounded_by_the_interval_sets() -> None:
    """Replaying ~150,000 events whose ranges merge holds O(1) state (strict and text)."""

    def lines() -> object:
        yield HEADER.encode()
        for i in range(50_000):
            yield b'{"event": "append", "count": 2}'
            yield b'{"event": "spill", "range": [%d, %d]}' % (2 * i, 2 * i + 2)
            yield b'{"event": "truncate", "range": [%d, %d]}' % (2 * i, 2 * i + 2)
            if i % 1000 == 999:
                n = 2 * i + 2
                yield (b'{"event": "compact", "summary_input": [0, %d], '
                       b'"summary_covers": [0, %d], "tail_start": %d}' % (n, n - 2, n - 2))

    tracemalloc.start()
    verdicts = 0
    peak_mid = 0
    for _ in replay(iter_events(lines()), explain=True):  # type: ignore[arg-type]
        verdicts += 1
        if verdicts == 10:
            peak_mid = tracemalloc.get_traced_memory()[1]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert verdicts == 51
    assert peak < peak_mid + 100_000, (peak_mid, peak)


def test_a_hole_names_the_exact_truncation_lines_not_the_span(tmp_path: Path) -> None:
    # adjacent truncations at lines 3, 5 and 7 merge into one hole; lines 4 and 6 spill and
    # truncate other offsets, which are no part of the hole and go unnamed
    lines = [HEADER, '{"event": "append", "count": 30}',
             '{"event": "truncate", "range": [0, 2]}',
             '{"event": "spill", "range": [10, 12]}',
             '{"event": "truncate", "range": [2, 3]}',
             '{"event": "truncate", "range": [10, 12]}',
             '{"event": "truncate", "range": [3, 5]}']
    lines.append('{"event": "compact", "summary_input": [5, 30], "summary_covers": [5, 28], '
                 '"tail_start": 28}')
    code, out, _ = audit(write(tmp_path, *lines))
    assert code == 1
    assert "offsets [0, 5) were truncated at lines 3, 5, 7 and never summarized" in out


# -- spec 1.1: summary lineage in the log -------------------------------------------------

COMPACT_0 = ('{"event": "compact", "summary_input": [0, 4], "summary_covers": [0, 4], "tail_start": 4, '
             '"summary": "s1"}')


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"event": "compact", "summary_input": [4, 8], "summary_covers": [4, 8], "tail_start": 8, '
         '"saw": ["s1", "nope"]}',
         ":4: saw[1]: no summary 'nope' is in the context here\n"),
        ('{"event": "compact", "summary_input": [4, 8], "summary_covers": [4, 8], "tail_start": 8, '
         '"keeps": ["zz"]}',
         ":4: keeps[0]: no summary 'zz' is in the context here\n"),
        ('{"event": "compact", "summary_input": [4, 8], "summary_covers": [4, 8], "tail_start": 8, '
         '"summary": "s1"}',
         ":4: summary: summary id 's1' was already used at line 3; ids are unique in a session\n"),
        ('{"event": "evict_summary", "summary": "0"}',
         ":4: summary: no summary '0' is in the context here\n"),
        ('{"event": "compact", "summary_input": [4, 8], "summary_covers": [4, 8], "tail_start": 8, '
         '"saw": "s1"}',
         ':4: saw: expected a list of summary ids (strings) or null, got "s1"\n'),
        ('{"event": "evict_summary", "summary": 1}',
         ":4: summary: expected a string, got 1\n"),
    ],
)
def test_lineage_input_errors_name_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, HEADER, '{"event": "append", "count": 8}', COMPACT_0, line)
    for fmt in ("json", "text"):
        code, out, err = audit("--format", fmt, "--profile", "partitioned", path)
        assert (code, out, err) == (2, "", path + message)


def test_an_ordinal_id_that_repeats_an_explicit_one_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER, '{"event": "append", "count": 8}',
                 COMPACT_0.replace('"s1"', '"1"'),
                 '{"event": "compact", "summary_input": [4, 8], "summary_covers": [4, 8], "tail_start": 8}')
    code, out, err = audit(path)
    assert (code, out) == (2, "")
    assert err.endswith(":4: summary: summary id '1' (the compaction's ordinal, its default id) was already "
                        "used at line 3; ids are unique in a session\n")


def test_the_lost_summary_is_named_with_its_lines() -> None:
    trace = str(TRACES / "langchain-lost-summary.jsonl")
    code, out, err = audit("--profile", "partitioned", trace)
    assert (code, err) == (1, "")
    assert ("refuse no_hole: offsets [0, 9) were covered only by summary 's1' (line 3), which this "
            "compaction's summarizer did not see and which it does not keep") in out
    code, out, _ = audit("--profile", "partitioned", "--format", "json", trace)
    assert json.loads(out)["compactions"][1] == {"line": 5, "decision": "refuse", "failed": ["no_hole"],
                                                 "holes": [[0, 9]]}


def test_a_summary_lost_earlier_is_named_at_the_next_compaction(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER, '{"event": "append", "count": 8}', COMPACT_0,
                 '{"event": "compact", "summary_input": [4, 6], "summary_covers": [4, 6], "tail_start": 6, '
                 '"saw": [], "override": "operator"}',
                 '{"event": "append", "count": 4}',
                 '{"event": "evict_summary", "summary": "1"}',
                 '{"event": "compact", "summary_input": [6, 10], "summary_covers": [6, 10], "tail_start": 10}')
    code, out, _ = audit("--profile", "partitioned", path)
    assert code == 1
    assert (":4: refuse no_hole: offsets [0, 4) were covered only by summary 's1' (line 3), which this "
            "compaction's summarizer did not see and which it does not keep\n") in out
    # explained once: at line 7 [0, 4) is still open, and only the new hole is explained
    assert (":7: refuse no_hole: offsets [4, 6) were covered only by summary '1' (line 4), which was "
            "evicted from the context at line 6; offsets [0, 4) still open since line 4 "
            "(explained where first reported)\n") in out
    # without the lineage keys the same log means what it meant in 1.0: nothing is lost
    plain = write(tmp_path, HEADER, '{"event": "append", "count": 8}', COMPACT_0,
                  '{"event": "compact", "summary_input": [4, 6], "summary_covers": [4, 6], "tail_start": 6}',
                  '{"event": "append", "count": 4}',
                  '{"event": "compact", "summary_input": [6, 10], "summary_covers": [6, 10], "tail_start": 10}')
    assert audit("--profile", "partitioned", plain)[0] == 0


def test_refusal_lines_are_counted_never_coverage(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER, '{"event": "append", "count": 8}',
                 '{"event": "refusal", "summary_input": [0, 6], "summary_covers": [0, 6], "tail_start": 6, '
                 '"failed": ["no_hole"], "holes": [[0, 2]]}',
                 '{"event": "truncate", "range": [0, 6]}',
                 '{"event": "compact", "summary_input": [6, 8], "summary_covers": [6, 6], "tail_start": 6}')
    code, out, _ = audit("--format", "json", "--profile", "partitioned", path)
    got = json.loads(out)
    assert (code, got["refusals"], got["compactions"][0]["holes"]) == (1, 1, [[0, 6]])
    code, out, _ = audit("--profile", "partitioned", path)
    assert "1 refused attempt logged by the guard and not committed" in out


def test_import_options_need_from(tmp_path: Path) -> None:
    """``--knobs`` and ``--thread`` belong to ``audit --from`` (docs/import.md): alone they are
    a usage error naming the option, and the log is not audited."""
    for option, value in (("--knobs", "k.toml"), ("--thread", "t1")):
        out, err = io.StringIO(), io.StringIO()
        code = main(["audit", option, value, "examples/traces/healthy.jsonl"], stdout=out, stderr=err)
        assert code == 2 and out.getvalue() == ""
        assert err.getvalue() == (f"tailguard audit: {option}: only with --from FORMAT (importing what a "
                                  "framework persisted)\n")


def test_the_audit_collects_the_holes_of_refused_compactions_for_audit_from() -> None:
    """``audit --from`` names the messages in the holes ``_audit`` collects: every refused
    compaction's holes, in log order, and none of an allowed one."""
    from tailguard.cli.audit import _audit

    for name, expected in (("seed-incident.jsonl", [(0, 8)]), ("healthy.jsonl", [])):
        holes: list[tuple[int, int]] = []
        lines = Path("examples/traces", name).read_bytes().splitlines(keepends=True)
        _audit(lines, name, "strict", "json", io.StringIO(), None, False, holes)
        assert holes == expected, name
