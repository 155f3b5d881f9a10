// What the vitest configs of packages that import @toolplane/client or @toolplane/types at run time share: resolve
// those publishable packages to their TypeScript sources through their `@toolplane/source` export condition, as
// tsc does (tsconfig.base.json `customConditions`), so tests never need a build first and always see the current
// source. Vite's own defaults follow it, because setting `conditions` replaces them. (Plain JavaScript with a
// declaration file beside it: a .ts file here would sit outside every package's tsc project.)
const conditions = ["@toolplane/source", "module", "node", "development|production"];

// Vitest hands the SSR conditions to its workers as Node's `--conditions`, and there `module` makes Node's own
// require() pick bundler-only builds (prom-client's require("@opentelemetry/api") got one with extensionless
// imports): tests that run the server resolve as the server runs, without it.
export const workspaceSources = {
  resolve: { conditions },
  ssr: { resolve: { conditions: conditions.filter((condition) => condition !== "module") } },
};
