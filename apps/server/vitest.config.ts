import { defineConfig, mergeConfig } from "vitest/config";
import { workspaceSources } from "../../vitest.shared.mjs";

// Vitest hands the SSR conditions to its workers as Node's `--conditions`, and there `module` makes Node's own
// require() pick bundler-only builds (prom-client's require("@opentelemetry/api") got one with extensionless imports):
// the server's tests resolve as the server runs, without it.
const conditions = (workspaceSources.ssr?.resolve?.conditions ?? []).filter(
  (condition: string) => condition !== "module",
);

export default mergeConfig(
  { ...workspaceSources, ssr: { resolve: { conditions } } },
  defineConfig({
    test: {
      include: ["test/**/*.test.ts", "src/**/*.test.ts"],
      globalSetup: ["test/support/global-setup.ts"],
      testTimeout: 30_000,
      hookTimeout: 60_000,
      // Each file opens its own database; two workers match the two cores CI has.
      maxWorkers: 2,
    },
  }),
);
