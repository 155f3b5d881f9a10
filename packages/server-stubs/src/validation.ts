import { Ajv2020, type ErrorObject, type KeywordDefinition, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { ApiError, type ErrorDetail } from "./errors.ts";
import type { OperationDescriptor } from "./handler.ts";
import type { OpenApiDocument, OpenApiOperation, OpenApiParameter } from "./openapi.ts";
import { CREDENTIALS_GO_ELSEWHERE, credentialsInUrl } from "./url-credentials.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const DOC_ID = "toolplane:openapi";

export interface OperationValidator {
  hasBody: boolean;
  bodyRequired: boolean;
  /** Parses the raw query string, normalising every Union form (`x=a&x=b`, `x[]=a`, `x[0]=a`). */
  query(rawQuery: string): Record<string, unknown>;
  path(params: Record<string, string>): Record<string, unknown>;
  body(body: unknown): unknown;
  /** Compiles the three validators now (they are otherwise compiled on first use); throws if the spec cannot. */
  compile(): void;
}

/**
 * Builds a JSON Schema 2020-12 validator for the path, query and body of every operation, straight from the
 * bundled spec (so it cannot drift from it), each compiled once on first use. Query and path values are coerced
 * from strings; bodies are not.
 */
export function compileValidators(
  spec: OpenApiDocument,
  operations: readonly OperationDescriptor[],
): Map<string, OperationValidator> {
  const schemasByOperation: Record<string, Record<string, unknown>> = {};
  const shapes = new Map<
    string,
    { arrays: Set<string>; names: Set<string>; hasBody: boolean; bodyRequired: boolean }
  >();

  for (const op of operations) {
    const item = spec.paths[op.path];
    const operation = item?.[op.method] as OpenApiOperation | undefined;
    if (!item || !operation) throw new Error(`${op.operationId} is not in the spec`);
    const params = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map((p) => resolveParameter(spec, p));
    const query = params.filter((p) => p.in === "query");
    const path = params.filter((p) => p.in === "path");
    const body = operation.requestBody?.content?.["application/json"]?.schema;
    schemasByOperation[op.operationId] = {
      query: objectSchema(query),
      path: objectSchema(path),
      body: body ?? {},
    };
    shapes.set(op.operationId, {
      arrays: new Set(query.filter((p) => p.schema?.type === "array").map((p) => p.name)),
      names: new Set(query.map((p) => p.name)),
      hasBody: body !== undefined,
      bodyRequired: operation.requestBody?.required === true,
    });
  }

  const document = { $id: DOC_ID, components: spec.components ?? {}, $defs: schemasByOperation };
  // The document is not checked against the JSON Schema meta-schema here: compiling the meta-schema was 8 % of the
  // server's start, and `pnpm generate` lints the spec (test/validation.test.ts checks the bundle with it).
  const options = { strict: false, allErrors: true, useDefaults: true, validateSchema: false } as const;
  const strictAjv = new Ajv2020(options);
  const coercingAjv = new Ajv2020({ ...options, coerceTypes: "array" });
  for (const ajv of [strictAjv, coercingAjv]) {
    addFormats(ajv);
    ajv.addKeyword(maxBytesKeyword);
    ajv.addKeyword(noCredentialsKeyword);
    ajv.addSchema(document);
  }
  const compile = (ajv: Ajv2020, operationId: string, part: string): ValidateFunction => {
    const fn = ajv.getSchema(`${DOC_ID}#/$defs/${operationId}/${part}`);
    if (!fn) throw new Error(`cannot compile the ${part} schema of ${operationId}`);
    return fn;
  };

  const validators = new Map<string, OperationValidator>();
  for (const op of operations) {
    const shape = shapes.get(op.operationId);
    if (!shape) continue;
    // Compiled on first use and kept: compiling every operation up front was a quarter of the server's start.
    const lazy = (ajv: Ajv2020, part: string) => {
      let fn: ValidateFunction | undefined;
      return () => (fn ??= compile(ajv, op.operationId, part));
    };
    const validateQuery = lazy(coercingAjv, "query");
    const validatePath = lazy(coercingAjv, "path");
    const validateBody = lazy(strictAjv, "body");
    validators.set(op.operationId, {
      hasBody: shape.hasBody,
      bodyRequired: shape.bodyRequired,
      query: (raw) => check(validateQuery(), parseQuery(raw, shape.arrays, shape.names), "query"),
      path: (params) => check(validatePath(), { ...params }, "path"),
      body: (body) => check(validateBody(), body, "body"),
      compile: () => {
        validateQuery();
        validatePath();
        validateBody();
      },
    });
  }
  return validators;
}

/**
 * `x-max-bytes: N` in the spec: the value serialised as JSON is at most N UTF-8 bytes (for example metadata's
 * 16 KiB). JSON Schema has no keyword for a size that spans a whole object, so the spec carries an extension.
 */
const maxBytesKeyword: KeywordDefinition = {
  keyword: "x-max-bytes",
  schemaType: "number",
  errors: true,
  validate: function maxBytes(limit: number, data: unknown) {
    if (Buffer.byteLength(JSON.stringify(data) ?? "") <= limit) return true;
    (maxBytes as { errors?: Partial<ErrorObject>[] }).errors = [
      { keyword: "x-max-bytes", message: `must serialise to at most ${limit} bytes of JSON`, params: { limit } },
    ];
    return false;
  },
};

/**
 * `x-no-credentials: true` in the spec: a URL the server stores and shows (an upstream's `remote_url`, a
 * `redirect_url`) must not carry credentials, which would sit in plain text in the database, in responses and in
 * logs. The message says where they go instead.
 */
const noCredentialsKeyword: KeywordDefinition = {
  keyword: "x-no-credentials",
  schemaType: "boolean",
  type: "string",
  errors: true,
  validate: function noCredentials(enabled: boolean, data: string) {
    const found = enabled ? credentialsInUrl(data) : undefined;
    if (found === undefined) return true;
    const what = found === "userinfo" ? "a user name or password (user:password@)" : `the query parameter ${found}`;
    (noCredentials as { errors?: Partial<ErrorObject>[] }).errors = [
      {
        keyword: "x-no-credentials",
        message: `must not carry credentials, found ${what}: ${CREDENTIALS_GO_ELSEWHERE}`,
        params: { found },
      },
    ];
    return false;
  },
};

function resolveParameter(spec: OpenApiDocument, p: OpenApiParameter | { $ref: string }): OpenApiParameter {
  if (!("$ref" in p)) return p;
  const name = p.$ref.replace("#/components/parameters/", "");
  const resolved = spec.components?.parameters?.[name];
  if (!resolved) throw new Error(`unresolved parameter ${p.$ref}`);
  return resolved;
}

function objectSchema(params: OpenApiParameter[]) {
  return {
    type: "object",
    properties: Object.fromEntries(params.map((p) => [p.name, p.schema ?? {}])),
    required: params.filter((p) => p.required).map((p) => p.name),
    additionalProperties: false,
  };
}

const UNION_SUFFIX = /^(.+?)\[(\d*)\]$/;

function parseQuery(raw: string, arrays: Set<string>, names: Set<string>): Record<string, unknown> {
  const values = new Map<string, string[]>();
  const indexed = new Map<string, Map<number, string>>();
  for (const [rawKey, value] of new URLSearchParams(raw)) {
    const match = UNION_SUFFIX.exec(rawKey);
    // `x[]` and `x[0]` are Union forms only for declared names; anything else stays as sent (and is rejected).
    const key = match?.[1] !== undefined && names.has(match[1]) ? match[1] : rawKey;
    if (match?.[2] && key !== rawKey) {
      const slots = indexed.get(key) ?? new Map<number, string>();
      slots.set(Number(match[2]), value);
      indexed.set(key, slots);
    } else {
      values.set(key, [...(values.get(key) ?? []), value]);
    }
  }
  for (const [key, slots] of indexed) {
    const ordered = [...slots.entries()].sort(([a], [b]) => a - b).map(([, v]) => v);
    values.set(key, [...(values.get(key) ?? []), ...ordered]);
  }
  const out: Record<string, unknown> = {};
  for (const [key, list] of values) {
    if (arrays.has(key)) out[key] = list;
    else if (list.length > 1 && names.has(key)) {
      throw invalid("query", [{ code: "multiple_values", message: "must be given at most once", path: [key] }]);
    } else out[key] = list[0];
  }
  return out;
}

function check(validate: ValidateFunction, data: unknown, entity: "query" | "path" | "body") {
  if (validate(data)) return data as Record<string, unknown>;
  throw invalid(entity, toDetails(validate.errors ?? []));
}

function invalid(entity: "query" | "path" | "body", errors: ErrorDetail[]): ApiError {
  const [first] = errors;
  const where = { query: "Query parameters are", path: "Path parameters are", body: "Request body is" }[entity];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  const message = first ? `${where} invalid: ${describe(first)}${more}.` : `${where} invalid.`;
  return new ApiError("invalid_data", message, { entity, errors });
}

const describe = (d: ErrorDetail) => (d.path.length ? `${d.path.join(".")} ${d.message}` : d.message);

const CODES: Record<string, string> = {
  required: "required",
  additionalProperties: "additional_property",
  type: "type",
  enum: "enum",
  const: "enum",
  format: "format",
  pattern: "pattern",
  oneOf: "one_of",
  anyOf: "any_of",
  "x-max-bytes": "max_bytes",
  "x-no-credentials": "credentials_in_url",
};

/** Ajv errors as documented error details: one per problem, with the path of the offending field. */
export function toDetails(errors: ErrorObject[]): ErrorDetail[] {
  // A failed oneOf reports every branch's errors too; when a branch matched the discriminator, those are the
  // useful ones, so drop the summary line in that case.
  const hasBranchErrors = errors.some((e) => e.keyword !== "oneOf");
  return errors
    .filter((e) => !(e.keyword === "oneOf" && hasBranchErrors))
    .map((e) => {
      const path: (string | number)[] = e.instancePath
        .split("/")
        .slice(1)
        .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
        .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
      let message = e.message ?? "is invalid";
      if (e.keyword === "required") path.push(String(e.params.missingProperty));
      if (e.keyword === "required") message = "is required";
      if (e.keyword === "additionalProperties") {
        path.push(String(e.params.additionalProperty));
        message = "is not a known property";
      }
      if (e.keyword === "enum") message = `must be one of ${(e.params.allowedValues as unknown[]).join(", ")}`;
      if (e.keyword === "const") message = `must be ${JSON.stringify(e.params.allowedValue)}`;
      return { code: CODES[e.keyword] ?? e.keyword.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), message, path };
    });
}
