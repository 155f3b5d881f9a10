// `pnpm typecheck`: regenerate whatever is stale, then one `tsc -b` over every package. The packages are
// TypeScript project references (composite, declarations into each package's gitignored .tsbuild/), so tsc
// re-checks only projects whose inputs changed and skips dependents whose upstream declarations did not change.
// One process instead of one turbo task per package: each task would pay pnpm + tsc start-up and re-read its
// references' state, about 1 s of CPU apiece.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { allGeneratedFresh, repoRoot } from "./lib/generated.mjs";

function run(command, args) {
  try {
    execFileSync(command, args, { cwd: repoRoot, stdio: "inherit" });
  } catch (err) {
    process.exit(typeof err.status === "number" ? err.status : 1);
  }
}

// Right after `pnpm generate` every stamp is fresh, and checking that costs a few hashes.
if (!allGeneratedFresh()) run(process.execPath, [join(repoRoot, "scripts/generate.mjs")]);
run(join(repoRoot, "node_modules/.bin/tsc"), ["-b"]);
