// GENERATED FILE, do not edit. Source: spec/clauses.toml (spec 1.1.0, sha256 c5b5e939ca510ff1); generator: tailguard.backends.js_render.
// Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale.
// tailguard runtime checker for Node.js, spec 1.1.0: one dependency-free ES module.
// checkCase(caseObject, profile) -> {decision, failed, holes}; unusable input throws CaseError.

export const SPEC_VERSION = "1.1.0";
export const SPEC_SHA256 = "c5b5e939ca510ff1aa0321ad79f517179e7c8694dcbc714fe86aafbb154c7e90";
export const UNITS = Object.freeze(["turns", "messages", "tokens"]);
export const PROFILES = Object.freeze(["seed", "strict", "partitioned"]);
export const CLAUSES = Object.freeze({"seed": ["units_agree", "floor_reach", "truncation_clear"], "strict": ["well_formed", "units_agree", "floor_in_input", "floor_in_tail", "tail_intact", "seam_contiguous", "summary_honest", "no_hole"], "partitioned": ["well_formed", "units_agree", "floor_in_tail", "tail_intact", "seam_contiguous", "summary_honest", "no_hole"]});
export const FIELDS = Object.freeze(["history_end", "tail_start", "summary_input", "summary_covers", "recovery_floor_span", "floor_unit", "truncator_unit", "prior_truncations", "prior_coverage", "spills"]);
export const MAX_INTERVALS = 100000;  // intervals in one case, all three lists together

export class CaseError extends Error {
  constructor(field, reason) {
    super(`${field}: ${reason}`);
    this.name = "CaseError";
    this.field = field;
    this.reason = reason;
  }
}

function decision(failed, holes) {
  return { decision: failed.length === 0 ? "allow" : "refuse", failed, holes };
}

// Interval algorithms (backends/scan_ir.py, proved in T18 on their Python rendering). A set is an
// array of half-open [lo, hi] pairs, sorted, disjoint, non-adjacent, each non-empty.
// The union of ``items`` as a normal list, in one pass that holds the current run in ``run_lo``/``run_hi``; None when some non-empty pair starts before the current run (the pairs are not sorted: sort them and run again).
function _merge_run(items) {
  const out = [];
  let ordered = true;
  let started = false;
  let run_lo = 0;
  let run_hi = 0;
  for (const [lo, hi] of items) {
    if (lo < hi) {
      if (!(started)) {
        started = true;
        run_lo = lo;
        run_hi = hi;
      } else if (lo < run_lo) {
        ordered = false;
        break;
      } else if (lo <= run_hi) {
        if (hi > run_hi) {
          run_hi = hi;
        }
      } else {
        out.push([run_lo, run_hi]);
        run_lo = lo;
        run_hi = hi;
      }
    }
  }
  if (ordered && started) {
    out.push([run_lo, run_hi]);
  }
  return ordered ? out : null;
}

// ``[start, stop)`` minus the normal list ``items``, as a normal list, in one pass that stops at the first pair starting at or after ``stop``.
function _gaps(start, stop, items) {
  const out = [];
  let cur = start;
  for (const [lo, hi] of items) {
    if (lo >= stop) {
      break;
    }
    if (lo > cur) {
      out.push([cur, lo]);
    }
    if (hi > cur) {
      cur = hi;
    }
  }
  if (cur < stop) {
    out.push([cur, stop]);
  }
  return out;
}

function _byStart(x, y) {
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0;
}

// The union of any pairs as a normal list: one pass when they come sorted, else a sort and the same pass.
function _merged(items) {
  let out = _merge_run(items);
  if (out === null) {
    out = _merge_run(items.slice().sort(_byStart));
    if (out === null) throw new Error("internal: a sorted list did not merge in one pass (theorem T18)");
  }
  return out;
}

// The union of several lists joined (each usually sorted): one sort and one pass.
function _merged_runs(items) {
  const out = _merge_run(items.sort(_byStart));
  if (out === null) throw new Error("internal: a sorted list did not merge in one pass (theorem T18)");
  return out;
}

