import { defineConfig, mergeConfig } from "vitest/config";
import { workspaceSources } from "../../vitest.shared.mjs";

export default mergeConfig(
  workspaceSources,
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
