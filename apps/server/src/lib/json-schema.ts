import { ApiError, ajvErrorsToDetails } from "@toolplane/server-stubs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { JsonObject } from "../db/schema.ts";

const ajv = new Ajv2020({ allErrors: true, strict: false });
(addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 500;

/** Compiles a JSON Schema 2020-12 once per distinct schema (catalog and custom provider schemas repeat). */
function validatorFor(schema: JsonObject): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = compiled.get(key);
  if (!fn) {
    fn = ajv.compile(schema);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value ?? "");
    compiled.set(key, fn);
  }
  return fn;
}

/**
 * Validates `data` against `schema`; on failure a 400 `invalid_data` whose error paths start at `pathPrefix`
 * (where the data sits in the request). Messages name fields, never values, so secrets are not echoed.
 */
export function assertMatchesSchema(
  schema: JsonObject,
  data: unknown,
  /** `what` opens the message, e.g. "config.data does not match the config schema". */
  options: { pathPrefix: (string | number)[]; entity: string; what: string },
): void {
  const validate = validatorFor(schema);
  if (validate(data)) return;
  const errors = ajvErrorsToDetails(validate.errors ?? []).map((e) => ({
    ...e,
    path: [...options.pathPrefix, ...e.path],
  }));
  const [first] = errors;
  const where = first?.path.length ? `${first.path.join(".")} ` : "";
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  throw new ApiError("invalid_data", `${options.what}: ${where}${first?.message ?? "is invalid"}${more}.`, {
    entity: options.entity,
    errors,
  });
}
