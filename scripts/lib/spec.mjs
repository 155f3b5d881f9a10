// The spec step of `pnpm generate`: lint the hand-written spec and bundle it into spec/generated/openapi.json,
// which every later step (types, server stubs, hey-api, the server's validator, /openapi.json and /docs) reads.
// Shared by scripts/bundle-spec.mjs (turbo's @toolplane/spec#generate) and scripts/generate.mjs.
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundledSpecPath, repoRoot, runNodeAsync, writeIfChanged } from "./generated.mjs";

const redocly = join(repoRoot, "node_modules/@redocly/cli/bin/cli.js");

const specDir = join(repoRoot, "spec");
const config = ["--config", join(specDir, "redocly.yaml")];
const root = join(specDir, "openapi.yaml");

/** `redocly lint` with the rules of spec/redocly.yaml; its report is streamed. Resolves to whether it passed. */
export function lintSpec() {
  return runNodeAsync(redocly, ["lint", root, ...config, "--max-problems", "50"]);
}

/**
 * `redocly bundle` into a scratch file; its output is shown only when it fails. Resolves to the bundle as
 * written to spec/generated/openapi.json (with our provenance first), or null when it failed.
 */
export async function bundleSpec() {
  const tmp = join(tmpdir(), `toolplane-bundle-${process.pid}.json`);
  try {
    if (!(await runNodeAsync(redocly, ["bundle", root, ...config, "-o", tmp], { quiet: true }))) return null;
    const bundled = JSON.parse(readFileSync(tmp, "utf8"));
    const withProvenance = {
      "x-generated": "Bundled by @redocly/cli from spec/openapi.yaml. Do not edit. Regenerate with: pnpm generate",
      ...bundled,
    };
    return `${JSON.stringify(withProvenance, null, 2)}\n`;
  } finally {
    rmSync(tmp, { force: true });
  }
}

export function writeBundle(content) {
  writeIfChanged(bundledSpecPath, content);
}
