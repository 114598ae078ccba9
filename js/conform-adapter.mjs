// GENERATED FILE, do not edit. Source: spec/clauses.toml (spec 1.1.0, sha256 6ce9d103823e14f0); generator: tailguard.backends.js_render.
// Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale.
// The conformance line protocol for the JavaScript checker:
//   tailguard conform -- node js/conform-adapter.mjs
// One request per stdin line, {"profile": ..., "case": {...}}; one response per stdout line.
import { createInterface } from "node:readline";
import { CaseError, checkCase, readJSON } from "./tailguard-checker.mjs";

function answer(line) {
  try {
    const request = readJSON(line, "request");  // strictly: 60.0 stays a float, a repeated key is refused
    if (request === null || typeof request !== "object" || Array.isArray(request)) {
      throw new CaseError("request", "expected a JSON object");
    }
    return checkCase(request.case, request.profile ?? "strict");
  } catch (err) {
    if (err instanceof CaseError) return { error: err.message };
    throw err;
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (line.trim() !== "") process.stdout.write(JSON.stringify(answer(line)) + "\n");
});