// Whether [start, stop) shares an offset with the normal list items: only the last pair that
// starts before stop can; it is found by binary search (the bisect_left of the Python checker).
function _meets(start, stop, items) {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (items[mid][0] < stop) lo = mid + 1; else hi = mid;
  }
  const j = lo - 1;
  return start < stop && j >= 0 && items[j][1] > start;
}

// Every pair [lo, hi] of items has low <= lo <= hi <= high.
function _bounded(items, low, high) {
  for (const [lo, hi] of items) {
    if (!(low <= lo && lo <= hi && hi <= high)) return false;
  }
  return true;
}

// Strict JSON reading (SPEC.md sections 3.1 and 3.4). JSON.parse cannot serve: it reads 60.0 and
// 6e1 as the integer 60, keeps the last of two equal keys, and rounds integers beyond 2^53.
/** A JSON number written with a fraction or an exponent (60.0, 6e1): never an integer. */
export class JsonFloat {
  constructor(text) {
    this.text = text;
  }

  toString() {
    return this.text;
  }
}

export const MAX_INT_DIGITS = 1000;  // digits of one integer (sign not counted)
export const MAX_DEPTH = 64;  // arrays and objects nested in one JSON text

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const WORDS = [["true", true], ["false", false], ["null", null]];

/**
 * Read one JSON text exactly: an integer as a number when it is a safe integer, else as a BigInt
 * (which readInt refuses: this checker's documented limit, never a rounded decision); a number with
 * a fraction or an exponent as a JsonFloat; objects without a prototype. A repeated key, NaN, an
 * integer of more than MAX_INT_DIGITS digits, nesting deeper than MAX_DEPTH or text that is not
 * JSON throws CaseError (the repeated key's name, else `what`).
 */
export function readJSON(text, what = "json") {
  let i = 0;
  const fail = (why) => {
    throw new CaseError(what, `${why} (at character ${i + 1})`);
  };
  const space = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i += 1;
  };
  const match = (re) => {
    re.lastIndex = i;
    const m = re.exec(text);
    if (m !== null) i = re.lastIndex;
    return m;
  };
  const value = (depth) => {
    space();
    const c = text[i];
    if (c === "{" || c === "[") {
      if (depth >= MAX_DEPTH) fail(`nested more than ${MAX_DEPTH} deep (the limit)`);
      return c === "{" ? object(depth + 1) : array(depth + 1);
    }
    if (c === '"') {
      const m = match(STRING);
      if (m === null) fail("an invalid string");
      return JSON.parse(m[0]);
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      const m = match(NUMBER);
      if (m === null) fail("an invalid number");
      if (m[1] !== undefined || m[2] !== undefined) return new JsonFloat(m[0]);
      const digits = m[0].length - (m[0][0] === "-" ? 1 : 0);
      if (digits > MAX_INT_DIGITS) fail(`an integer of ${digits} digits (the limit is ${MAX_INT_DIGITS})`);
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    for (const [word, v] of WORDS) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    return fail(c === undefined ? "unexpected end of the text" : `unexpected ${JSON.stringify(c)}; not JSON`);
  };
  const array = (depth) => {
    i += 1;
    const out = [];
    space();
    if (text[i] === "]") {
      i += 1;
      return out;
    }
    for (;;) {
      out.push(value(depth));
      space();
      if (text[i] === ",") {
        i += 1;
      } else if (text[i] === "]") {
        i += 1;
        return out;
      } else {
        fail("expected ',' or ']'");
      }
    }
  };
  const object = (depth) => {
    i += 1;
    const out = Object.create(null);
    space();
    if (text[i] === "}") {
      i += 1;
      return out;
    }
    for (;;) {
      space();
      if (text[i] !== '"') fail("expected a key");
      const key = JSON.parse(match(STRING)?.[0] ?? fail("an invalid key"));
      if (Object.hasOwn(out, key)) throw new CaseError(key, "key repeated in one object");
      space();
      if (text[i] !== ":") fail("expected ':'");
      i += 1;
      out[key] = value(depth);
      space();
      if (text[i] === ",") {
        i += 1;
      } else if (text[i] === "}") {
        i += 1;
        return out;
      } else {
        fail("expected ',' or '}'");
      }
    }
  };
  if (typeof text !== "string") throw new CaseError(what, `expected JSON text, got ${typeof text}`);
  const result = value(0);
  space();
  if (i < text.length) fail("text after the JSON value");
  return result;
}

