// What the vitest configs of packages that import @toolplane/client or @toolplane/types at run time share: resolve
// those publishable packages to their TypeScript sources through their `@toolplane/source` export condition, as
// tsc does (tsconfig.base.json `customConditions`), so tests never need a build first and always see the current
// source. Vite's own defaults follow it, because setting `conditions` replaces them. (Plain JavaScript with a
// declaration file beside it: a .ts file here would sit outside every package's tsc project.)
const conditions = ["@toolplane/source", "module", "node", "development|production"];

export const workspaceSources = {
  resolve: { conditions },
  ssr: { resolve: { conditions } },
};
