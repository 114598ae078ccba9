// check() reads its fields by a fast reader (one copying pass per list) and falls back to the
// exact reader when anything is unusual; the decision sorts starts by numeric keys. These tests
// hold both to the exact behaviour: the same answer (decision, failed, holes, or CaseError text)
// through either reader, whatever the order of the lists, at small and large offsets.
import assert from "node:assert/strict";
import { test } from "node:test";

import { CaseError, check, PROFILES } from "../tailguard-checker.mjs";

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function shuffled(list, rand) {
  const out = list.slice();
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

// A random case with offsets scaled by `scale` (so that large scales exercise every sort-key width).
function randomCase(rand, k, scale) {
  const n = (8 * k + 8) * scale;
  const at = () => Math.floor(rand() * (8 * k + 8)) * scale;
  const pair = () => {
    const a = at();
    const b = at();
    return a <= b ? [a, b] : [b, a];
  };
  // now and then a pair outside [0, n]: the gate refuses it (well_formed), the fast reader leaves it
  const outside = () => (rand() < 0.5 ? [-scale, at()] : [at(), n + scale]);
  const list = () => Array.from({ length: Math.floor(rand() * (k + 1)) }, () => (rand() < 0.02 ? outside() : pair()));
  const t = at();
  return {
    history_end: n, tail_start: t, summary_input: pair(), summary_covers: pair(),
    recovery_floor_span: Math.floor(rand() * 4) * scale, floor_unit: "turns", truncator_unit: "turns",
    prior_truncations: list(), prior_coverage: list(), spills: list(),
  };
}

function answer(profile, fields) {
  try {
    return check(profile, fields);
  } catch (err) {
    if (err instanceof CaseError) return { error: err.message };
    throw err;
  }
}

// The same own fields on an object whose prototype is neither Object.prototype nor null: the fast
// reader declines it, so the exact reader (readFields) answers.
function viaExactReader(fields) {
  return Object.assign(Object.create(Object.create(null)), fields);
}

test("the fast reader and the exact reader give the same answers", () => {
  const rand = rng(14);
  let refused = 0;
  let outOfBounds = 0;
  for (let i = 0; i < 400; i += 1) {
    const c = randomCase(rand, i % 12, 1);
    for (const profile of PROFILES) {
      const fast = answer(profile, c);
      assert.deepEqual(fast, answer(profile, viaExactReader(c)), JSON.stringify(c));
      assert.deepEqual(fast, answer(profile, Object.assign(Object.create(null), c)), JSON.stringify(c));
      if (fast.decision === "refuse") refused += 1;
      if (fast.failed?.[0] === "well_formed") outOfBounds += 1;
    }
  }
  assert.ok(refused > 100, "the random cases refuse often enough to compare failed and holes");
  assert.ok(outOfBounds > 20, `some cases have a pair outside [0, n] (${outOfBounds})`);
});

test("unusual input gets the exact reader's error, naming the field", () => {
  const c = randomCase(rng(3), 4, 1);
  const bad = [
    { history_end: 2 ** 53 }, { tail_start: "3" }, { summary_input: [0, 1, 2] }, { summary_covers: [0, 0.5] },
    { floor_unit: 1 }, { prior_truncations: [[0, 1], [2]] }, { prior_coverage: [[0, 1], , [2, 3]] },  // eslint-disable-line no-sparse-arrays
    { spills: [[0, 1n]] }, { spills: undefined }, { prior_truncations: "ab" }, { prior_coverage: { length: 0 } },
  ];
  for (const change of bad) {
    const fields = { ...c, ...change };
    const got = answer("strict", fields);
    assert.ok(got.error !== undefined, `${Object.keys(change)[0]}: ${JSON.stringify(got)}`);
    assert.ok(got.error.startsWith(Object.keys(change)[0]), got.error);
    assert.deepEqual(got, answer("strict", viaExactReader(fields)));
  }
  const missing = { ...c };
  delete missing.history_end;
  assert.deepEqual(answer("strict", missing), { error: "history_end: missing field" });
  const defaults = { ...c };
  delete defaults.spills;
  assert.deepEqual(answer("strict", defaults), answer("strict", { ...c, spills: [] }));
});

test("the fast reader stops at the first unusual field, as the exact reader does", () => {
  const c = randomCase(rng(13), 2, 1);
  const tooFar = { get() { throw new Error("read a field the exact reader never reaches"); }, enumerable: true };
  const early = Object.defineProperty({ ...c, history_end: 1.5 }, "spills", tooFar);
  assert.deepEqual(answer("strict", early), { error: "history_end: expected an integer, got number 1.5" });
  const over = Object.defineProperty({ ...c, prior_truncations: Array(100001).fill([0, 1]) }, "spills", tooFar);
  assert.deepEqual(answer("strict", over), { error: "prior_truncations: more than 100000 intervals in the case "
    + "(the limit; prior_truncations, prior_coverage and spills together)" });
});

test("a field inherited from a polluted Object.prototype is not read as the case's own", () => {
  const c = randomCase(rng(5), 3, 1);
  for (const [field, polluted] of [["spills", [[0, c.history_end]]], ["tail_start", 0], ["summary_covers", [0, 0]]]) {
    const without = { ...c };
    delete without[field];
    const before = answer("strict", without);
    Object.prototype[field] = polluted;  // eslint-disable-line no-extend-native
    try {
      assert.deepEqual(answer("strict", without), before, field);
    } finally {
      delete Object.prototype[field];
    }
    assert.deepEqual(before, field === "spills" ? answer("strict", { ...c, spills: [] }) : { error: `${field}: missing field` });
  }
});

test("pairs are copied as read: a value that changes after it was read does not reach the decision", () => {
  const c = { ...randomCase(rng(9), 0, 1), history_end: 20, tail_start: 20, summary_input: [0, 20],
    summary_covers: [0, 20], recovery_floor_span: 0 };
  let reads = 0;
  const changing = new Proxy([0, 10], {
    get(target, key, receiver) {
      if (key === "0") {
        reads += 1;
        return reads === 1 ? 0 : "x";  // valid when first read, garbage afterwards
      }
      return Reflect.get(target, key, receiver);
    },
  });
  const got = check("strict", { ...c, prior_truncations: [changing] });
  assert.deepEqual(got, check("strict", { ...c, prior_truncations: [[0, 10]] }));
  assert.deepEqual(got.failed, ["summary_honest", "no_hole"]);
  assert.equal(reads, 1);
});

test("an array with its own iterator is read by that iterator, as before", () => {
  const c = randomCase(rng(11), 2, 1);
  const odd = [[0, 1]];
  odd[Symbol.iterator] = function* items() {
    yield [0, c.history_end];
  };
  assert.deepEqual(check("strict", { ...c, prior_truncations: odd }),
    check("strict", { ...c, prior_truncations: [[0, c.history_end]] }));
  assert.deepEqual(check("strict", { ...c, spills: new Set([[0, 2]]) }), check("strict", { ...c, spills: [[0, 2]] }));
});

test("decisions do not depend on the order of the lists, at every sort-key width", () => {
  // scale 1: keys fit a Uint32Array; 2^30: a Float64Array; 2^44: over 2^53, sorted by comparisons
  for (const scale of [1, 2 ** 30, 2 ** 44]) {
    const rand = rng(scale % 1000 + 1);
    let holes = 0;
    for (let i = 0; i < 150; i += 1) {
      const c = randomCase(rand, 40, scale);
      assert.ok(Number.isSafeInteger(c.history_end));
      const mixed = { ...c };
      for (const f of ["prior_truncations", "prior_coverage", "spills"]) mixed[f] = shuffled(c[f], rand);
      const sorted = { ...c };
      for (const f of ["prior_truncations", "prior_coverage", "spills"]) {
        sorted[f] = c[f].slice().sort((x, y) => x[0] - y[0] || x[1] - y[1]);
      }
      for (const profile of PROFILES) {
        const want = check(profile, sorted);
        assert.deepEqual(check(profile, mixed), want, `scale ${scale}: ${JSON.stringify(c)}`);
        assert.deepEqual(check(profile, viaExactReader(mixed)), want);
        holes += want.holes.length;
      }
    }
    assert.ok(holes > 50, `scale ${scale}: the cases have holes to compare (${holes})`);
  }
});
