// GENERATED FILE, do not edit. Source: spec/clauses.toml (spec 1.1.0, sha256 6ce9d103823e14f0); generator: tailguard.backends.dts_render.
// Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale.
// Types of tailguard-checker.mjs, the tailguard runtime checker for Node.js (spec 1.1.0).

/** A half-open offset range [lo, hi); lo == hi is empty. */
export type Interval = [lo: number, hi: number];
export type Unit = "turns" | "messages" | "tokens";
export type Profile = "seed" | "strict" | "partitioned";
export type ClauseId = "units_agree" | "floor_reach" | "truncation_clear" | "well_formed" | "floor_in_input" | "floor_in_tail" | "tail_intact" | "seam_contiguous" | "summary_honest" | "no_hole";

/** A compaction case once read: every field present and typed (see readCase). */
export interface Fields {
  /** History end: the offset the next appended unit would get. */
  history_end: number;
  /** Start of the retained verbatim tail T = [t, n). */
  tail_start: number;
  /** Summarizer input I = [a, b): what the summarizer was given. */
  summary_input: Interval;
  /** Summary coverage C = [c, d): the range the new summary is annotated as covering. */
  summary_covers: Interval;
  /** Recovery floor span, in floor_unit. */
  recovery_floor_span: number;
  /** Unit of the recovery floor. */
  floor_unit: string;
  /** Unit in which the truncator logs its evictions. */
  truncator_unit: string;
  /** Ranges evicted by budget enforcement (not by compaction). */
  prior_truncations: Interval[];
  /** Ranges covered by earlier summaries that are still in the context. */
  prior_coverage: Interval[];
  /** Ranges written losslessly to durable storage, each with a re-read handle. */
  spills: Interval[];
}

/** What check() takes: the interval lists may be any iterable of pairs, read once, and default to []. */
export type CheckFields = Omit<Fields, "prior_truncations" | "prior_coverage" | "spills"> & {
  prior_truncations?: Iterable<Interval>;
  prior_coverage?: Iterable<Interval>;
  spills?: Iterable<Interval>;
};

/** The answer for one case: allow iff no clause failed; holes are maximal unrecoverable ranges. */
export interface Decision {
  decision: "allow" | "refuse";
  failed: ClauseId[];
  holes: Interval[];
}

export declare const SPEC_VERSION: "1.1.0";
export declare const SPEC_SHA256: string;
export declare const UNITS: readonly Unit[];
export declare const PROFILES: readonly Profile[];
export declare const CLAUSES: {
  readonly seed: readonly ClauseId[];
  readonly strict: readonly ClauseId[];
  readonly partitioned: readonly ClauseId[];
};
export declare const FIELDS: readonly (keyof Fields)[];
/** Intervals in one case, all three lists together; more is a CaseError. */
export declare const MAX_INTERVALS: 100000;

/** Unusable input: `field` names where, `reason` says what is wrong; message is `field: reason`. */
export declare class CaseError extends Error {
  constructor(field: string, reason: string);
  name: "CaseError";
  readonly field: string;
  readonly reason: string;
}

/** Decide one compaction; every field is read first, anything unusable throws CaseError naming it. */
export declare function check(profile: Profile, fields: CheckFields): Decision;
/** Check the type of every case field; throw CaseError naming the first bad one. Extra keys are ignored. */
export declare function readCase(caseObject: unknown): Fields;
/** Read and decide one case given in the tailguard check JSON format (profile defaults to strict). */
export declare function checkCase(caseObject: unknown, profile?: Profile): Decision;

/** A JSON number written with a fraction or an exponent (60.0, 6e1): never an integer. */
export declare class JsonFloat {
  constructor(text: string);
  readonly text: string;
}
/** Digits of one integer (sign not counted) readJSON accepts. */
export declare const MAX_INT_DIGITS: 1000;
/** Arrays and objects nested in one JSON text readJSON accepts. */
export declare const MAX_DEPTH: 64;
/** Read JSON text exactly (integers beyond 2^53-1 as BigInt, 60.0 as JsonFloat); a repeated key,
 * NaN or a limit throws CaseError naming the key, else `what`. */
export declare function readJSON(text: string, what?: string): unknown;
/** Read (strictly, readJSON) and decide one case given as JSON text. */
export declare function checkCaseText(text: string, profile?: Profile): Decision;
