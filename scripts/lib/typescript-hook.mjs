// A module resolution hook for the generators (registered by requireTypeScriptFromEsm() in generated.mjs): the
// `import ts from "typescript"` of openapi-typescript and hey-api resolves to a module whose default export is
// `require("typescript")`, resolved from the importing file as the import itself would be. Node imports a
// CommonJS file into ESM by first scanning its source for named exports; for typescript.js (9 MB) that scan
// costs about 0.25 s of CPU in each generator, and both only use the default export.
export async function resolve(specifier, context, nextResolve) {
  if (specifier !== "typescript" || !context.parentURL?.startsWith("file:")) return nextResolve(specifier, context);
  const source = [
    'import { createRequire } from "node:module";',
    `export default createRequire(${JSON.stringify(context.parentURL)})("typescript");`,
  ].join("\n");
  return { url: `data:text/javascript,${encodeURIComponent(source)}`, format: "module", shortCircuit: true };
}