// Profile 'seed': The seed's assert_compaction_safe, transcribed bit for bit on any integers, quirks included.
function check_seed(v_n, v_t, v_I, v_C, v_F, v_floor_unit, v_truncator_unit, v_TR, v_PC, v_SP) {
  const v_a = v_I[0];  // a = I.lo
  const failed = [];
  let holes = [];
  // units_agree: floor_unit == truncator_unit
  if (!(v_floor_unit === v_truncator_unit)) {
    return decision(["units_agree"], []);
  }
  // floor_reach: a <= t - F
  if (!(v_a <= (v_t - v_F))) {
    return decision(["floor_reach"], []);
  }
  // truncation_clear: all(r in TR: not (r.hi > t - F and r.lo < t))
  if (!v_TR.every((v_r) => (!((v_r[1] > (v_t - v_F)) && (v_r[0] < v_t))))) {
    return decision(["truncation_clear"], []);
  }
  return decision(failed, holes);
}

// Profile 'strict': The recovery contract: allow iff every offset of [0, n) stays recoverable and the floor is in both input and tail.
function check_strict(v_n, v_t, v_I, v_C, v_F, v_floor_unit, v_truncator_unit, v_TR, v_PC, v_SP) {
  if (!((v_n >= 0) && (v_F >= 0) && (0 <= v_t && v_t <= v_n) && ((0 <= v_I[0] && v_I[0] <= v_I[1] && v_I[1] <= v_n) && (0 <= v_C[0] && v_C[0] <= v_C[1] && v_C[1] <= v_n) && _bounded(v_TR, 0, v_n) && _bounded(v_PC, 0, v_n) && _bounded(v_SP, 0, v_n)) && UNITS.includes(v_floor_unit) && UNITS.includes(v_truncator_unit))) {
    return decision(["well_formed"], []);
  }
  const v_d = v_C[1];  // d = C.hi
  const v_T = [v_t, v_n];  // T = [t, n)
  const v_Phi = [(0 >= (v_n - v_F) ? 0 : (v_n - v_F)), v_n];  // Phi = [max(0, n - F), n)
  const v_TRU = _merged(v_TR);  // TRU = union(TR)
  const v_covered = _merged_runs(v_PC.concat(v_SP, _gaps((v_C[0] >= v_I[0] ? v_C[0] : v_I[0]), (v_C[1] <= v_I[1] ? v_C[1] : v_I[1]), v_TRU), _gaps(v_T[0], v_T[1], v_TRU)));  // covered = union(PC) | union(SP) | ((C & I) \ TRU) | (T \ TRU)
  const failed = [];
  let holes = [];
  // units_agree: floor_unit == truncator_unit
  if (!(v_floor_unit === v_truncator_unit)) {
    failed.push("units_agree");
  }
  // floor_in_input: Phi subset I
  if (!(v_Phi[0] >= v_Phi[1] || (v_I[0] <= v_Phi[0] && v_Phi[1] <= v_I[1]))) {
    failed.push("floor_in_input");
  }
  // floor_in_tail: Phi subset T
  if (!(v_Phi[0] >= v_Phi[1] || (v_T[0] <= v_Phi[0] && v_Phi[1] <= v_T[1]))) {
    failed.push("floor_in_tail");
  }
  // tail_intact: all(r in TR: empty(r & T))
  if (!(!_meets(v_T[0], v_T[1], v_TRU))) {
    failed.push("tail_intact");
  }
  // seam_contiguous: t == 0 or d >= t
  if (!((v_t === 0) || (v_d >= v_t))) {
    failed.push("seam_contiguous");
  }
  // summary_honest: C subset I \ TRU
  if (!(v_C[0] >= v_C[1] || (v_I[0] <= v_C[0] && v_C[1] <= v_I[1] && !_meets(v_C[0], v_C[1], v_TRU)))) {
    failed.push("summary_honest");
  }
  // no_hole: [0, n) subset covered
  const h_no_hole = _gaps(0, v_n, v_covered);  // holes: [0, n) \ covered
  if (h_no_hole.length !== 0) {
    failed.push("no_hole");
    holes = h_no_hole;
  }
  return decision(failed, holes);
}

