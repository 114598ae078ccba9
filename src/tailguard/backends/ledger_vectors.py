"""Render the ledger conformance vectors (``spec/vectors/ledger.json``): event logs, judged.

The stateless vectors (:mod:`tailguard.backends.vectors`) test a checker on one case. These test
what an orchestrator or an auditor actually runs: a *ledger* or *audit* that reads an event log
(SPEC.md sections 9 to 11) and judges every compaction in it against the state the log recorded
before it, lineage (``summary``, ``saw``, ``keeps``, ``evict_summary``) and adoption (``adopt``,
unverified offsets) included. Each vector is one log and, for each of the three profiles, the
judgment of every compaction in log order (``line``, ``decision``, ``failed``, ``holes``) and the
unverified offsets; or, for a log that is unusable (an id that names no summary in the context, a
repeated id, an ``adopt`` after another event, a negative count), the line and field of the error.

The expected answers come from the reference: the ledger core the runtime decides with, fed by the
one event dispatch that ``Ledger.from_log`` and ``tailguard audit`` share
(:func:`tailguard.runtime.dispatch.apply_events`). The groups:

- ``example``: the example traces (``examples/traces/*.jsonl``), verbatim;
- ``scenario``: hand-written logs, one per lineage and adoption rule (what a ledger that follows
  spec 1.0's rule, ignores ``keeps`` or ignores ``evict_summary`` gets wrong, among others);
- ``invalid``: unusable logs, one per input error of the lineage and adoption rules;
- ``random``: a corpus of small logs drawn with a fixed seed (:func:`random_log`).

Deterministic (a fixed seed, no solver), so ``tailguard gen --check`` regenerates and compares it
on every run. Standard library and :mod:`tailguard.runtime` only.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tailguard.base.errors import EventLogError
from tailguard.base.vocab import NO_HOLE, PROFILES
from tailguard.runtime.dispatch import apply_events
from tailguard.runtime.eventlog import Compact, iter_events
from tailguard.runtime.ledger_core import LedgerCore
from tailguard.speclang.load import Spec

GENERATOR = "tailguard.backends.ledger_vectors"
FORMAT = "tailguard-ledger-vectors/1"
PATH = "spec/vectors/ledger.json"
RANDOM_SEED = 20261204
RANDOM_LOGS = 360
KINDS: dict[str, str] = {
    "example": "The example traces of examples/traces/, verbatim (extra keys included: they are ignored).",
    "scenario": ("Hand-written logs, one per rule of lineage (SPEC.md 10) and adoption (SPEC.md 11.4): a "
                 "summary its successor did not see, one it keeps, one a budget stage evicts, ids given and "
                 "ordinal, adopted history seen, kept and lost, refusal lines and overrides (never state)."),
    "invalid": ("Unusable logs: the answer is an error naming the line and the field (an id that names no "
                "summary in the context, a repeated id, an adopt after another event, a negative count)."),
    "random": (f"{RANDOM_LOGS} small logs drawn with a fixed seed ({RANDOM_SEED}): appends, truncations, "
               "spills, compactions with and without lineage keys, evictions, adoptions, refusal lines; "
               "mostly consistent, some ranges inconsistent (strict and partitioned refuse with well_formed)."),
}


# -- judging a log: the reference ----------------------------------------------------------------

def judge(log: list[dict[str, Any]], profile: str) -> dict[str, Any]:
    """The reference answer for one log under ``profile``: ``{"verdicts": [...], "unverified":
    [...]}``, or ``{"error": {"line": L, "field": F}}`` for an unusable log."""
    lines = [json.dumps(ev, ensure_ascii=False) + "\n" for ev in log]
    events = iter_events(lines, "<vector>")
    verdicts: list[dict[str, Any]] = []
    try:
        header = next(events)
        core = LedgerCore(header.recovery_floor_span, header.floor_unit,  # type: ignore[union-attr]
                          header.truncator_unit, seed=profile == "seed")  # type: ignore[union-attr]
        for ev in apply_events(core, events, "<vector>"):
            if isinstance(ev, Compact):
                d = core.decide(profile, ev.tail_start, ev.summary_input, ev.summary_covers, ev.saw, ev.keeps)
                verdicts.append({"line": ev.line, **d.to_json()})
    except EventLogError as exc:
        return {"error": {"line": exc.line, "field": exc.field}}
    return {"verdicts": verdicts, "unverified": [[lo, hi] for lo, hi in core.unverified]}


def expected_of(log: list[dict[str, Any]]) -> dict[str, Any]:
    return {p: judge(log, p) for p in PROFILES}


# -- building logs -------------------------------------------------------------------------------

def session(F: int, floor_unit: str = "turns", truncator_unit: str = "turns", unit: str = "turns") -> dict[str, Any]:
    return {"event": "session", "unit": unit, "recovery_floor_span": F, "floor_unit": floor_unit,
            "truncator_unit": truncator_unit}


def append(k: int) -> dict[str, Any]:
    return {"event": "append", "count": k}


def truncate(lo: int, hi: int) -> dict[str, Any]:
    return {"event": "truncate", "range": [lo, hi]}


def spill(lo: int, hi: int) -> dict[str, Any]:
    return {"event": "spill", "range": [lo, hi]}


def evict(sid: str) -> dict[str, Any]:
    return {"event": "evict_summary", "summary": sid}


def adopt(hi: int, summary: str | None = None, reason: str = "history the guard did not record") -> dict[str, Any]:
    out: dict[str, Any] = {"event": "adopt", "range": [0, hi], "reason": reason}
    if summary is not None:
        out["summary"] = summary
    return out


def compact(i: tuple[int, int], c: tuple[int, int], t: int, *, summary: str | None = None,
            saw: list[str] | None = None, keeps: list[str] | None = None,
            override: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"event": "compact", "summary_input": list(i), "summary_covers": list(c), "tail_start": t}
    if summary is not None:
        out["summary"] = summary
    if saw is not None:
        out["saw"] = saw
    if keeps is not None:
        out["keeps"] = keeps
    if override is not None:
        out["override"] = override
    return out


def refusal(i: tuple[int, int], c: tuple[int, int], t: int) -> dict[str, Any]:
    return {"event": "refusal", "summary_input": list(i), "summary_covers": list(c), "tail_start": t,
            "failed": [NO_HOLE], "holes": [[0, 1]]}


def scenarios() -> list[tuple[str, str, list[dict[str, Any]]]]:
    """``(name, what it exercises, log)``, hand-written (every log uses F = 2 unless said)."""
    S = session
    return [
        ("default-chain", "three compactions with the defaults (each sees the last summary): 1.0's prior coverage",
         [S(2), append(10), compact((0, 8), (0, 8), 8), append(6), compact((8, 16), (8, 14), 14), append(6),
          compact((14, 22), (14, 20), 20)]),
        ("saw-empty-loses-summary", "saw [] : the earlier summary leaves unseen, its coverage is a hole "
         "(spec 1.0's rule counts it)",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(8),
          compact((8, 16), (8, 16), 16, summary="s2", saw=[])]),
        ("saw-empty-then-default", "after a summary left unseen, a third compaction that sees the new one "
         "still has the hole (a wrong new-summary coverage changes its verdict)",
         [S(2), append(10), compact((0, 8), (0, 8), 8), append(8), compact((8, 16), (8, 16), 16, saw=[]),
          append(6), compact((16, 22), (16, 20), 20)]),
        ("saw-named", "saw names the summary: nothing is lost",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(8),
          compact((8, 16), (8, 16), 16, summary="s2", saw=["s1"]), append(6),
          compact((16, 22), (16, 20), 20, summary="s3", saw=["s2"])]),
        ("keeps-beside", "keeps: the earlier summary stays in the context beside the new one and counts "
         "although unseen; a later compaction that sees both has everything",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(8),
          compact((8, 16), (8, 16), 16, summary="s2", saw=[], keeps=["s1"]), append(6),
          compact((16, 22), (16, 20), 20, summary="s3")]),
        ("keeps-then-partial-saw", "two summaries in the context (one kept); the next sees only the newer",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(8),
          compact((8, 16), (8, 16), 16, summary="s2", saw=[], keeps=["s1"]), append(6),
          compact((16, 22), (16, 20), 20, summary="s3", saw=["s2"]), append(4),
          compact((20, 26), (20, 24), 24, summary="s4")]),
        ("keeps-seen-and-kept", "a summary both seen and kept: in the context twice over, counted once",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(8),
          compact((8, 16), (8, 16), 16, summary="s2", saw=["s1"], keeps=["s1"]), append(6),
          compact((16, 22), (16, 20), 20, summary="s3", saw=["s2"]),
          append(4), compact((20, 26), (20, 24), 24, summary="s4", saw=[])]),
        ("evict-then-default", "a budget stage evicts the only summary: its coverage is gone for the next",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(8), evict("s1"),
          compact((8, 16), (8, 16), 16, summary="s2")]),
        ("evict-kept", "evict one of two summaries in the context; the other still counts",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(8),
          compact((8, 16), (8, 16), 16, summary="s2", saw=[], keeps=["s1"]), evict("s2"), append(6),
          compact((16, 22), (16, 20), 20, summary="s3"), append(4), compact((20, 26), (20, 24), 24)]),
        ("evict-spilled", "an evicted summary's offsets that a spill holds are no hole",
         [S(2), append(10), spill(0, 5), compact((0, 8), (0, 8), 8), append(8), evict("0"),
          compact((8, 16), (8, 16), 16)]),
        ("evict-truncated", "an evicted summary whose offsets were truncated after it: lost",
         [S(2), append(10), compact((0, 8), (0, 8), 8), truncate(0, 4), append(8), evict("0"),
          compact((8, 16), (8, 16), 16)]),
        ("truncated-before-summary", "the honest part excludes what was truncated before the compaction",
         [S(2), append(10), truncate(2, 4), compact((0, 8), (0, 8), 8), append(8), compact((8, 16), (8, 14), 14),
          append(4), compact((14, 20), (14, 18), 18, saw=["1"])]),
        ("truncated-after-summary", "a truncation after a summary: covered, no hole, the tail intact",
         [S(2), append(10), compact((0, 8), (0, 8), 8), truncate(0, 8), append(8), compact((8, 16), (8, 14), 14)]),
        ("ordinal-ids", "ordinal ids count compactions only (an adoption is not one)",
         [S(2), adopt(4), append(6), compact((0, 8), (0, 8), 8, saw=["adopted"]), append(6),
          compact((8, 14), (8, 12), 12, saw=["0"]), append(4), compact((12, 18), (12, 16), 16, saw=["1"], keeps=[])]),
        ("given-and-ordinal-ids", "given ids do not shift the ordinals: the third compaction's default id is '2'",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="a"), append(6),
          compact((8, 14), (8, 12), 12, summary="b"), append(6), compact((12, 20), (12, 18), 18),
          append(4), compact((18, 24), (18, 22), 22, saw=["2"])]),
        ("adopt-seen", "adopted history, seen by the first compaction: unverified, covered",
         [S(2), adopt(6, "prior"), append(6), compact((6, 10), (6, 10), 10)]),
        ("adopt-unseen", "adopted history its first compaction did not see: a hole",
         [S(2), adopt(6, "prior"), append(6), compact((6, 10), (6, 10), 10, saw=[])]),
        ("adopt-kept", "adopted history kept beside the first summary, then seen",
         [S(2), adopt(6), append(6), compact((6, 10), (6, 10), 10, saw=[], keeps=["adopted"]), append(4),
          compact((10, 14), (10, 14), 14)]),
        ("adopt-evicted", "the adopted summary evicted: its offsets are holes",
         [S(2), adopt(6), append(6), evict("adopted"), compact((6, 10), (6, 10), 10)]),
        ("adopt-empty", "an adoption of nothing ([0, 0]): nothing unverified",
         [S(2), adopt(0), append(8), compact((0, 6), (0, 6), 6)]),
        ("adopt-only", "an adoption and no compaction",
         [S(2), adopt(5, "legacy"), append(3)]),
        ("refusal-and-override", "refusal lines change no state; an overridden compaction is recorded",
         [S(2), append(10), refusal((0, 8), (0, 8), 8), truncate(0, 3),
          compact((3, 8), (3, 8), 8, override="operator accepted the loss"), append(6),
          compact((8, 14), (8, 12), 12)]),
        ("spill-restores", "a truncation the spill holds is no hole, with or without a summary seen",
         [S(2), append(10), spill(0, 4), truncate(0, 4), compact((4, 8), (4, 8), 8, saw=[]), append(6),
          compact((8, 14), (8, 12), 12, saw=[])]),
        ("units-disagree", "the floor and the truncator count different units",
         [S(2, "turns", "tokens"), append(10), compact((0, 8), (0, 8), 8)]),
        ("seed-truncation", "the seed's truncation_clear reads the raw truncations",
         [S(3), append(20), truncate(0, 4), truncate(10, 12), compact((0, 16), (0, 12), 14), append(4),
          compact((12, 24), (12, 20), 20)]),
        ("inconsistent-range", "a truncation past the history end: strict and partitioned refuse "
         "with well_formed, the seed decides",
         [S(2), append(6), truncate(4, 9), compact((0, 4), (0, 4), 4)]),
        ("no-compaction", "a log with no compaction", [S(2), append(3), truncate(0, 1)]),
    ]


def invalid() -> list[tuple[str, str, list[dict[str, Any]]]]:
    S = session
    base = [S(2), append(10), compact((0, 8), (0, 8), 8, summary="s1"), append(6)]
    return [
        ("saw-evicted", "saw names a summary a budget stage evicted", [*base, evict("s1"),
                                                                       compact((8, 14), (8, 12), 12, saw=["s1"])]),
        ("keeps-evicted", "keeps names an evicted summary", [*base, evict("s1"),
                                                              compact((8, 14), (8, 12), 12, keeps=["s1"])]),
        ("evict-twice", "evict_summary of a summary already evicted", [*base, evict("s1"), evict("s1")]),
        ("saw-departed", "saw names a summary that left the context unseen",
         [*base, compact((8, 14), (8, 12), 12, summary="s2", saw=[]), append(4),
          compact((12, 18), (12, 16), 16, saw=["s1"])]),
        ("keeps-departed", "keeps names a summary that left when its successor did not keep it",
         [*base, compact((8, 14), (8, 12), 12, summary="s2"), append(4),
          compact((12, 18), (12, 16), 16, keeps=["s1"])]),
        ("evict-departed", "evict_summary of a summary that left the context",
         [*base, compact((8, 14), (8, 12), 12, summary="s2"), evict("s1")]),
        ("saw-unknown", "saw names a summary never created", [*base, compact((8, 14), (8, 12), 12, saw=["zz"])]),
        ("id-repeated", "a summary id used twice", [*base, compact((8, 14), (8, 12), 12, summary="s1")]),
        ("ordinal-id-taken", "a given id equal to a later ordinal",
         [S(2), append(10), compact((0, 8), (0, 8), 8, summary="1"), append(6), compact((8, 14), (8, 12), 12)]),
        ("adopt-late", "an adopt line after another event", [S(2), append(4), adopt(4)]),
        ("adopt-after-nothing", "an adopt line after an event that changed nothing (append 0)",
         [S(2), append(0), adopt(4)]),
        ("adopt-after-refusal", "an adopt line after a refusal line", [S(2), refusal((0, 0), (0, 0), 0), adopt(4)]),
        ("adopt-id-reused", "the adopted summary's id used again by a compaction",
         [S(2), adopt(4, "x"), append(4), compact((0, 6), (0, 6), 6, summary="x")]),
        ("negative-count", "an append with a negative count", [S(2), append(4), append(-1)]),
    ]


# -- the random corpus ---------------------------------------------------------------------------

def random_log(rng: random.Random) -> list[dict[str, Any]]:
    """A small log: usable (every id it names is in the context), mostly consistent."""
    F = rng.choice((0, 1, 2, 2, 3, 4))
    units = ("turns", "turns") if rng.random() < 0.95 else ("turns", "messages")
    log = [session(F, *units)]
    n = 0
    context: list[str] = []
    used: set[str] = set()
    count = 0  # compactions recorded: the next ordinal id
    if rng.random() < 0.2:
        a = rng.choice((0, 2, 3, 5, 8))
        sid = rng.choice((None, "adopted-x"))
        log.append(adopt(a, sid))
        n = a
        sid = sid or "adopted"
        context.append(sid)
        used.add(sid)
    steps = rng.randint(3, 12)
    compactions = 0
    for _ in range(steps):
        r = rng.random()
        if r < 0.3 or n == 0:
            k = rng.randint(1, 7)
            log.append(append(k))
            n += k
        elif r < 0.42:
            lo = rng.randint(0, n)
            hi = rng.randint(lo, n)
            if rng.random() < 0.05:
                lo, hi = rng.choice(((hi, lo), (lo, n + 2)))
            log.append(truncate(lo, hi))
        elif r < 0.5:
            lo = rng.randint(0, n)
            log.append(spill(lo, rng.randint(lo, n)))
        elif r < 0.56 and context:
            sid = rng.choice(context)
            log.append(evict(sid))
            context.remove(sid)
        elif r < 0.59:
            t = rng.randint(0, n)
            log.append(refusal((0, t), (0, t), t))
        else:
            compactions += 1
            t = rng.choice((n - F, n - F, n - F - 1, n, rng.randint(0, n)))
            t = min(max(t, 0), n)
            a = rng.choice((0, 0, rng.randint(0, t), max(0, t - 6)))
            b = rng.choice((t, n, n, rng.randint(a, n)))
            b = max(a, b)
            c = rng.choice((a, a, rng.randint(a, b)))
            d = rng.choice((t, b, rng.randint(c, b)))
            d = min(max(c, d), n)
            kw: dict[str, Any] = {}
            if rng.random() < 0.4:
                sid = f"s{compactions}"
                if sid not in used:
                    kw["summary"] = sid
            if context and rng.random() < 0.55:
                kw["saw"] = [s for s in context if rng.random() < 0.5]
                if rng.random() < 0.5:
                    kw["keeps"] = [s for s in context if rng.random() < 0.4]
            elif context and rng.random() < 0.15:
                kw["keeps"] = [rng.choice(context)]
            if rng.random() < 0.05:
                kw["override"] = "accepted"
            log.append(compact((a, b), (c, d), t, **kw))
            new = kw.get("summary", str(count))
            count += 1
            used.add(new)
            keeps = kw.get("keeps", [])
            context = [s for s in context if s in keeps] + [new]
    return log


# -- the file ------------------------------------------------------------------------------------

def example_logs(root: Path) -> Iterable[tuple[str, list[dict[str, Any]]]]:
    here = root / "examples" / "traces"
    traces = here if here.is_dir() else Path(__file__).resolve().parents[3] / "examples" / "traces"
    for path in sorted(traces.glob("*.jsonl")):
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        yield path.stem, [json.loads(ln) for ln in lines]


def build(root: Path) -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = []

    def add(vid: str, exercises: dict[str, Any], log: list[dict[str, Any]]) -> None:
        vectors.append({"id": vid, "exercises": exercises, "log": log, "expected": expected_of(log)})

    for name, log in example_logs(root):
        add(f"ledger/example/{name}", {"kind": "example", "what": f"examples/traces/{name}.jsonl"}, log)
    for name, what, log in scenarios():
        add(f"ledger/scenario/{name}", {"kind": "scenario", "what": what}, log)
    for name, what, log in invalid():
        add(f"ledger/invalid/{name}", {"kind": "invalid", "what": what}, log)
    rng = random.Random(RANDOM_SEED)
    for k in range(RANDOM_LOGS):
        add(f"ledger/random/{k}", {"kind": "random", "what": f"random log {k} (seed {RANDOM_SEED})"},
            random_log(rng))
    return vectors


def vectors_sha256(vectors: list[dict[str, Any]]) -> str:
    """The digest a reader checks: sha256 of the vectors' canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(vectors, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def render(spec: Spec, root: Path) -> str:
    vectors = build(root)
    for v in vectors:  # every vector's expected answers are complete, and errors are profile-free
        errors = {json.dumps(v["expected"][p].get("error")) for p in PROFILES}
        if len(errors) != 1:  # pragma: no cover - an input error never depends on the profile
            raise ValueError(f"{v['id']}: the input error differs between profiles")
    head = {
        "_generated": (f"GENERATED FILE, do not edit. Source: spec/clauses.toml (spec {spec.version}, sha256 "
                       f"{spec.sha256[:16]}) and the reference ledger core; generator: {GENERATOR}. "
                       "Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale."),
        "format": FORMAT,
        "spec_version": spec.version,
        "spec_sha256": spec.sha256,
        "profiles": list(PROFILES),
        "kinds": KINDS,
        "random": {"seed": RANDOM_SEED, "logs": RANDOM_LOGS},
        "count": len(vectors),
        "sha256": vectors_sha256(vectors),
        "sha256_of": "the vectors list as canonical JSON (sorted keys, separators ',' and ':', ASCII)",
    }
    lines = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    body = ",\n".join("  " + json.dumps(v, ensure_ascii=False) for v in vectors)
    return f'{lines},\n "vectors": [\n{body}\n ]\n}}\n'


def ledger_vector_targets() -> list[tuple[str, Any, str]]:
    return [(PATH, render, "ledger conformance vectors (event logs, every compaction judged)")]
