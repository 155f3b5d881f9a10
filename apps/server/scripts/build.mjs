// Builds the server into one ES module, dist/main.mjs, so production starts run plain JavaScript: under tsx, Node
// loaded ~1,000 modules through a TypeScript loader thread on every start (figure 7 of BENCHMARKS.md).
// Everything is bundled except PGlite (it loads its WebAssembly and data files next to its own module), pg's
// optional native binding and the OpenTelemetry SDK. Our sources locate files relative to themselves (migrations,
// the catalog, packages resolved with createRequire), so their `import.meta.url` is replaced by their own file's
// URL: the bundle then finds those files where they are in the checkout it was built from.
import { readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const serverDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = join(serverDir, "../..");
const outdir = join(serverDir, "dist");

const ownSourceUrls = {
  name: "own-source-urls",
  setup(b) {
    const ours = new RegExp(`^${repoRoot.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/(apps|packages)/[^/]+/src/.*\\.ts$`);
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!ours.test(args.path)) return undefined;
      const text = await readFile(args.path, "utf8");
      return {
        contents: text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)),
        loader: "ts",
      };
    });
  },
};

const started = performance.now();
await rm(outdir, { recursive: true, force: true });
await build({
  entryPoints: [join(serverDir, "src/main.ts")],
  outfile: join(outdir, "main.mjs"),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // The OpenTelemetry SDK is imported only when tracing is configured: left out of the bundle, it costs nothing to
  // parse otherwise.
  external: ["@electric-sql/pglite", "pg-native", "@opentelemetry/sdk-node"],
  plugins: [ownSourceUrls],
  // Bundled CommonJS dependencies call require() for Node's built-ins. (pino's __dirname is only read for worker
  // transports, which the server does not use.)
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
  },
  sourcemap: "linked",
  legalComments: "linked",
  logLevel: "warning",
});
console.log(`server: built dist/main.mjs in ${Math.round(performance.now() - started)} ms`);
