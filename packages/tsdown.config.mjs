// The build of the two publishable packages (@toolplane/types, @toolplane/client), run from each package's
// directory by its `build` script: ESM and CJS side by side, each with its own declarations (.d.ts / .d.cts), so
// `import` and `require` both get types that match the module format they load (attw's "masquerading" checks).
import { defineConfig } from "tsdown";

export default defineConfig({
  // Paths are the package's own: its build script runs tsdown in the package directory.
  cwd: process.cwd(),
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  // The repo-wide tsconfig drops comments from the declarations it emits for `tsc -b` (tsconfig.base.json); a
  // published package keeps them: they are the documentation an editor shows.
  dts: { compilerOptions: { removeComments: false } },
  // Browsers, Deno and bundlers consume the client too: no Node built-ins, no Node shims.
  platform: "neutral",
  target: "es2022",
  copy: ["../../LICENSE"],
});
