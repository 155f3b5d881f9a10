// `pnpm generate:check`: regenerates everything from the spec (ignoring the generators' stamps) and fails when
// the committed generated files differ — a hand edit, or a spec change committed without its regenerated output.
import { execFileSync } from "node:child_process";
import { repoRoot } from "./lib/generated.mjs";

const GENERATED = [
  "spec/generated",
  "packages/types/src/generated",
  "packages/server-stubs/src/generated",
  "packages/mocks/src/generated",
];

execFileSync(process.execPath, ["scripts/generate.mjs"], {
  env: { ...process.env, TOOLPLANE_GENERATE_FORCE: "1" },
  cwd: repoRoot,
  stdio: "inherit",
});
const drift = execFileSync("git", ["status", "--porcelain", "--untracked-files=all", "--", ...GENERATED], {
  cwd: repoRoot,
  encoding: "utf8",
});
if (drift.trim()) {
  console.error(`\nGenerated files differ from what the spec produces:\n${drift}`);
  console.error("Run `pnpm generate` and commit the result together with the spec change.");
  process.exit(1);
}
console.log("generate:check: generated files match the spec.");
