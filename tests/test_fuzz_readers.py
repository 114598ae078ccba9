"""Fuzz the four readers of outside input over bytes: case files, event logs, policies, spill records.

Each reader must either read its input or raise its one documented input error, and that
error must name where (file, line, field). Anything else (a traceback, a hang, another
exception type) is a bug. Inputs are raw bytes, valid seeds with byte-level mutations
(quotes, brackets, long digit runs, ``NaN``, repeated keys, invalid UTF-8, line ends), and
JSON documents built from the readers' own field names.

CI runs a short budget (``TAILGUARD_FUZZ_EXAMPLES``, default 60 per reader: seconds). The long
run is ``tools/fuzz.sh`` (20,000 examples per reader, or ``tools/fuzz.sh N``).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from hypothesis import HealthCheck, example, given, settings, strategies as st

from tailguard._generated.checker import FIELDS, check, explain
from tailguard.pipeline.policy import PolicyError, load_policy, parse_policy
from tailguard.runtime.case import InputError, case_from_bytes
from tailguard.runtime.eventlog import EventLogError, iter_events
from tailguard.spill._files import decode_record

EXAMPLES = int(os.environ.get("TAILGUARD_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

CASE_SEED = json.dumps({
    "history_end": 60, "tail_start": 48, "summary_input": [8, 60], "summary_covers": [8, 48],
    "recovery_floor_span": 12, "floor_unit": "turns", "truncator_unit": "turns",
    "prior_truncations": [[0, 8]], "prior_coverage": [], "spills": [[0, 2]],
}).encode()
LOG_SEED = b"\n".join([
    b'{"event": "session", "unit": "turns", "recovery_floor_span": 12, "floor_unit": "turns", '
    b'"truncator_unit": "turns"}',
    b'{"event": "append", "count": 40}', b'{"event": "truncate", "range": [0, 8]}',
    b'{"event": "spill", "range": [0, 4], "handle": "h"}',
    b'{"event": "compact", "summary_input": [8, 40], "summary_covers": [8, 36], "tail_start": 36, '
    b'"summary": "s1", "saw": [], "keeps": []}',
    b'{"event": "evict_summary", "summary": "s1"}',
    b'{"event": "refusal", "summary_input": [8, 40], "summary_covers": [8, 36], "tail_start": 36, '
    b'"failed": ["no_hole"], "holes": [[0, 8]]}',
]) + b"\n"
POLICY_SEED = b"""name = "fuzz"
turn_tokens = [1, 8000]
floor = 12
floor_unit = "turns"
base_tokens = 100

[[stage]]
kind = "truncate"
unit = "tokens"
limit = 100000

