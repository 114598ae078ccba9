"""Render the TypeScript declarations of the JavaScript checker (``js/tailguard-checker.d.ts``).

The same spec that renders ``js/tailguard-checker.mjs`` gives its types: the unit, profile and
clause-id unions, the case fields and their types, and the signatures of the exported
functions. Pure: ``render_dts(spec) -> str``; ``tailguard gen`` writes it and ``gen --check``
fails when it is stale.
"""

from __future__ import annotations

import json

from tailguard.base.jsonstrict import MAX_DEPTH, MAX_INT_DIGITS, MAX_INTERVALS
from tailguard.speclang.load import Spec

GENERATOR = "tailguard.backends.dts_render"
TARGET = "js/tailguard-checker.d.ts"

# spec input type -> TypeScript type of the field once read (readCase)
_TS_TYPES = {"int": "number", "interval": "Interval", "intervals": "Interval[]", "unit": "string"}


def _union(values: list[str]) -> str:
    return " | ".join(json.dumps(v) for v in values) if values else "never"


def render_dts(spec: Spec) -> str:
    clause_ids: list[str] = []
    for prof in spec.profiles:
        clause_ids += [cl.id for cl in prof.clauses if cl.id not in clause_ids]
    fields = []
    for inp in spec.inputs:
        ts = _TS_TYPES.get(str(inp.type))
        if ts is None:
            raise ValueError(f"input {inp.field}: no TypeScript type for spec type {inp.type!r}")
        doc = " ".join(inp.doc.split())
        fields += [f"  /** {doc} */" if doc else "", f"  {inp.field}: {ts};"]
    lists = [inp.field for inp in spec.inputs if str(inp.type) == "intervals"]
    clauses = "\n".join(
        f"  readonly {p.id}: readonly ClauseId[];" for p in spec.profiles
    )
    out = [
        f"// GENERATED FILE, do not edit. Source: spec/clauses.toml "
        f"(spec {spec.version}, sha256 {spec.sha256[:16]}); generator: {GENERATOR}.",
        "// Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale.",
        f"// Types of tailguard-checker.mjs, the tailguard runtime checker for Node.js (spec {spec.version}).",
        "",
        "/** A half-open offset range [lo, hi); lo == hi is empty. */",
        "export type Interval = [lo: number, hi: number];",
        f"export type Unit = {_union(list(spec.units))};",
        f"export type Profile = {_union([p.id for p in spec.profiles])};",
        f"export type ClauseId = {_union(clause_ids)};",
        "",
        "/** A compaction case once read: every field present and typed (see readCase). */",
        "export interface Fields {",
        *[line for line in fields if line],
        "}",
        "",
        "/** What check() takes: the interval lists may be any iterable of pairs, read once, and default to []. */",
        f"export type CheckFields = Omit<Fields, {_union(lists)}> & {{",
        *[f"  {name}?: Iterable<Interval>;" for name in lists],
        "};",
        "",
        "/** The answer for one case: allow iff no clause failed; holes are maximal unrecoverable ranges. */",
        "export interface Decision {",
        '  decision: "allow" | "refuse";',
        "  failed: ClauseId[];",
        "  holes: Interval[];",
        "}",
        "",
        f"export declare const SPEC_VERSION: {json.dumps(spec.version)};",
        "export declare const SPEC_SHA256: string;",
        "export declare const UNITS: readonly Unit[];",
        "export declare const PROFILES: readonly Profile[];",
        "export declare const CLAUSES: {",
        clauses,
        "};",
        "export declare const FIELDS: readonly (keyof Fields)[];",
        "/** Intervals in one case, all three lists together; more is a CaseError. */",
        f"export declare const MAX_INTERVALS: {MAX_INTERVALS};",
        "",
        "/** Unusable input: `field` names where, `reason` says what is wrong; message is `field: reason`. */",
        "export declare class CaseError extends Error {",
        "  constructor(field: string, reason: string);",
        '  name: "CaseError";',
        "  readonly field: string;",
        "  readonly reason: string;",
        "}",
        "",
        "/** Decide one compaction; every field is read first, anything unusable throws CaseError naming it. */",
        "export declare function check(profile: Profile, fields: CheckFields): Decision;",
        "/** Check the type of every case field; throw CaseError naming the first bad one. Extra keys are ignored. */",
        "export declare function readCase(caseObject: unknown): Fields;",
        "/** Read and decide one case given in the tailguard check JSON format (profile defaults to strict). */",
        "export declare function checkCase(caseObject: unknown, profile?: Profile): Decision;",
        "",
        "/** A JSON number written with a fraction or an exponent (60.0, 6e1): never an integer. */",
        "export declare class JsonFloat {",
        "  constructor(text: string);",
        "  readonly text: string;",
        "}",
        "/** Digits of one integer (sign not counted) readJSON accepts. */",
        f"export declare const MAX_INT_DIGITS: {MAX_INT_DIGITS};",
        "/** Arrays and objects nested in one JSON text readJSON accepts. */",
        f"export declare const MAX_DEPTH: {MAX_DEPTH};",
        "/** Read JSON text exactly (integers beyond 2^53-1 as BigInt, 60.0 as JsonFloat); a repeated key,",
        " * NaN or a limit throws CaseError naming the key, else `what`. */",
        "export declare function readJSON(text: string, what?: string): unknown;",
        "/** Read (strictly, readJSON) and decide one case given as JSON text. */",
        "export declare function checkCaseText(text: string, profile?: Profile): Decision;",
    ]
    return "\n".join(out) + "\n"
