// Cost of one decision by the JavaScript checker, against the seed's guard and two floors, in
// one Node process (the columns of benchmarks/bench_checker.py):
//   node benchmarks/bench_checker.mjs [--quick] [--repeat N] [--checker PATH]
// The seed's guard is assert_compaction_safe transcribed (it reads only the truncations); the
// floors are a sort of the 3k intervals plus one merging pass, and the pass alone (sorted input).
//
// Every side is measured the same way, so that the JIT cannot make one of them free:
// - each timed function gets its own timing loop (compiled from its own source, so its call
//   site and type feedback are its own: every side may be inlined into its loop alike);
// - the loop cycles through VARIANTS different cases of the same shape (offsets, lengths and,
//   when shuffled, the order differ), so nothing is a constant of the loop;
// - every result is consumed: each call's answer is checked (the seed's guard must allow, every
//   profile must give the case's known decision, the floors their known number of runs), and a
//   wrong answer stops the benchmark;
// - each side is warmed up first, then timed in repeats of about 5 ms taken in turn with the
//   other sides (15 rounds unless --repeat N, each starting at another side); the best repeat
//   of each counts.
// Ratios within one run are what count: the machine is shared.
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
if (args.includes("--help")) {
  console.log("usage: node benchmarks/bench_checker.mjs [--quick] [--repeat N] [--checker PATH]\n"
    + "  --quick      stop at 1,000 intervals per list\n"
    + "  --repeat N   rounds of timed repeats (default 15; the best of each side counts)\n"
    + "  --checker P  time another build of the checker module (default js/tailguard-checker.mjs)");
  process.exit(0);
}
const checkerPath = args.includes("--checker") ? pathToFileURL(args[args.indexOf("--checker") + 1]).href
  : new URL("../js/tailguard-checker.mjs", import.meta.url).href;
const { check, PROFILES } = await import(checkerPath);

const VARIANTS = 8;

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

// A session of 10-unit slots: k truncations, k prior coverages and k spills, none in the floor;
// variant j moves the end of the history and the tail by a few units and draws other lengths.
function makeCase(k, shuffled, j) {
  const rand = rng(7 + 31 * j);
  const n = 10 * (k + 1) + 100 + j;
  const t = n - 50 - (j % 3);
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
    history_end: n, tail_start: t, summary_input: [0, n], summary_covers: [0, t],
    recovery_floor_span: 50, floor_unit: "turns", truncator_unit: "turns",
    prior_truncations: trs, prior_coverage: pcs, spills: sps,
  };
}

// The seed's assert_compaction_safe: units, floor reach, then every truncation against
// [t - F, t); null when it allows, else the name of the check that refused.
function seedGuard(c) {
  if (c.floor_unit !== c.truncator_unit) return "units_agree";
  const floorStart = c.tail_start - c.recovery_floor_span;
  if (c.summary_input[0] > floorStart) return "floor_reach";
  for (const [lo, hi] of c.prior_truncations) if (hi > floorStart && lo < c.tail_start) return "truncation_clear";
  return null;
}

// The plain merging pass of a list sorted by start: new pairs, the input is not changed.
function mergePass(pairs) {
  const out = [];
  let last;
  for (const [lo, hi] of pairs) {
    if (last !== undefined && lo <= last[1]) {
      if (hi > last[1]) last[1] = hi;
    } else {
      last = [lo, hi];
      out.push(last);
    }
  }
  return out;
}

function byStart(x, y) {
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0;
}

function sortMerge(c) {
  return mergePass(c.prior_truncations.concat(c.prior_coverage, c.spills).sort(byStart)).length;
}

function scan(c) {
  return mergePass(c.prior_truncations).length + mergePass(c.prior_coverage).length + mergePass(c.spills).length;
}

// A timing loop of its own for fn: `number` calls cycling through the VARIANTS cases; every
// answer goes through `ok(answer, want[j])` (a wrong answer throws).
function loopFor(fn, ok, want) {
  const body = `
    let sum = 0;
    for (let i = 0; i < number; i += 1) {
      const j = i & ${VARIANTS - 1};
      const answer = fn(cases[j]);
      if (!ok(answer, want[j])) throw new Error("wrong answer: " + JSON.stringify(answer));
      sum += 1;
    }
    return sum;`;
  return new Function("fn", "ok", "want", "cases", "number", body).bind(null, fn, ok, want);
}

