// Builds the server and its CLI into one self-contained directory, dist/ (or `--outdir DIR`), that runs with
// `node main.mjs` and `node cli.mjs` from any path, on a machine with Node and nothing else: no checkout, no
// node_modules, no tsx. Copy the directory anywhere (or into a container image) and start it there.
//
//   main.mjs, cli.mjs, chunk-*.mjs  our sources and their dependencies in plain JavaScript (esbuild): under tsx,
//                                   Node loaded ~1,000 modules through a TypeScript loader thread on every start
//                                   (figure 7 of BENCHMARKS.md)
//   migrations/, catalog/           files our sources find relative to themselves (`new URL("…", import.meta.url)`):
//                                   each one referenced is copied here and its URL rewritten to point at the copy
//   node_modules/                   what is loaded by path at run time rather than imported: PGlite (it loads its
//                                   WebAssembly and data files next to its own module), the bundled spec, Redoc's
//                                   page script, and server-everything (the built-in catalog's stdio provider),
//                                   bundled into one file
import { cpSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { readFile, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";

const serverDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = join(serverDir, "../..");
// `--entry NAME=PATH` (repeatable) bundles one more entry point beside main and cli, as NAME.mjs: the benchmark's
// target process, so that it measures the server as `pnpm start` runs it.
const { values } = parseArgs({
  options: { outdir: { type: "string" }, entry: { type: "string", multiple: true, default: [] } },
});
const extraEntries = Object.fromEntries(
  values.entry.map((spec) => {
    const [name, path] = spec.split("=", 2);
    if (!name || !path) throw new Error(`--entry wants NAME=PATH, got ${spec}`);
    return [name, resolve(path)];
  }),
);
const target = resolve(values.outdir ?? join(serverDir, "dist"));
// Built beside the target and renamed into place at the end: a server started from the target (a test, a service)
// while another build runs never sees a half-written directory.
const outdir = `${target}.${process.pid}.tmp`;
const requireFromServer = createRequire(join(serverDir, "package.json"));

// Bundled CommonJS dependencies call require() for Node's built-ins. (pino's __dirname is only read for worker
// transports, which the server does not use.)
const requireShim =
  'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);';

/** Files our sources reference by a URL relative to themselves: where they are, by the name they get in outdir. */
const assets = new Map();
const ownAssetUrls = {
  name: "own-asset-urls",
  setup(b) {
    const ours = new RegExp(`^${repoRoot.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/(?!.*/node_modules/).*\\.ts$`);
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!ours.test(args.path)) return undefined;
      // The CLI's source starts with a tsx hashbang; its bundle is plain JavaScript for node.
      const text = (await readFile(args.path, "utf8")).replace(/^#!.*/, "#!/usr/bin/env node");
      const contents = text.replace(/new URL\("(\.{1,2}\/[^"]*)", import\.meta\.url\)/g, (_match, ref) => {
        const source = resolve(dirname(args.path), ref);
        const name = basename(source);
        const known = assets.get(name);
        if (known && known !== source) throw new Error(`two assets named ${name}: ${known} and ${source}`);
        assets.set(name, source);
        return `new URL(${JSON.stringify(`./${name}${ref.endsWith("/") ? "/" : ""}`)}, import.meta.url)`;
      });
      return { contents, loader: "ts" };
    });
  },
};

/** Where the server's dependency is installed (not every package exports its package.json to resolve). */
const packageDir = (name) => realpathSync(join(serverDir, "node_modules", name));

/**
 * Copies the named files of an installed package into outdir/node_modules, with its package.json; not source maps,
 * nor PGlite's optional extensions (loaded only when asked for; the server asks for none).
 */
function copyPackage(name, files) {
  const from = packageDir(name);
  const to = join(outdir, "node_modules", name);
  for (const file of ["package.json", ...files]) {
    cpSync(join(from, file), join(to, file), {
      recursive: true,
      filter: (path) => !/\.(map|tar\.gz)$/.test(path),
    });
  }
}

const started = performance.now();
try {
  await build({
    entryPoints: { main: join(serverDir, "src/main.ts"), cli: join(serverDir, "src/cli.ts"), ...extraEntries },
    outdir,
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunk-[hash]",
    splitting: true,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    external: ["@electric-sql/pglite", "pg-native"],
    plugins: [ownAssetUrls],
    banner: { js: requireShim },
    sourcemap: "linked",
    legalComments: "linked",
    logLevel: "warning",
  });
  for (const [name, source] of assets)
    cpSync(source, join(outdir, name), { recursive: statSync(source).isDirectory() });

  const pglite = packageDir("@electric-sql/pglite");
  copyPackage(
    "@electric-sql/pglite",
    ["dist", "LICENSE"].filter((f) => statSync(join(pglite, f), { throwIfNoEntry: false })),
  );
  copyPackage("redoc", ["bundles/redoc.standalone.js"]);
  const spec = requireFromServer.resolve("@toolplane/spec/openapi.json");
  copyPackage("@toolplane/spec", [relative(packageDir("@toolplane/spec"), spec)]);

  // server-everything runs as a child process (`node {package:…}/dist/index.js stdio`): one bundled file in the
  // place the catalog names, with the docs it reads from `../docs`.
  const everything = "@modelcontextprotocol/server-everything";
  copyPackage(everything, []);
  cpSync(join(packageDir(everything), "dist/docs"), join(outdir, "node_modules", everything, "docs"), {
    recursive: true,
  });
  await build({
    entryPoints: [join(packageDir(everything), "dist/index.js")],
    outfile: join(outdir, "node_modules", everything, "dist/index.js"),
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    banner: { js: requireShim },
    legalComments: "inline",
    logLevel: "warning",
  });

  cpSync(join(repoRoot, "LICENSE"), join(outdir, "LICENSE"));
  writeFileSync(
    join(outdir, "README.md"),
    "Toolplane server, built by `pnpm build`. Start: `node main.mjs`. CLI: `node cli.mjs` (prints its usage).\n" +
      "Settings are environment variables (see the repository's README, Configuration and Deploy).\n",
  );
} catch (err) {
  await rm(outdir, { recursive: true, force: true });
  throw err;
}
await rm(target, { recursive: true, force: true });
await rename(outdir, target);
const shown = relative(process.cwd(), target);
console.log(
  `server: built ${shown.startsWith("..") ? target : shown} in ${Math.round(performance.now() - started)} ms`,
);