// Profile 'partitioned': The recovery contract for pipelines that summarize the candidates and keep the tail verbatim: strict without floor_in_input.
function check_partitioned(v_n, v_t, v_I, v_C, v_F, v_floor_unit, v_truncator_unit, v_TR, v_PC, v_SP) {
  if (!((v_n >= 0) && (v_F >= 0) && (0 <= v_t && v_t <= v_n) && ((0 <= v_I[0] && v_I[0] <= v_I[1] && v_I[1] <= v_n) && (0 <= v_C[0] && v_C[0] <= v_C[1] && v_C[1] <= v_n) && _bounded(v_TR, 0, v_n) && _bounded(v_PC, 0, v_n) && _bounded(v_SP, 0, v_n)) && UNITS.includes(v_floor_unit) && UNITS.includes(v_truncator_unit))) {
    return decision(["well_formed"], []);
  }
  const v_d = v_C[1];  // d = C.hi
  const v_T = [v_t, v_n];  // T = [t, n)
  const v_Phi = [(0 >= (v_n - v_F) ? 0 : (v_n - v_F)), v_n];  // Phi = [max(0, n - F), n)
  const v_TRU = _merged(v_TR);  // TRU = union(TR)
  const v_covered = _merged_runs(v_PC.concat(v_SP, _gaps((v_C[0] >= v_I[0] ? v_C[0] : v_I[0]), (v_C[1] <= v_I[1] ? v_C[1] : v_I[1]), v_TRU), _gaps(v_T[0], v_T[1], v_TRU)));  // covered = union(PC) | union(SP) | ((C & I) \ TRU) | (T \ TRU)
  const failed = [];
  let holes = [];
  // units_agree: floor_unit == truncator_unit
  if (!(v_floor_unit === v_truncator_unit)) {
    failed.push("units_agree");
  }
  // floor_in_tail: Phi subset T
  if (!(v_Phi[0] >= v_Phi[1] || (v_T[0] <= v_Phi[0] && v_Phi[1] <= v_T[1]))) {
    failed.push("floor_in_tail");
  }
  // tail_intact: all(r in TR: empty(r & T))
  if (!(!_meets(v_T[0], v_T[1], v_TRU))) {
    failed.push("tail_intact");
  }
  // seam_contiguous: t == 0 or d >= t
  if (!((v_t === 0) || (v_d >= v_t))) {
    failed.push("seam_contiguous");
  }
  // summary_honest: C subset I \ TRU
  if (!(v_C[0] >= v_C[1] || (v_I[0] <= v_C[0] && v_C[1] <= v_I[1] && !_meets(v_C[0], v_C[1], v_TRU)))) {
    failed.push("summary_honest");
  }
  // no_hole: [0, n) subset covered
  const h_no_hole = _gaps(0, v_n, v_covered);  // holes: [0, n) \ covered
  if (h_no_hole.length !== 0) {
    failed.push("no_hole");
    holes = h_no_hole;
  }
  return decision(failed, holes);
}

const CHECKERS = { seed: check_seed, strict: check_strict, partitioned: check_partitioned };

/**
 * Decide one compaction. Every field is read first: an interval list may be any iterable of
 * [lo, hi] pairs (consumed once) and defaults to []; anything unusable throws CaseError naming
 * the field (a non-integer, a non-pair, more than 100,000 intervals); never a silent allow.
 */
