// Copies the conformance vectors (../spec/vectors; not ledger.json, the event logs a ledger reads) and the LICENSE into this directory
// before `npm pack` / `npm publish` (prepack), and removes the copies afterwards (postpack,
// `--clean`), so that the packed package's `npm test` runs the vectors on its own.
// Not part of the package; the copies are ignored by git.
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const vectors = join(here, "vectors");
const license = join(here, "LICENSE");

if (process.argv.includes("--clean")) {
  rmSync(vectors, { recursive: true, force: true });
  rmSync(license, { force: true });
} else {
  const source = join(here, "..", "spec", "vectors");
  if (!existsSync(join(source, "manifest.json"))) {
    console.error(`bundle-kit: ${source}/manifest.json is missing: pack from a tailguard checkout`);
    process.exit(1);
  }
  mkdirSync(vectors, { recursive: true });
  for (const name of readdirSync(source).filter((n) => n.endsWith(".json") && n !== "ledger.json").sort()) {
    copyFileSync(join(source, name), join(vectors, name));
  }
  copyFileSync(join(here, "..", "LICENSE"), license);
}
