// Cost of one decision by the JavaScript checker, against the seed's guard and two floors, in
// one Node process (the columns of benchmarks/bench_checker.py; best of several runs):
//   node benchmarks/bench_checker.mjs [--quick]
// The seed's guard is assert_compaction_safe transcribed (it reads only the truncations); the
// floors are a sort of the 3k intervals plus one merging pass, and the pass alone (sorted input).
// Ratios within one run are what count: the machine is shared.
import { check, PROFILES } from "../js/tailguard-checker.mjs";

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function shuffle(list, rand) {
  for (let i = list.length - 1; i > 0; i -= 1) {
    const j = Math.floor(rand() * (i + 1));
    [list[i], list[j]] = [list[j], list[i]];
  }
}

function makeCase(k, shuffled) {
  const rand = rng(7);
  const n = 10 * (k + 1) + 100;
  const trs = [];
  const pcs = [];
  const sps = [];
  for (let i = 0; i < k; i += 1) {
    trs.push([10 * i, 10 * i + 1 + Math.floor(rand() * 5)]);
    pcs.push([10 * i, 10 * i + 10]);
    sps.push([10 * i, 10 * i + 10]);
  }
  if (shuffled) for (const l of [trs, pcs, sps]) shuffle(l, rand);
  return {
    history_end: n, tail_start: n - 50, summary_input: [0, n], summary_covers: [0, n - 50],
    recovery_floor_span: 50, floor_unit: "turns", truncator_unit: "turns",
    prior_truncations: trs, prior_coverage: pcs, spills: sps,
  };
}

function seedGuard(c) {
  // assert_compaction_safe: units, floor reach, then every truncation against [t - F, t)
  if (c.floor_unit !== c.truncator_unit) return "units_agree";
  const floorStart = c.tail_start - c.recovery_floor_span;
  if (c.summary_input[0] > floorStart) return "floor_reach";
  for (const [lo, hi] of c.prior_truncations) if (hi > floorStart && lo < c.tail_start) return "truncation_clear";
  return null;
}

function mergePass(pairs) {
  const out = [];
  for (const [lo, hi] of pairs) {
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last[1]) {
      if (hi > last[1]) last[1] = hi;
    } else {
      out.push([lo, hi]);
    }
  }
  return out;
}

function sortMerge(c) {
  const all = c.prior_truncations.concat(c.prior_coverage, c.spills);
  all.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
  return mergePass(all);
}

function scan(c) {
  return [mergePass(c.prior_truncations), mergePass(c.prior_coverage), mergePass(c.spills)];
}

let sink = 0;
function best(fn, number, repeat = 7) {
  let bestTime = Infinity;
  for (let r = 0; r < repeat; r += 1) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < number; i += 1) sink += fn() === null ? 0 : 1;
    const t = Number(process.hrtime.bigint() - start) / 1e9 / number;
    if (t < bestTime) bestTime = t;
  }
  return bestTime;
}

const quick = process.argv.includes("--quick");
const sizes = [0, 1, 10, 100, 1000, 10000].filter((k) => !(quick && k > 1000));
const profiles = ["seed", "strict", "partitioned"].filter((p) => PROFILES.includes(p));
const us = (t) => `${(t * 1e6).toFixed(2)}µs`.padStart(12);
console.log(["k".padStart(6), "input".padStart(8), "seed guard".padStart(12), ...profiles.map((p) => p.padStart(12)),
  "sort+merge".padStart(12), "scan".padStart(12), "strict/guard".padStart(13), "strict/floor".padStart(13)].join(" "));
for (const k of sizes) {
  for (const shuffled of [false, true]) {
    const c = makeCase(k, shuffled);
    const number = Math.max(5, Math.floor(200000 / (3 * k + 1)));
    best(() => check("strict", c), number, 2); // warm up the JIT
    const tSeed = best(() => seedGuard(c), number);
    const times = Object.fromEntries(profiles.map((p) => [p, best(() => check(p, c), number)]));
    const tSort = best(() => sortMerge(c), number);
    const tScan = best(() => scan(c), number);
    const floor = shuffled ? tSort : tScan;
    console.log([String(k).padStart(6), (shuffled ? "shuffled" : "sorted").padStart(8), us(tSeed),
      ...profiles.map((p) => us(times[p])), us(tSort), us(tScan),
      `${(times.strict / tSeed).toFixed(1)}x`.padStart(13), `${(times.strict / floor).toFixed(2)}x`.padStart(13)].join(" "));
  }
}
if (sink < 0) console.log(sink);