let sink = 0;
// The best time per call of each run (name -> timing loop): each is warmed up and calibrated to
// repeats of about 5 ms, then the repeats go round the runs in turn (so that a burst of load on
// the shared machine falls on all of them alike) and the best repeat of each counts.
function bestOf(runs, cases, repeat) {
  const numbers = {};
  for (const [name, run] of Object.entries(runs)) {
    const warm = Date.now();
    let number = 1;
    while (Date.now() - warm < 100) {  // warm up for about 0.1 s
      sink += run(cases, number);
      number *= 2;
    }
    number = 1;
    for (;;) {
      const start = process.hrtime.bigint();
      sink += run(cases, number);
      if (Number(process.hrtime.bigint() - start) >= 5e6) break;
      number *= 2;
    }
    numbers[name] = number;
  }
  const best = Object.fromEntries(Object.keys(runs).map((name) => [name, Infinity]));
  const order = Object.entries(runs);
  for (let r = 0; r < repeat; r += 1) {
    // each round starts at another side, so that a collection of the garbage one side left
    // (which falls at the same point of every round) does not land on the same side each time
    for (const [name, run] of [...order.slice(r % order.length), ...order.slice(0, r % order.length)]) {
      const start = process.hrtime.bigint();
      sink += run(cases, numbers[name]);
      best[name] = Math.min(best[name], Number(process.hrtime.bigint() - start) / 1e9 / numbers[name]);
    }
  }
  return best;
}

const quick = args.includes("--quick");
const repeat = args.includes("--repeat") ? Number(args[args.indexOf("--repeat") + 1]) : 15;
const sizes = [0, 1, 10, 100, 1000, 10000].filter((k) => !(quick && k > 1000));
const profiles = ["seed", "strict", "partitioned"].filter((p) => PROFILES.includes(p));
const us = (t) => (t >= 1e-4 ? `${(t * 1e6).toFixed(0)}µs` : t >= 1e-5 ? `${(t * 1e6).toFixed(1)}µs`
  : `${(t * 1e6).toFixed(3)}µs`).padStart(11);
// The cases decide the same for every profile but seed: allow at k = 0, and for k >= 1 refuse on
// summary_honest alone (the summary claims the truncated offsets), as in bench_checker.py.
const decides = (d, want) => d.decision === want.decision && d.failed.length === want.failed.length
  && d.failed[0] === want.failed[0] && d.holes.length === 0;
console.log(["k".padStart(6), "input".padStart(8), "seed guard".padStart(11), ...profiles.map((p) => p.padStart(11)),
  "sort+merge".padStart(11), "scan".padStart(11), "strict/guard".padStart(13), "strict/floor".padStart(13)].join(" "));
for (const k of sizes) {
  for (const shuffled of [false, true]) {
    const cases = Array.from({ length: VARIANTS }, (_, j) => makeCase(k, shuffled, j));
    const none = cases.map(() => null);
    // the floors' answers, known ahead: the three lists together cover [0, 10k) in one run
    const sortRuns = cases.map(() => (k === 0 ? 0 : 1));
    const scanRuns = cases.map((c) => scan(c));
    const same = (a, b) => a === b;
    const runs = { guard: loopFor(seedGuard, same, none) };
    for (const p of profiles) {
      const failed = p === "seed" || k === 0 ? [] : ["summary_honest"];
      const want = cases.map(() => ({ decision: failed.length === 0 ? "allow" : "refuse", failed }));
      runs[p] = loopFor((c) => check(p, c), decides, want);
    }
    runs.sort = loopFor(sortMerge, same, sortRuns);
    runs.scan = loopFor(scan, same, scanRuns);
    const times = bestOf(runs, cases, repeat);
    const [tSeed, tSort, tScan] = [times.guard, times.sort, times.scan];
    const floor = shuffled ? tSort : tScan;
    console.log([String(k).padStart(6), (shuffled ? "shuffled" : "sorted").padStart(8), us(tSeed),
      ...profiles.map((p) => us(times[p])), us(tSort), us(tScan),
      `${(times.strict / tSeed).toFixed(1)}x`.padStart(13), `${(times.strict / floor).toFixed(2)}x`.padStart(13)].join(" "));
  }
}
console.log(`(${sink} calls, every answer checked)`);
