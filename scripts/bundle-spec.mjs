// Step 1 of turbo's generate pipeline (@toolplane/spec#generate): lint the hand-written spec and bundle it into
// one JSON document. `pnpm generate` itself runs scripts/generate.mjs, which does the same and starts the later
// steps as soon as the bundle is written.
import { stampOrExit } from "./lib/generated.mjs";
import { bundleSpec, lintSpec, writeBundle } from "./lib/spec.mjs";

const state = stampOrExit("spec", "the last lint + bundle");

// Lint and bundle are independent reads of the same sources: run them side by side (2 cores), fail if either fails.
console.log("spec: redocly lint + bundle");
const [linted, bundle] = await Promise.all([lintSpec(), bundleSpec()]);
if (!linted || bundle === null) {
  console.error(`\nredocly ${linted ? "bundle" : "lint"} failed (see its output above).`);
  process.exit(1);
}
writeBundle(bundle);
state.save();
