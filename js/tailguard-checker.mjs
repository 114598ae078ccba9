// GENERATED FILE, do not edit. Source: spec/clauses.toml (spec 1.1.0, sha256 6ce9d103823e14f0); generator: tailguard.backends.js_render.
// Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale.
// tailguard runtime checker for Node.js, spec 1.1.0: one dependency-free ES module.
// checkCase(caseObject, profile) -> {decision, failed, holes}; unusable input throws CaseError.

export const SPEC_VERSION = "1.1.0";
export const SPEC_SHA256 = "6ce9d103823e14f02b1a55996a68e476151f05d3d05b6dcc2a800ed6e68bb4eb";
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

// ``_merge_run(items)`` in the same one pass that checks every item is a pair of two ``int`` with ``low <= lo <= hi <= high`` (the gate's bound and the union in one traversal); None when some item is not, or when the pairs are not sorted (then ``_merged_bounded`` tells the two apart).
function _merge_run_bounded(low, high, items) {
  const out = [];
  let ordered = true;
  let started = false;
  let run_lo = 0;
  let run_hi = 0;
  for (const item of items) {
    if (Array.isArray(item) && item.length === 2) {
      const lo = item[0];
      const hi = item[1];
      if (Number.isSafeInteger(lo) && Number.isSafeInteger(hi)) {
        if (lo < low || hi < lo || hi > high) {
          ordered = false;
          break;
        } else if (lo < hi) {
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
        continue;
      }
    }
    ordered = false;
    break;
  }
  if (ordered && started) {
    out.push([run_lo, run_hi]);
  }
  return ordered ? out : null;
}

// Sorting and joining (not interval algebra: each returns the pairs it was given, in another order
// or as they are; the union is then _merge_run's, which T18 proves right whenever it succeeds and
// successful on any list sorted by start).
const KEY_LIMIT = 2 ** 53;  // a sort key start * span + index is exact below 2^53

function _byStart(x, y) {
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0;
}

// The pairs of items (of integers) sorted by start, as a new array: fewer than 32 by insertion;
// else, when every start is non-negative, by numeric keys start * span + index (span: the power
// of two above the last index; exact below 2^53) in a Uint32Array when they fit, else in a
// Float64Array, so that no comparison function is called; else by comparisons.
function _sortByStart(items) {
  const len = items.length;
  if (len < 32) {  // short: an insertion sort is faster than setting up a typed array
    const out = items.slice();
    for (let i = 1; i < len; i += 1) {
      const item = out[i];
      let j = i;
      for (; j > 0 && out[j - 1][0] > item[0]; j -= 1) out[j] = out[j - 1];
      out[j] = item;
    }
    return out;
  }
  let span = 1;
  while (span < len) span *= 2;
  let top = 0;
  for (let i = 0; i < len; i += 1) {
    const lo = items[i][0];
    if (!(lo >= 0)) return items.slice().sort(_byStart);
    if (lo > top) top = lo;
  }
  const limit = (top + 1) * span;
  if (limit > KEY_LIMIT) return items.slice().sort(_byStart);
  const keys = limit <= 2 ** 32 ? new Uint32Array(len) : new Float64Array(len);
  for (let i = 0; i < len; i += 1) keys[i] = items[i][0] * span + i;
  keys.sort();
  const out = [];
  for (let j = 0; j < len; j += 1) out.push(items[keys[j] % span]);
  return out;
}

// Two lists sorted by start as one list sorted by start (linear; a list is returned as it is when
// the other is empty).
function _mergeByStart(a, b) {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  const out = new Array(a.length + b.length);  // every slot is filled below
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    if (b[j][0] < a[i][0]) {
      out[k] = b[j];
      j += 1;
    } else {
      out[k] = a[i];
      i += 1;
    }
    k += 1;
  }
  for (; i < a.length; i += 1, k += 1) out[k] = a[i];
  for (; j < b.length; j += 1, k += 1) out[k] = b[j];
  return out;
}

// The union of any pairs as a normal list: one pass when they come sorted, else a sort and the same pass.
function _merged(items) {
  if (items.length === 0) return items;
  let out = _merge_run(items);
  if (out === null) {
    out = _merge_run(_sortByStart(items));
    if (out === null) throw new Error("internal: a sorted list did not merge in one pass (theorem T18)");
  }
  return out;
}

