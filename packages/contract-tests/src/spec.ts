import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { operations } from "@toolplane/types";

/** Every operationId of the spec, as the generated types know them. */
export type OperationId = keyof operations & string;
export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

/** What the runner needs to know of one operation, read from the bundled spec. */
export interface SpecOperation {
  operationId: OperationId;
  method: HttpMethod;
  /** The path template, e.g. `/provider-groups/{provider_group_id}`. */
  path: string;
  tag: string;
  /** Every documented response status, ascending. */
  documented: number[];
  /** The documented 2xx status. */
  successStatus: number;
  /** Path parameter name → the parameter's `example` (an id with the right prefix). */
  pathExamples: Record<string, string>;
  queryParameters: string[];
  hasBody: boolean;
  /** The request body schema's `example` (it validates, so a not-implemented operation gets past validation). */
  bodyExample: unknown;
}

export interface SpecDocument {
  paths: Record<string, Record<string, unknown>>;
  tags?: { name: string }[];
  components?: Record<string, Record<string, unknown>>;
}

const METHODS: HttpMethod[] = ["get", "post", "put", "patch", "delete"];

/** The bundled spec every generator, the server and Prism read (`spec/generated/openapi.json`). */
export const bundledSpecPath: string = createRequire(import.meta.url).resolve("@toolplane/spec/openapi.json");

export function readSpec(path = bundledSpecPath): SpecDocument {
  return JSON.parse(readFileSync(path, "utf8")) as SpecDocument;
}

interface RawParameter {
  name: string;
  in: string;
  example?: unknown;
  $ref?: string;
}
interface RawOperation {
  operationId: string;
  tags?: string[];
  parameters?: RawParameter[];
  requestBody?: { $ref?: string; content?: Record<string, { schema?: { $ref?: string; example?: unknown } }> };
  responses: Record<string, unknown>;
}

/** Follows a local `#/components/...` reference. */
export function resolveRef<T>(spec: SpecDocument, value: T | { $ref: string }): T {
  let current: unknown = value;
  for (let hops = 0; hops < 20; hops++) {
    const ref = (current as { $ref?: unknown } | null)?.$ref;
    if (typeof ref !== "string") return current as T;
    if (!ref.startsWith("#/")) throw new Error(`Only local references are supported, got ${ref}`);
    current = ref
      .slice(2)
      .split("/")
      .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], spec);
    if (current === undefined) throw new Error(`Unresolvable reference ${ref}`);
  }
  throw new Error("Reference chain too long");
}

/** Every operation of the spec, in document order (tags in the order `tags` declares them). */
export function listOperations(spec: SpecDocument): SpecOperation[] {
  const result: SpecOperation[] = [];
  for (const [path, rawItem] of Object.entries(spec.paths)) {
    const item = rawItem as { parameters?: RawParameter[] } & Record<string, unknown>;
    for (const method of METHODS) {
      const op = item[method] as RawOperation | undefined;
      if (!op) continue;
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) =>
        resolveRef<RawParameter>(spec, p),
      );
      const pathExamples: Record<string, string> = {};
      for (const p of parameters.filter((x) => x.in === "path")) {
        pathExamples[p.name] = typeof p.example === "string" ? p.example : `${p.name.replace(/_id$/, "")}_example`;
      }
      const documented = Object.keys(op.responses)
        .map(Number)
        .filter(Number.isInteger)
        .sort((a, b) => a - b);
      const successStatus = documented.find((s) => s >= 200 && s < 300);
      if (successStatus === undefined) throw new Error(`${op.operationId} documents no 2xx response`);
      const body = op.requestBody ? resolveRef(spec, op.requestBody) : undefined;
      const schema = body?.content?.["application/json"]?.schema;
      result.push({
        operationId: op.operationId as OperationId,
        method,
        path,
        tag: op.tags?.[0] ?? "(untagged)",
        documented,
        successStatus,
        pathExamples,
        queryParameters: parameters.filter((p) => p.in === "query").map((p) => p.name),
        hasBody: body !== undefined,
        bodyExample: schema ? resolveRef<{ example?: unknown }>(spec, schema).example : undefined,
      });
    }
  }
  const tagOrder = (spec.tags ?? []).map((t) => t.name);
  const rank = (tag: string) => {
    const i = tagOrder.indexOf(tag);
    return i === -1 ? tagOrder.length : i;
  };
  return result
    .map((op, index) => ({ op, index }))
    .sort((a, b) => rank(a.op.tag) - rank(b.op.tag) || a.index - b.index)
    .map(({ op }) => op);
}

/** Fills a path template: `/portals/{portal_id}` + `{portal_id: "ptl_1"}` → `/portals/ptl_1`. */
export function fillPath(template: string, params: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`Missing path parameter ${name} for ${template}`);
    return encodeURIComponent(value);
  });
}

/** Finds the operation a concrete request is for; literal segments win over parameters (`/imports/schema`). */
export function createOperationMatcher(operations: SpecOperation[]) {
  const compiled = operations.map((op) => {
    const segments = op.path.split("/");
    const literals = segments.filter((s) => !s.startsWith("{")).length;
    const pattern = new RegExp(
      `^${segments.map((s) => (s.startsWith("{") ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")}/?$`,
    );
    return { op, pattern, literals };
  });
  compiled.sort((a, b) => b.literals - a.literals);
  return (method: string, pathname: string): SpecOperation | undefined =>
    compiled.find((c) => c.op.method === method.toLowerCase() && c.pattern.test(pathname))?.op;
}

/** An id with the parameter's prefix that no row has: `pgr_00000000000000000000000000`. */
export function unknownIdLike(example: string): string {
  const i = example.lastIndexOf("_");
  return `${i === -1 ? "unknown" : example.slice(0, i)}_${"0".repeat(26)}`;
}
