// Runs every conformance vector through the checker for every profile: `npm test`
// (node --test). The vectors are the packed package's vectors/ or, in a checkout,
// ../spec/vectors; both are verified against their manifest (sha256 and count) first.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { CaseError, checkCase, PROFILES, SPEC_VERSION } from "../tailguard-checker.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const candidates = [join(here, "vectors"), join(here, "..", "spec", "vectors")];
const directory = candidates.find((d) => existsSync(join(d, "manifest.json")));

function loadVectors() {
  assert.ok(directory, `no conformance vectors: looked in ${candidates.join(", ")}`);
  const manifest = JSON.parse(readFileSync(join(directory, "manifest.json"), "utf8"));
  assert.equal(manifest.format, "tailguard-vectors/1");
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

for (const profile of PROFILES) {
  test(`every vector, profile ${profile}`, () => {
    let checked = 0;
    for (const v of vectors) {
      const want = v.expected[profile];
      if (want === undefined) continue;
      const got = checkCase(v.case, profile);
      assert.deepEqual(got, want, `${v.id} (${profile}): ${JSON.stringify(v.case)}`);
      checked += 1;
    }
    assert.equal(checked, vectors.length, `every vector carries an answer for ${profile}`);
  });
}

test("unusable input throws CaseError naming the field", () => {
  const good = vectors[0].case;
  assert.throws(() => checkCase({ ...good, history_end: 1.5 }), (err) =>
    err instanceof CaseError && err.field === "history_end" && err.message.startsWith("history_end: "));
  assert.throws(() => checkCase(good, "lenient"), (err) => err instanceof CaseError && err.field === "profile");
});
