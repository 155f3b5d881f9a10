// Step 1 of `pnpm generate`: lint the hand-written spec and bundle it into one JSON document that every
// later step (types, server stubs, hey-api, the server's validator, /openapi.json and /docs) reads.
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundledSpecPath, repoRoot, runAsync, stamp, writeIfChanged } from "./lib/generated.mjs";

const specDir = join(repoRoot, "spec");
const config = ["--config", join(specDir, "redocly.yaml")];
const root = join(specDir, "openapi.yaml");

const state = stamp("spec");
if (state.fresh) {
  console.log("spec: unchanged since the last lint + bundle");
  process.exit(0);
}

// Lint and bundle are independent reads of the same sources: run them side by side (2 cores), fail if either fails.
console.log("spec: redocly lint + bundle");
const tmp = join(tmpdir(), `toolplane-bundle-${process.pid}.json`);
const [linted, bundledOk] = await Promise.all([
  runAsync("redocly", ["lint", root, ...config, "--max-problems", "50"]),
  runAsync("redocly", ["bundle", root, ...config, "-o", tmp], { quiet: true }),
]);
if (!linted || !bundledOk) {
  rmSync(tmp, { force: true });
  console.error(`\nredocly ${linted ? "bundle" : "lint"} failed (see its output above).`);
  process.exit(1);
}
const bundled = JSON.parse(readFileSync(tmp, "utf8"));
rmSync(tmp);
const withProvenance = {
  "x-generated": "Bundled by @redocly/cli from spec/openapi.yaml. Do not edit. Regenerate with: pnpm generate",
  ...bundled,
};
writeIfChanged(bundledSpecPath, `${JSON.stringify(withProvenance, null, 2)}\n`);
state.save();
