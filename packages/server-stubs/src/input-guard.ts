import { ApiError, type ErrorDetail } from "./errors.ts";
import type { OpenApiDocument } from "./openapi.ts";

/**
 * Deeper JSON is refused before schema validation: Ajv validates recursively, and `metadata` nested a few thousand
 * levels deep overflowed the stack (a 500). No field of the API needs more than a handful of levels; 64 leaves
 * room for free-form JSON (tool arguments, config data).
 */
export const MAX_JSON_DEPTH = 64;

/** An unpaired UTF-16 surrogate: not Unicode text, so PostgreSQL cannot store it (jsonb refuses `\ud800`). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export interface InputGuard {
  /**
   * Refuses input no handler can process as `invalid_data` naming the field: nesting beyond MAX_JSON_DEPTH, lone
   * surrogates anywhere, and NUL (U+0000) outside write-only fields (those are stored encrypted, where NUL is just
   * a byte; everywhere else PostgreSQL's text and jsonb refuse it).
   */
  check(value: unknown, entity: "body" | "query" | "path"): void;
}

/** Builds the guard for a spec: the names of its write-only properties are where NUL may appear. */
export function createInputGuard(spec: OpenApiDocument): InputGuard {
  const writeOnly = writeOnlyPropertyNames(spec);
  return { check: (value, entity) => refuse(findProblem(value, writeOnly), entity) };
}

/**
 * The nesting bound alone, for JSON whose text is taken as sent (MCP messages: what PostgreSQL cannot store is
 * recorded with U+FFFD). The MCP SDK validates messages recursively too: 5,000 levels were a 500.
 */
export function checkJsonDepth(value: unknown): void {
  refuse(findProblem(value, null), "body");
}

function refuse(problem: ErrorDetail | undefined, entity: "body" | "query" | "path"): void {
  if (!problem) return;
  const where = problem.path.length ? problem.path.join(".") : entity;
  throw new ApiError("invalid_data", `${ENTITY_LABEL[entity]} invalid: ${where} ${problem.message}.`, {
    entity,
    errors: [problem],
    ...(problem.code === "max_depth" ? {} : { hint: "Send well-formed Unicode text without U+0000." }),
  });
}

const ENTITY_LABEL = { body: "Request body is", query: "Query parameters are", path: "Path parameters are" } as const;

/**
 * Iterative (an explicit stack), so the check itself cannot overflow on the input it exists to refuse. Without
 * `writeOnly` (null) only the depth is checked.
 */
function findProblem(root: unknown, writeOnly: ReadonlySet<string> | null): ErrorDetail | undefined {
  const stack: { value: unknown; path: (string | number)[]; depth: number; secret: boolean }[] = [
    { value: root, path: [], depth: 0, secret: false },
  ];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const { value, path, depth, secret } = item;
    if (typeof value === "string") {
      const problem = writeOnly && stringProblem(value, secret);
      if (problem) return { code: problem.code, message: problem.message, path };
      continue;
    }
    if (value === null || typeof value !== "object") continue;
    if (depth >= MAX_JSON_DEPTH) {
      return { code: "max_depth", message: `is nested more than ${MAX_JSON_DEPTH} levels deep`, path };
    }
    if (Array.isArray(value)) {
      value.forEach((v, i) => {
        stack.push({ value: v, path: [...path, i], depth: depth + 1, secret });
      });
      continue;
    }
    for (const [key, v] of Object.entries(value)) {
      const problem = writeOnly && stringProblem(key, false);
      if (problem) return { code: problem.code, message: `has a key that ${problem.message}`, path };
      stack.push({ value: v, path: [...path, key], depth: depth + 1, secret: secret || Boolean(writeOnly?.has(key)) });
    }
  }
  return undefined;
}

function stringProblem(text: string, secret: boolean): { code: string; message: string } | undefined {
  if (LONE_SURROGATE.test(text)) {
    return { code: "invalid_unicode", message: "contains an unpaired UTF-16 surrogate, which is not Unicode text" };
  }
  if (!secret && text.includes("\u0000")) {
    return { code: "nul_character", message: "contains the NUL character (U+0000), which cannot be stored" };
  }
  return undefined;
}

/** Every property name the spec's schemas declare `writeOnly: true` (secrets, stored encrypted). */
function writeOnlyPropertyNames(spec: OpenApiDocument): Set<string> {
  const names = new Set<string>();
  const stack: unknown[] = [spec.components?.schemas ?? {}];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (node === null || typeof node !== "object") continue;
    const properties = (node as { properties?: unknown }).properties;
    if (properties && typeof properties === "object") {
      for (const [name, schema] of Object.entries(properties)) {
        if ((schema as { writeOnly?: unknown } | null)?.writeOnly === true) names.add(name);
      }
    }
    stack.push(...Object.values(node));
  }
  return names;
}
