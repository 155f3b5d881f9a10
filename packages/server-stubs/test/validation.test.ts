import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { ApiError, operationTable } from "../src/index.ts";
import { compileValidators } from "../src/validation.ts";
import { spec } from "./spec.ts";

describe("validators", () => {
  // The server compiles each operation's validators on its first request; this keeps a spec whose schemas
  // cannot compile failing here, before any request finds out.
  it("compile for every operation of the spec", () => {
    const validators = compileValidators(spec, operationTable);
    expect(validators.size).toBe(operationTable.length);
    for (const op of operationTable) expect(() => validators.get(op.operationId)?.compile()).not.toThrow();
  });

  // The server skips this check at start (it compiled the meta-schema on every start); the spec is checked here.
  it("come from schemas that are valid JSON Schema 2020-12", () => {
    const ajv = new Ajv2020({ strict: false });
    const schemas = Object.entries(spec.components?.schemas ?? {});
    expect(schemas.length).toBeGreaterThan(50);
    for (const [name, schema] of schemas) {
      expect({ name, valid: ajv.validateSchema(schema as object), errors: ajv.errors ?? null }).toEqual({
        name,
        valid: true,
        errors: null,
      });
    }
  });

  it("fail loudly on a schema that cannot compile", () => {
    const broken = structuredClone(spec);
    const op = operationTable.find((o) => o.operationId === "listProviderGroups");
    const operation = op && broken.paths[op.path]?.[op.method];
    if (!op || !operation) throw new Error("listProviderGroups is not in the spec");
    operation.parameters = [{ name: "limit", in: "query", schema: { $ref: "#/components/schemas/Missing" } }];
    const validator = compileValidators(broken, [op]).get(op.operationId);
    expect(() => validator?.compile()).toThrow(/Missing/);
    // A request reaching it is a server error, never a pass.
    expect(() => validator?.query("limit=1")).toThrow(/Missing/);
  });

  it("give the same error details on first and later use", () => {
    const validator = compileValidators(spec, operationTable).get("listProviderGroups");
    const attempt = () => {
      try {
        validator?.query("limit=abc&nope=1");
      } catch (err) {
        return err instanceof ApiError ? err.toBody() : err;
      }
    };
    const first = attempt();
    expect(first).toMatchObject({ code: "invalid_data", entity: "query" });
    expect(attempt()).toEqual(first);
  });
});
