// `pnpm generate`: the spec → spec/generated/openapi.json → types, server stubs and mocks, each step skipped when
// its stamp says its inputs and outputs are what it last saw (see stamp() in lib/generated.mjs).
//
// The same steps as turbo's `generate` tasks (which `pnpm lint` and `pnpm test` still run), from one process:
// turbo starts every task through `pnpm run`, about 0.6 s of CPU each here, and starts the generators only once
// the spec task, lint included, has exited. Here they start as soon as the bundle is written, while the lint,
// which only gates, goes on beside them; the command still fails when the lint does, and the spec's stamp is
// then not saved, so the next run lints again.
import { join } from "node:path";
import { generators, repoRoot, runNodeAsync, stamp } from "./lib/generated.mjs";
import { bundleSpec, lintSpec, writeBundle } from "./lib/spec.mjs";

const specState = stamp("spec");
let linted = Promise.resolve(true);
if (specState.fresh) {
  console.log("spec: unchanged since the last lint + bundle");
} else {
  console.log("spec: redocly lint + bundle");
  linted = lintSpec();
  const bundle = await bundleSpec();
  if (bundle === null) {
    await linted;
    console.error("\nredocly bundle failed (see its output above).");
    process.exit(1);
  }
  writeBundle(bundle);
}

// Each reads only the bundle. Their stamps are read here too, so an unchanged one costs no Node start-up.
const downstream = ["mocks", "types", "server-stubs"];
const results = await Promise.all(
  downstream.map((name) => {
    if (stamp(name).fresh) {
      console.log(`${name}: unchanged since the last run`);
      return true;
    }
    const { dir, scripts } = generators[name];
    return runNodeAsync(join(repoRoot, scripts[0]), [], { cwd: join(repoRoot, dir) });
  }),
);

const failed = downstream.filter((_, i) => !results[i]);
if (!(await linted)) failed.unshift("spec (redocly lint)");
else if (!specState.fresh) specState.save();
if (failed.length > 0) {
  console.error(`\npnpm generate failed: ${failed.join(", ")} (see the output above).`);
  process.exit(1);
}
