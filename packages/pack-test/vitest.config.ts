import { defineConfig } from "vitest/config";

// Packing builds both packages and npm install may reach the registry for their dependencies.
export default defineConfig({ test: { include: ["test/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 240_000 } });
