import { ApiError } from "@toolplane/server-stubs";
import { describe, expect, it } from "vitest";
import { assertMatchesSchema } from "../../src/lib/json-schema.ts";
import { applyTransformer, configTransformerSchema } from "../../src/runtimes/transformer.ts";

const validate = (t: unknown) =>
  assertMatchesSchema(configTransformerSchema, t, {
    pathPrefix: ["config", "transformer"],
    entity: "custom_provider",
    what: "config.transformer is invalid",
  });

describe("applyTransformer", () => {
  it("substitutes nested config values into headers, query and env", () => {
    const out = applyTransformer(
      {
        headers: { Authorization: "Bearer {{config.auth.token}}", "X-Static": "plain" },
        query: { region: "{{ config.region }}", n: "{{config.limit}}-{{config.strict}}" },
        env: { API_KEY: "{{config.auth.token}}" },
      },
      { auth: { token: "t0k" }, region: "eu", limit: 5, strict: false },
    );
    expect(out).toEqual({
      headers: { Authorization: "Bearer t0k", "X-Static": "plain" },
      query: { region: "eu", n: "5-false" },
      env: { API_KEY: "t0k" },
    });
  });

  it("drops an entry whose placeholder is missing or null, and writes other values as JSON", () => {
    const out = applyTransformer(
      { headers: { A: "{{config.missing}}", B: "x{{config.obj}}", C: "{{config.nil}}", D: "{{config.ok}}" } },
      { obj: { a: [1, "b"] }, nil: null, ok: "yes" },
    );
    expect(out.headers).toEqual({ B: 'x{"a":[1,"b"]}', D: "yes" });
    expect(applyTransformer({ env: { A: "{{config.a}}" } }, null).env).toEqual({});
  });

  it("never evaluates anything: expressions stay text and prototype keys resolve to nothing", () => {
    const expression = ["$", "{process.pid}"].join("");
    const out = applyTransformer(
      { headers: { A: "{{config.constructor}}", B: expression }, query: { q: "{{config.__proto__}}" } },
      { a: 1 },
    );
    expect(out.headers).toEqual({ B: expression });
    expect(out.query).toEqual({});
  });

  it("drops header values that would carry CR/LF", () => {
    const out = applyTransformer({ headers: { A: "{{config.v}}" } }, { v: "x\r\nInjected: 1" });
    expect(out.headers).toEqual({});
  });

  it("handles no transformer", () => {
    expect(applyTransformer(undefined, { a: 1 })).toEqual({ headers: {}, query: {}, env: {} });
  });
});

describe("configTransformerSchema", () => {
  it("accepts well-formed templates", () => {
    expect(() =>
      validate({ headers: { "X-Key": "k {{config.a.b}} {x}" }, env: { KEY_1: "{{config.k}}" }, query: {} }),
    ).not.toThrow();
  });

  it("rejects expressions, bad names and unknown fields with paths", () => {
    const cases: [unknown, (string | number)[]][] = [
      [{ headers: { A: "{{config.a + 1}}" } }, ["config", "transformer", "headers", "A"]],
      [{ env: { A: "{{ process.env.X }}" } }, ["config", "transformer", "env", "A"]],
      [{ env: { "1BAD": "x" } }, ["config", "transformer", "env"]],
      [{ headers: { "Bad Header": "x" } }, ["config", "transformer", "headers"]],
      [{ script: "x" }, ["config", "transformer", "script"]],
      [{ headers: { A: 1 } }, ["config", "transformer", "headers", "A"]],
    ];
    for (const [input, path] of cases) {
      try {
        validate(input);
        expect.unreachable(`accepted ${JSON.stringify(input)}`);
      } catch (error) {
        expect(error).toBeInstanceOf(ApiError);
        expect((error as ApiError).errors?.map((e) => e.path)).toContainEqual(path);
      }
    }
  });
});
