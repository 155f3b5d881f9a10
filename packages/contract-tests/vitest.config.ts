import { defineConfig, mergeConfig } from "vitest/config";
import { workspaceSources } from "../../vitest.shared.mjs";

export default mergeConfig(workspaceSources, defineConfig({}));
