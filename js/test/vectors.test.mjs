// Runs every conformance vector through the checker for every profile: `npm test`
// (node --test). The vectors are the packed package's vectors/ or, in a checkout,
// ../spec/vectors; both are verified against their manifest (sha256 and count) first.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { CaseError, checkCase, checkCaseText, PROFILES, SPEC_VERSION } from "../tailguard-checker.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const candidates = [join(here, "vectors"), join(here, "..", "spec", "vectors")];
const directory = candidates.find((d) => existsSync(join(d, "manifest.json")));

function loadVectors() {
  assert.ok(directory, `no conformance vectors: looked in ${candidates.join(", ")}`);
  const manifest = JSON.parse(readFileSync(join(directory, "manifest.json"), "utf8"));
  assert.equal(manifest.format, "tailguard-vectors/2");
  const whole = createHash("sha256");
  const vectors = [];
  for (const entry of manifest.files) {
    const bytes = readFileSync(join(directory, entry.path));
    whole.update(bytes);
    assert.equal(createHash("sha256").update(bytes).digest("hex"), entry.sha256, `${entry.path}: sha256`);
    vectors.push(...JSON.parse(bytes.toString("utf8")).vectors);
  }
  assert.equal(whole.digest("hex"), manifest.sha256, "manifest sha256");
  assert.equal(vectors.length, manifest.count, "manifest count");
  return { manifest, vectors };
}

const { manifest, vectors } = loadVectors();

test("the vectors are for the spec this checker was generated from", () => {
  assert.equal(manifest.spec_version, SPEC_VERSION);
  assert.ok(vectors.length > 0, "the vector set is empty");
});

// A vector is {case} or {case_text} (the exact JSON text: a float 60.0, a repeated key or an integer
// beyond 2^53 is a property of the text); its answer is a decision or {unusable: [names]}, an error
// naming one of them. "declinable" vectors hold an integer beyond 2^53-1: this checker refuses them
// as over its declared limit (CaseError), and must never decide them.
function answer(v, profile) {
  try {
    return v.case_text !== undefined ? checkCaseText(v.case_text, profile) : checkCase(v.case, profile);
  } catch (err) {
    if (err instanceof CaseError) return { error: err.message, field: err.field };
    throw err;
  }
}

for (const profile of PROFILES) {
  test(`every vector, profile ${profile}`, () => {
    let checked = 0;
    let declined = 0;
    for (const v of vectors) {
      const want = v.expected[profile];
      if (want === undefined) continue;
      const got = answer(v, profile);
      const where = `${v.id} (${profile}): ${v.case_text ?? JSON.stringify(v.case)}`;
      if (want.unusable !== undefined) {
        assert.ok(got.error !== undefined, `${where}: expected unusable input, got ${JSON.stringify(got)}`);
        // a limit of the text is "request" in the line protocol; here the text is the case alone
        const names = want.unusable.includes("request") ? [...want.unusable, "case"] : want.unusable;
        assert.ok(names.some((name) => got.error.startsWith(`${name}:`) || got.error.startsWith(`${name}[`)),
          `${where}: ${got.error}`);
      } else if (v.declinable !== undefined) {
        assert.ok(got.error !== undefined && got.error.includes("beyond ±(2^53-1)"), `${where}: ${JSON.stringify(got)}`);
        declined += 1;
      } else {
        assert.deepEqual(got, want, where);
      }
      checked += 1;
    }
    assert.equal(checked, vectors.length, `every vector carries an answer for ${profile}`);
    assert.ok(declined < checked / 10, `only integers beyond 2^53-1 are declined (${declined})`);
  });
}

test("unusable input throws CaseError naming the field", () => {
  const good = vectors.find((v) => v.case !== undefined).case;
  assert.throws(() => checkCase({ ...good, history_end: 1.5 }), (err) =>
    err instanceof CaseError && err.field === "history_end" && err.message.startsWith("history_end: "));
  assert.throws(() => checkCase(good, "lenient"), (err) => err instanceof CaseError && err.field === "profile");
});

test("JSON text is read exactly: 0.0 is not an integer, repeated keys are refused", () => {
  const good = JSON.stringify(vectors.find((v) => v.case !== undefined).case);
  const floatZero = good.replace(/^\{"history_end": *[0-9]+/, '{"history_end": 0.0');
  assert.notEqual(floatZero, good);
  assert.throws(() => checkCaseText(floatZero), (err) => err instanceof CaseError && err.field === "history_end");
  assert.throws(() => checkCaseText(good.replace(/\}$/, ', "spills": []}')),
    (err) => err instanceof CaseError && err.field === "spills" && err.reason.includes("repeated"));
  assert.throws(() => checkCaseText(good.replace(/^\{"history_end": *[0-9]+/, '{"history_end": 9007199254740993')),
    (err) => err instanceof CaseError && err.reason.includes("beyond"));
  assert.deepEqual(checkCaseText(good), checkCase(JSON.parse(good)));
});
