// Step 1 of `pnpm generate`: lint the hand-written spec and bundle it into one JSON document that every
// later step (types, server stubs, hey-api, the server's validator, /openapi.json and /docs) reads.
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundledSpecPath, repoRoot, run, writeIfChanged } from "./lib/generated.mjs";

const config = ["--config", join(repoRoot, "spec/redocly.yaml")];
const root = join(repoRoot, "spec/openapi.yaml");

console.log("spec: redocly lint");
run("redocly", ["lint", root, ...config, "--max-problems", "50"]);

console.log("spec: redocly bundle");
const tmp = join(tmpdir(), `toolplane-bundle-${process.pid}.json`);
run("redocly", ["bundle", root, ...config, "-o", tmp], { stdio: ["ignore", "ignore", "inherit"] });
const bundled = JSON.parse(readFileSync(tmp, "utf8"));
rmSync(tmp);
const withProvenance = {
  "x-generated": "Bundled by @redocly/cli from spec/openapi.yaml. Do not edit. Regenerate with: pnpm generate",
  ...bundled,
};
writeIfChanged(bundledSpecPath, `${JSON.stringify(withProvenance, null, 2)}\n`);
