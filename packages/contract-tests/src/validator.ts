import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { SpecDocument, SpecOperation } from "./spec.ts";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const DOC_ID = "toolplane:contract";

/**
 * Validates response bodies against the bundled spec with JSON Schema 2020-12 (Ajv), in-process: a second
 * opinion next to Prism, whose checks are draft-07 and pass everything when a schema is beyond it, and the
 * only judge for the answers Prism cannot validate (it replaces every upstream 501 with a mock).
 */
export class ResponseValidator {
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction | null>();
  private readonly byId: Map<string, SpecOperation>;

  constructor(
    private readonly spec: SpecDocument,
    operations: SpecOperation[],
  ) {
    this.byId = new Map(operations.map((op) => [op.operationId, op]));
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: DOC_ID, components: spec.components ?? {}, paths: spec.paths });
  }

  /** Problems of `body` as the answer `status` to the operation; an undocumented status is a problem too. */
  validate(operationId: string, status: number, body: unknown): string[] {
    const op = this.byId.get(operationId);
    if (!op) return [`unknown operation ${operationId}`];
    if (!op.documented.includes(status)) return [`status ${status} is not documented for ${operationId}`];
    const validate = this.compile(op, status);
    if (!validate || validate(body)) return [];
    return (validate.errors ?? []).slice(0, 5).map(describe);
  }

  private compile(op: SpecOperation, status: number): ValidateFunction | null {
    const key = `${op.operationId} ${status}`;
    const cached = this.compiled.get(key);
    if (cached !== undefined) return cached;
    const pointer = ["paths", op.path, op.method, "responses", String(status)];
    let response = pointer.reduce<unknown>((node, k) => (node as Record<string, unknown> | undefined)?.[k], this.spec);
    const ref = (response as { $ref?: string } | undefined)?.$ref;
    if (ref) {
      response = ref
        .slice(2)
        .split("/")
        .reduce<unknown>((node, k) => (node as Record<string, unknown> | undefined)?.[k], this.spec);
    }
    const hasSchema = (response as { content?: Record<string, { schema?: unknown }> } | undefined)?.content?.[
      "application/json"
    ]?.schema;
    let fn: ValidateFunction | null = null;
    if (hasSchema) {
      const responsePointer = ref
        ? `${ref.slice(1)}/content/application~1json/schema`
        : `/${pointer.map(escapePointer).join("/")}/content/application~1json/schema`;
      fn = this.ajv.getSchema(`${DOC_ID}#${responsePointer}`) ?? null;
      if (!fn) throw new Error(`cannot compile the ${status} response schema of ${op.operationId}`);
    }
    this.compiled.set(key, fn);
    return fn;
  }
}

function escapePointer(segment: string): string {
  return encodeURIComponent(segment.replace(/~/g, "~0").replace(/\//g, "~1"));
}

function describe(error: ErrorObject): string {
  const where = error.instancePath || "/";
  const extra =
    error.keyword === "additionalProperties"
      ? ` (${String((error.params as { additionalProperty?: unknown }).additionalProperty)})`
      : error.keyword === "enum"
        ? ` (${JSON.stringify((error.params as { allowedValues?: unknown }).allowedValues)})`
        : "";
  return `${where} ${error.message ?? error.keyword}${extra}`;
}