// The union of several normal lists (each sorted by start) as a normal list: they are merged by
// start, the two shortest first, and the result goes through one pass of _merge_run (sorted again
// first if it did not come out sorted).
function _merged_runs(runs) {
  let m = 0;
  for (let i = 0; i < runs.length; i += 1) {  // runs is the caller's own array: compacted in place
    if (runs[i].length !== 0) {
      runs[m] = runs[i];
      m += 1;
    }
  }
  while (m > 1) {
    let a = 0;
    let b = 1;
    if (runs[1].length < runs[0].length) {
      a = 1;
      b = 0;
    }
    for (let i = 2; i < m; i += 1) {
      if (runs[i].length < runs[a].length) {
        b = a;
        a = i;
      } else if (runs[i].length < runs[b].length) {
        b = i;
      }
    }
    runs[a] = _mergeByStart(runs[a], runs[b]);
    runs[b] = runs[m - 1];
    m -= 1;
  }
  return m === 0 ? [] : _merged(runs[0]);
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
function check_seed(v_n, v_t, v_I, v_C, v_F, v_floor_unit, v_truncator_unit, v_TR, v_PC, v_SP, known) {
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
function check_strict(v_n, v_t, v_I, v_C, v_F, v_floor_unit, v_truncator_unit, v_TR, v_PC, v_SP, known) {
  if (!((v_n >= 0) && (v_F >= 0) && (0 <= v_t && v_t <= v_n) && ((0 <= v_I[0] && v_I[0] <= v_I[1] && v_I[1] <= v_n) && (0 <= v_C[0] && v_C[0] <= v_C[1] && v_C[1] <= v_n) && (known || _bounded(v_TR, 0, v_n)) && (known || _bounded(v_PC, 0, v_n)) && (known || _bounded(v_SP, 0, v_n))) && (v_floor_unit === "turns" || v_floor_unit === "messages" || v_floor_unit === "tokens") && (v_truncator_unit === "turns" || v_truncator_unit === "messages" || v_truncator_unit === "tokens"))) {
    return decision(["well_formed"], []);
  }
  const v_d = v_C[1];  // d = C.hi
  const v_T_lo = v_t;  // T = [t, n)
  const v_T_hi = v_n;
  const v_Phi_lo = (0 >= (v_n - v_F) ? 0 : (v_n - v_F));  // Phi = [max(0, n - F), n)
  const v_Phi_hi = v_n;
  const v_TRU = _merged(v_TR);  // TRU = union(TR)
  const v_covered = _merged_runs([_merged(v_PC), _merged(v_SP), _gaps((v_C[0] >= v_I[0] ? v_C[0] : v_I[0]), (v_C[1] <= v_I[1] ? v_C[1] : v_I[1]), v_TRU), _gaps(v_T_lo, v_T_hi, v_TRU)]);  // covered = union(PC) | union(SP) | ((C & I) \ TRU) | (T \ TRU)
  const failed = [];
  let holes = [];
  // units_agree: floor_unit == truncator_unit
  if (!(v_floor_unit === v_truncator_unit)) {
    failed.push("units_agree");
  }
  // floor_in_input: Phi subset I
  if (!(v_Phi_lo >= v_Phi_hi || (v_I[0] <= v_Phi_lo && v_Phi_hi <= v_I[1]))) {
    failed.push("floor_in_input");
  }
  // floor_in_tail: Phi subset T
  if (!(v_Phi_lo >= v_Phi_hi || (v_T_lo <= v_Phi_lo && v_Phi_hi <= v_T_hi))) {
    failed.push("floor_in_tail");
  }
  // tail_intact: all(r in TR: empty(r & T))
  if (!(!_meets(v_T_lo, v_T_hi, v_TRU))) {
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
function check_partitioned(v_n, v_t, v_I, v_C, v_F, v_floor_unit, v_truncator_unit, v_TR, v_PC, v_SP, known) {
  if (!((v_n >= 0) && (v_F >= 0) && (0 <= v_t && v_t <= v_n) && ((0 <= v_I[0] && v_I[0] <= v_I[1] && v_I[1] <= v_n) && (0 <= v_C[0] && v_C[0] <= v_C[1] && v_C[1] <= v_n) && (known || _bounded(v_TR, 0, v_n)) && (known || _bounded(v_PC, 0, v_n)) && (known || _bounded(v_SP, 0, v_n))) && (v_floor_unit === "turns" || v_floor_unit === "messages" || v_floor_unit === "tokens") && (v_truncator_unit === "turns" || v_truncator_unit === "messages" || v_truncator_unit === "tokens"))) {
    return decision(["well_formed"], []);
  }
  const v_d = v_C[1];  // d = C.hi
  const v_T_lo = v_t;  // T = [t, n)
  const v_T_hi = v_n;
  const v_Phi_lo = (0 >= (v_n - v_F) ? 0 : (v_n - v_F));  // Phi = [max(0, n - F), n)
  const v_Phi_hi = v_n;
  const v_TRU = _merged(v_TR);  // TRU = union(TR)
  const v_covered = _merged_runs([_merged(v_PC), _merged(v_SP), _gaps((v_C[0] >= v_I[0] ? v_C[0] : v_I[0]), (v_C[1] <= v_I[1] ? v_C[1] : v_I[1]), v_TRU), _gaps(v_T_lo, v_T_hi, v_TRU)]);  // covered = union(PC) | union(SP) | ((C & I) \ TRU) | (T \ TRU)
  const failed = [];
  let holes = [];
  // units_agree: floor_unit == truncator_unit
  if (!(v_floor_unit === v_truncator_unit)) {
    failed.push("units_agree");
  }
  // floor_in_tail: Phi subset T
  if (!(v_Phi_lo >= v_Phi_hi || (v_T_lo <= v_Phi_lo && v_Phi_hi <= v_T_hi))) {
    failed.push("floor_in_tail");
  }
  // tail_intact: all(r in TR: empty(r & T))
  if (!(!_meets(v_T_lo, v_T_hi, v_TRU))) {
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

// The fast reader of check: one pass per list that reads and copies every pair of safe integers
// low <= lo <= hi <= high (the bounds of the well-formedness gate); null when anything is unusual
// (not an array, an item that is not such a pair, a pair out of bounds, more pairs than `room`
// left under the limit), and the exact reader (readFields) then reads the fields again, names the
// field and the reason, and the gate checks the bounds.
const OBJECT_PROTOTYPE = Object.prototype;
const ARRAY_VALUES = Array.prototype[Symbol.iterator];

function fastPair(value) {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const lo = value[0];
  const hi = value[1];
  return Number.isSafeInteger(lo) && Number.isSafeInteger(hi) ? [lo, hi] : null;
}

function fastPairs(value, low, high, room) {
  if (!Array.isArray(value) || value[Symbol.iterator] !== ARRAY_VALUES) return null;
  const len = value.length;
  if (len > room) return null;
  const out = new Array(len);  // every slot is filled below (or null is returned)
  for (let i = 0; i < len; i += 1) {
    const item = value[i];
    if (!Array.isArray(item) || item.length !== 2) return null;
    const lo = item[0];
    const hi = item[1];
    if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || !(low <= lo && lo <= hi && hi <= high)) return null;
    out[i] = [lo, hi];
  }
  return out;
}

/**
 * Decide one compaction. Every field is read first: an interval list may be any iterable of
 * [lo, hi] pairs (consumed once) and defaults to []; anything unusable throws CaseError naming
 * the field (a non-integer, a non-pair, more than 100,000 intervals); never a silent allow.
 */
export function check(profile, fields = {}) {
  const checker = profile === "seed" ? check_seed : profile === "strict" ? check_strict : profile === "partitioned" ? check_partitioned : undefined;
  if (checker === undefined) {
    throw new CaseError("profile", `unknown profile ${show(profile)}; known: ${PROFILES.join(", ")}`);
  }
  fast: if (fields !== null && typeof fields === "object") {
    const proto = Object.getPrototypeOf(fields);
    if (!(proto === null || (proto === OBJECT_PROTOTYPE && !("history_end" in OBJECT_PROTOTYPE) && !("tail_start" in OBJECT_PROTOTYPE) && !("summary_input" in OBJECT_PROTOTYPE) && !("summary_covers" in OBJECT_PROTOTYPE) && !("recovery_floor_span" in OBJECT_PROTOTYPE) && !("floor_unit" in OBJECT_PROTOTYPE) && !("truncator_unit" in OBJECT_PROTOTYPE) && !("prior_truncations" in OBJECT_PROTOTYPE) && !("prior_coverage" in OBJECT_PROTOTYPE) && !("spills" in OBJECT_PROTOTYPE)))) break fast;
    let room = MAX_INTERVALS;
    const v_n = fields.history_end;
    if (!Number.isSafeInteger(v_n)) break fast;
    const v_t = fields.tail_start;
    if (!Number.isSafeInteger(v_t)) break fast;
    const v_I = fastPair(fields.summary_input);
    if (v_I === null) break fast;
    const v_C = fastPair(fields.summary_covers);
    if (v_C === null) break fast;
    const v_F = fields.recovery_floor_span;
    if (!Number.isSafeInteger(v_F)) break fast;
    const v_floor_unit = fields.floor_unit;
    if (typeof v_floor_unit !== "string") break fast;
    const v_truncator_unit = fields.truncator_unit;
    if (typeof v_truncator_unit !== "string") break fast;
    const v_TR_given = fields.prior_truncations;
    const v_TR = v_TR_given === undefined && !("prior_truncations" in fields) ? [] : fastPairs(v_TR_given, 0, v_n, room);
    if (v_TR === null) break fast;
    room -= v_TR.length;
    const v_PC_given = fields.prior_coverage;
    const v_PC = v_PC_given === undefined && !("prior_coverage" in fields) ? [] : fastPairs(v_PC_given, 0, v_n, room);
    if (v_PC === null) break fast;
    room -= v_PC.length;
    const v_SP_given = fields.spills;
    const v_SP = v_SP_given === undefined && !("spills" in fields) ? [] : fastPairs(v_SP_given, 0, v_n, room);
    if (v_SP === null) break fast;
    return checker(v_n, v_t, v_I, v_C, v_F, v_floor_unit, v_truncator_unit, v_TR, v_PC, v_SP, true);
  }
  const v = readFields(fields, true);
  return checker(v["history_end"], v["tail_start"], v["summary_input"], v["summary_covers"], v["recovery_floor_span"], v["floor_unit"], v["truncator_unit"], v["prior_truncations"], v["prior_coverage"], v["spills"], false);
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
