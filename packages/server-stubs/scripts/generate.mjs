// Step 4 of `pnpm generate`: the bundled spec → one handler interface per tag, keyed by operationId, and the
// operation table the router binds. Adding an operation to the spec adds a required member to an interface,
// so the server stops type-checking until it has a handler for it.
import { join } from "node:path";
import { header, readBundledSpec, repoRoot, stampOrExit, writeIfChanged } from "../../../scripts/lib/generated.mjs";

const target = join(repoRoot, "packages/server-stubs/src/generated/operations.gen.ts");
const state = stampOrExit("server-stubs");

const spec = readBundledSpec();
const methods = ["get", "post", "put", "patch", "delete"];

const pascal = (tag) =>
  tag
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join("");
const camel = (tag) => {
  const p = pascal(tag);
  return p[0].toLowerCase() + p.slice(1);
};

const operations = [];
for (const [path, item] of Object.entries(spec.paths)) {
  for (const method of methods) {
    const op = item[method];
    if (!op) continue;
    if (op.tags?.length !== 1) throw new Error(`${method.toUpperCase()} ${path}: needs exactly one tag`);
    const successStatus = Object.keys(op.responses)
      .map(Number)
      .find((s) => s >= 200 && s < 300);
    if (!successStatus) throw new Error(`${op.operationId}: no 2xx response`);
    operations.push({
      operationId: op.operationId,
      method,
      path,
      tag: op.tags[0],
      group: camel(op.tags[0]),
      successStatus,
      summary: op.summary,
    });
  }
}

const tags = [...new Set(operations.map((o) => o.tag))];
const lines = [
  header("packages/server-stubs/scripts/generate.mjs"),
  "",
  'import type { Handler, OperationDescriptor } from "../handler.ts";',
  "",
  "/** Every operation of the spec: what the router binds, in spec order. */",
  "export const operationTable = [",
  ...operations.map(
    (o) =>
      `  { operationId: "${o.operationId}", method: "${o.method}", path: "${o.path}", tag: "${o.tag}", group: "${o.group}", successStatus: ${o.successStatus} },`,
  ),
  "] as const satisfies readonly OperationDescriptor[];",
  "",
];
for (const tag of tags) {
  lines.push(`/** Handlers of the "${tag}" operations. */`);
  lines.push(`export interface ${pascal(tag)}Handlers<Ctx> {`);
  for (const o of operations.filter((x) => x.tag === tag)) {
    lines.push(`  /** ${o.method.toUpperCase()} ${o.path} — ${o.summary} */`);
    lines.push(`  ${o.operationId}: Handler<"${o.operationId}", Ctx>;`);
  }
  lines.push("}", "");
}
lines.push("/** One handler object per tag: what the server must implement. */");
lines.push("export interface Handlers<Ctx> {");
for (const tag of tags) lines.push(`  ${camel(tag)}: ${pascal(tag)}Handlers<Ctx>;`);
lines.push("}", "");

console.log("server-stubs: handler interfaces and operation table");
writeIfChanged(target, lines.join("\n"));
state.save();