export function check(profile, fields = {}) {
  const known = typeof profile === "string" && Object.hasOwn(CHECKERS, profile);
  const checker = known ? CHECKERS[profile] : undefined;
  if (checker === undefined) {
    throw new CaseError("profile", `unknown profile ${show(profile)}; known: ${PROFILES.join(", ")}`);
  }
  const v = readFields(fields, true);
  return checker(v["history_end"], v["tail_start"], v["summary_input"], v["summary_covers"], v["recovery_floor_span"], v["floor_unit"], v["truncator_unit"], v["prior_truncations"], v["prior_coverage"], v["spills"]);
}

function describe(value) {
  if (value instanceof JsonFloat) return "number";
  return value === null ? "null" : Array.isArray(value) ? "list" : typeof value;
}

function show(value) {
  let text;
  try {
    text = value instanceof JsonFloat ? value.text : typeof value === "bigint" ? `${value}n`
      : typeof value === "number" ? String(value)
      : JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text === undefined) text = String(value);
  return text.length <= 60 ? text : `${text.slice(0, 57)}...`;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function readInt(value, field) {
  if (typeof value === "number" && Number.isSafeInteger(value)) return value;
  const wide = typeof value === "bigint" ? value > MAX_SAFE || value < -MAX_SAFE
    : typeof value === "number" && Number.isInteger(value);
  if (wide) {
    const digits = String(value);
    const shown = digits.length <= 60 ? digits : `${digits.slice(0, 57)}...`;
    throw new CaseError(field, `the integer ${shown} is beyond ±(2^53-1), this checker's limit ` +
      "(JavaScript numbers are exact only up to there; SPEC.md section 3.4)");
  }
  throw new CaseError(field, `expected an integer, got ${describe(value)} ${show(value)}`);
}

function readPair(value, field) {
  if (!Array.isArray(value) || value.length !== 2) {
    throw new CaseError(field, `expected a pair [lo, hi], got ${show(value)}`);
  }
  return [readInt(value[0], `${field}[0]`), readInt(value[1], `${field}[1]`)];
}

function readPairs(value, field, room) {
  if (value === null || typeof value !== "object" || typeof value[Symbol.iterator] !== "function") {
    throw new CaseError(field, `expected a list of [lo, hi] pairs, got ${describe(value)}`);
  }
  const out = [];
  for (const item of value) {
    if (out.length >= room) {
      throw new CaseError(field, `more than ${MAX_INTERVALS} intervals in the case (the limit; ` +
        "prior_truncations, prior_coverage and spills together)");
    }
    out.push(readPair(item, `${field}[${out.length}]`));
  }
  return out;
}

function readUnit(value, field) {
  if (typeof value !== "string") {
    throw new CaseError(field, `expected a unit name (string), got ${describe(value)} ${show(value)}`);
  }
  return value;
}

const KINDS = Object.freeze({"history_end": "int", "tail_start": "int", "summary_input": "interval", "summary_covers": "interval", "recovery_floor_span": "int", "floor_unit": "unit", "truncator_unit": "unit", "prior_truncations": "intervals", "prior_coverage": "intervals", "spills": "intervals"});
const READERS = { int: readInt, interval: readPair, unit: readUnit };

function readFields(object, defaults) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) {
    throw new CaseError("case", `expected a JSON object, got ${describe(object)}`);
  }
  const out = {};
  let room = MAX_INTERVALS;
  for (const [field, kind] of Object.entries(KINDS)) {
    let value = object[field];
    if (!Object.hasOwn(object, field)) {
      if (!(defaults && kind === "intervals")) throw new CaseError(field, "missing field");
      value = [];
    }
    if (kind === "intervals") {
      out[field] = readPairs(value, field, room);
      room -= out[field].length;
    } else {
      out[field] = READERS[kind](value, field);
    }
  }
  return out;
}

/** Check the type of every case field; throw CaseError naming the first bad one. Extra keys are ignored. */
export function readCase(caseObject) {
  return readFields(caseObject, false);
}

/** Read and decide one case given in the tailguard check JSON format. */
export function checkCase(caseObject, profile = "strict") {
  return check(profile, readCase(caseObject));
}

/** Read (strictly, readJSON) and decide one case given as JSON text. */
export function checkCaseText(text, profile = "strict") {
  return checkCase(readJSON(text, "case"), profile);
}