[[stage]]
kind = "compact"
trigger_unit = "tokens"
trigger = 90000
keep_unit = "turns"
keep = 12
summary_tokens = 500
"""
RECORD_SEED = (b'{"format":1,"handle":"sha256:' + b"ab" * 32 + b'","range":[0,8],"session":"s","size":5,'
               b'"time":"2026-01-01T00:00:00.000000Z","unit":"turns"}\n')

NASTY = [b'"', b"\\", b"[", b"]", b"{", b"}", b",", b":", b"\n", b"\r", b"\xff", b"\xe2\x82", b"\x00",
         b"NaN", b"-Infinity", b"1e999", b"-0", b"9" * 1200, b"[" * 70, b"{\"a\":" * 70, b'"k": 1, "k": 2',
         b"true", b"null", b"1.5", b"\"\\ud800\"", b"=", b"[[", b"]]", b"#", b"'''", b"0x" + b"f" * 30]


def mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """``seed`` with a few byte-level edits: replace, insert a nasty token, delete, truncate."""
    edit = st.tuples(st.sampled_from(("insert", "replace", "delete", "truncate")),
                     st.integers(0, len(seed)), st.integers(0, 40), st.sampled_from(NASTY), st.binary(max_size=4))

    def apply(edits: list[tuple[str, int, int, bytes, bytes]]) -> bytes:
        data = seed
        for kind, at, span, token, noise in edits:
            at = min(at, len(data))
            if kind == "insert":
                data = data[:at] + token + data[at:]
            elif kind == "replace":
                data = data[:at] + (noise or token) + data[at + len(noise or token):]
            elif kind == "delete":
                data = data[:at] + data[at + span:]
            else:
                data = data[:at]
        return data

    return st.lists(edit, min_size=1, max_size=4).map(apply)


def json_values(keys: list[str]) -> st.SearchStrategy[Any]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                        st.sampled_from(["turns", "messages", "tokens", "", "x"]), st.integers(-3, 20))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(keys), inner, max_size=len(keys))),
        max_leaves=30)


def inputs(seed: bytes, keys: list[str]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=400),
        mutated(seed),
        json_values(keys).map(lambda v: json.dumps(v).encode()),
    )


CASE_KEYS = [*FIELDS, "extra"]
LOG_KEYS = ["event", "unit", "recovery_floor_span", "floor_unit", "truncator_unit", "count", "range",
            "summary_input", "summary_covers", "tail_start", "summary", "saw", "keeps", "handle", "override",
            "failed", "holes"]


@FUZZ
@given(inputs(CASE_SEED, CASE_KEYS))
def test_case_reader(raw: bytes) -> None:
    try:
        fields = case_from_bytes(raw, "f.json")
    except InputError as exc:
        assert exc.where.startswith("f.json") and exc.reason
        return
    for profile in ("seed", "strict", "partitioned"):
        decision = check(profile, **fields)  # a read case is always decided
        assert decision.decision in ("allow", "refuse")
        assert all(isinstance(s, str) for s in explain(profile, decision, **fields))


def _log_lines(raw: bytes) -> list[bytes]:
    return raw.splitlines(keepends=True)


@FUZZ
@given(st.one_of(inputs(LOG_SEED, LOG_KEYS),
                 st.lists(json_values(LOG_KEYS).map(lambda v: json.dumps(v).encode() + b"\n"), max_size=6)
                 .map(lambda ls: LOG_SEED.split(b"\n", 1)[0] + b"\n" + b"".join(ls))))
def test_event_log_reader(raw: bytes) -> None:
    torn: list[tuple[int, str]] = []
    for on_torn in (None, lambda line, why: torn.append((line, why))):
        try:
            for _ in iter_events(_log_lines(raw), "t.jsonl", on_torn=on_torn):
                pass
        except EventLogError as exc:
            assert exc.source == "t.jsonl" and exc.line >= 1 and exc.field and exc.reason
            assert str(exc).startswith(f"t.jsonl:{exc.line}: ")
    for line, why in torn:  # a tear is only ever the last line, and it has no line end
        assert line == len(_log_lines(raw)) and why
        assert not _log_lines(raw)[-1].endswith((b"\n", b"\r"))


@FUZZ
@given(inputs(POLICY_SEED, ["name", "turn_tokens", "floor", "floor_unit", "stage", "kind", "limit"]))
@example(b'[""]')  # found by this fuzzer: an empty table name was reported as key ""
def test_policy_reader(raw: bytes) -> None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:  # load_policy rejects it before parsing, naming the file
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.toml")
            with open(path, "wb") as f:
                f.write(raw)
            try:
                load_policy(path)
            except PolicyError as exc:
                assert exc.file == path and exc.line == 1 and exc.reason.startswith("not UTF-8")
                return
        raise AssertionError("a policy that is not UTF-8 was read") from None
    try:
        parse_policy(text, "p.toml")
    except PolicyError as exc:
        assert exc.file == "p.toml" and exc.line >= 0 and exc.key and exc.reason
        assert str(exc).startswith(f"p.toml:{exc.line}: {exc.key}: ")


@FUZZ
@given(inputs(RECORD_SEED, ["format", "handle", "size", "session", "range", "unit", "time"]))
def test_spill_record_reader(raw: bytes) -> None:
    try:
        record = decode_record(raw)
    except ValueError as exc:  # the store reports it as a rejected record file, named by its path
        assert str(exc)
        return
    assert record.handle.startswith("sha256:")


# -- the writers, fed hostile strings (issue 30): text, HTML and SARIF never pass input through ----

UNSAFE = frozenset([*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), "\u061c", "\u200e", "\u200f",
                    "\u2028", "\u2029", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))])
HOSTILE_CHARS = st.one_of(st.sampled_from([*sorted(UNSAFE), "<", ">", "&", '"', "'", "\\", "\ud800", "\udfff",
                                                            "\x1b[2J", "\x1b]8;;http://x\x07", "</title>",
                                                            "<script>", "x" * 300]),
                          st.characters())
HOSTILE = st.lists(HOSTILE_CHARS, min_size=1, max_size=12).map("".join)


def _shown_safely(text: str, keep: str) -> None:
    bad = [c for c in text if (c in UNSAFE and c not in keep) or 0xD800 <= ord(c) <= 0xDFFF]
    assert not bad, bad[:5]


@FUZZ
@given(HOSTILE, HOSTILE, HOSTILE)
def test_text_and_html_audit_of_hostile_strings(unit: str, summary: str, override: str) -> None:
    from tailguard.audit.html import session_report
    from tests.cli_helpers import run_cli

    header = {"event": "session", "unit": unit, "recovery_floor_span": 12, "floor_unit": "turns",
              "truncator_unit": "turns"}
    lines = [json.dumps(header), '{"event": "append", "count": 40}', '{"event": "truncate", "range": [0, 8]}',
             '{"event": "append", "count": 8}',
             json.dumps({"event": "compact", "summary_input": [8, 48], "summary_covers": [8, 36], "tail_start": 36,
                         "summary": summary, "override": override}),
             json.dumps({"event": "adopt", "count": 0, "reason": override, "summary": summary})]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.jsonl")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write("\n".join(lines[:5]) + "\n")
        code, out, err = run_cli("audit", path)
        assert code in (1, 2), (out, err)
        _shown_safely(out, "\n")
        _shown_safely(err, "\n")
        try:
            with open(path, "rb") as f:
                page = session_report(f, "t.jsonl")
        except EventLogError:
            return
        _shown_safely(page, "\n")
        page.encode("utf-8")  # no lone surrogate: the page can always be written
        assert "<script" not in page and "<scr" not in page.replace("<screen", "")


@FUZZ
@given(HOSTILE)
def test_check_config_text_json_and_sarif_of_a_hostile_name(name: str) -> None:
    from tailguard.pipeline.report import render_json, render_sarif, render_text
    from tailguard.pipeline.solver import Budget, decide

    text = POLICY_SEED.decode().replace('name = "fuzz"', f"name = {json.dumps(name)}")
    try:
        policy = parse_policy(text, "p " + name[:8].replace("/", "_").replace("\x00", "_") + ".toml")
    except PolicyError:
        return
    from tailguard.pipeline.report import Report

    entries: list[Any] = [Report(policy, decide(policy, Budget.of(5, depth=20)))]
    _shown_safely(render_text(entries), "\n")
    from tailguard.audit.html import policy_report

    page = policy_report(entries, "partitioned")
    _shown_safely(page, "\n")
    page.encode("utf-8")  # no lone surrogate: the page can always be written
    assert "<script" not in page
    assert json.loads(render_json(entries))["policies"][0]["name"] == name  # JSON: whole, never elided
    sarif = json.loads(render_sarif(entries))
    for run in sarif["runs"]:
        for result in run["results"]:
            for loc in result["locations"]:
                uri = loc["physicalLocation"]["artifactLocation"]["uri"]
                assert uri.isascii() and " " not in uri
