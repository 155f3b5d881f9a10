/**
 * The `Mcp-Param-*` headers of a 2026-07-28 tools/call (src/runtimes/param-headers.ts, SEP-2243), against the
 * rules the SDK client applies: which declarations count, and how values are written.
 */
import { describe, expect, it } from "vitest";
import { mcpParamHeaders, mcpParamMismatch } from "../../src/runtimes/param-headers.ts";

const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "object",
  properties,
  ...extra,
});

describe("Mcp-Param headers", () => {
  it("write each declared primitive argument, nested ones too, and leave absent and null ones out", () => {
    const schema = object({
      region: { type: "string", "x-mcp-header": "Region" },
      count: { type: "integer", "x-mcp-header": "Count" },
      dry: { type: "boolean", "x-mcp-header": "Dry-Run" },
      target: object({ host: { type: "string", "x-mcp-header": "Host" } }),
      note: { type: "string" },
    });
    expect(mcpParamHeaders(schema, { region: "eu", count: 3, dry: false, target: { host: "a.example" } })).toEqual({
      "Mcp-Param-Region": "eu",
      "Mcp-Param-Count": "3",
      "Mcp-Param-Dry-Run": "false",
      "Mcp-Param-Host": "a.example",
    });
    expect(mcpParamHeaders(schema, { region: null, note: "x" })).toEqual({});
    expect(mcpParamHeaders(schema, undefined)).toEqual({});
  });

  it("wrap what is not plain visible ASCII, or looks wrapped already, as base64 of its UTF-8", () => {
    const schema = object({ v: { type: "string", "x-mcp-header": "V" } });
    const header = (v: string) => mcpParamHeaders(schema, { v })["Mcp-Param-V"];
    expect(header("plain value")).toBe("plain value");
    expect(header("Zürich")).toBe(`=?base64?${Buffer.from("Zürich").toString("base64")}?=`);
    expect(header(" padded")).toBe(`=?base64?${Buffer.from(" padded").toString("base64")}?=`);
    expect(header("")).toBe("=?base64??=");
    expect(header("=?base64?abc?=")).toBe(`=?base64?${Buffer.from("=?base64?abc?=").toString("base64")}?=`);
    expect(header("line\nbreak")).toMatch(/^=\?base64\?/);
  });

  it("send none for a schema with any invalid declaration, as a conforming client leaves that tool alone", () => {
    const region = { type: "string", "x-mcp-header": "Region" };
    const invalid = [
      object({ region, size: { type: "number", "x-mcp-header": "Size" } }), // number is not permitted
      object({ region, list: { type: "array", items: { type: "string", "x-mcp-header": "Item" } } }),
      object({ region, other: { type: "string", "x-mcp-header": "region" } }), // not unique, case-insensitively
      object({ region, bad: { type: "string", "x-mcp-header": "Has Space" } }),
      object({ region }, { anyOf: [object({ x: { type: "string", "x-mcp-header": "X" } })] }),
      { type: "object", "x-mcp-header": "Root" },
    ];
    for (const schema of invalid) expect(mcpParamHeaders(schema, { region: "eu", size: 1 })).toEqual({});
  });

  it("write no header for a value of another kind than a primitive, or a number it cannot write exactly", () => {
    const schema = object({ n: { type: "integer", "x-mcp-header": "N" } });
    expect(mcpParamHeaders(schema, { n: { nested: 1 } })).toEqual({});
    expect(mcpParamHeaders(schema, { n: 2 ** 60 })).toEqual({});
    expect(mcpParamHeaders(schema, { n: Number.NaN })).toEqual({});
    expect(mcpParamHeaders(schema, { n: -7 })).toEqual({ "Mcp-Param-N": "-7" });
  });

  it("are checked against the arguments as a server checks them", () => {
    const schema = object({
      region: { type: "string", "x-mcp-header": "Region" },
      zone: { type: "integer", "x-mcp-header": "Zone" },
    });
    const wrapped = (v: string) => `=?base64?${Buffer.from(v).toString("base64")}?=`;
    expect(
      mcpParamMismatch(schema, { region: "eu", zone: 3 }, { "mcp-param-region": "eu", "mcp-param-zone": "3" }),
    ).toBeUndefined();
    // Integers compare as numbers; an argument the body leaves out (or null) needs no header.
    expect(mcpParamMismatch(schema, { zone: 3 }, { "mcp-param-zone": "3.0" })).toBeUndefined();
    expect(mcpParamMismatch(schema, { region: null }, {})).toBeUndefined();
    expect(mcpParamMismatch(schema, { region: "Zürich" }, { "mcp-param-region": wrapped("Zürich") })).toBeUndefined();
    expect(mcpParamMismatch(schema, { region: "eu" }, {})).toMatch(/Mcp-Param-Region header is absent/);
    expect(mcpParamMismatch(schema, { region: "eu" }, { "mcp-param-region": "us" })).toMatch(/carries "us"/);
    expect(mcpParamMismatch(schema, { region: "eu" }, { "mcp-param-region": ["eu", "eu"] })).toMatch(/repeated/);
    expect(mcpParamMismatch(schema, { region: "eu" }, { "mcp-param-region": "=?base64?%%?=" })).toMatch(/not a valid/);
    expect(mcpParamMismatch(schema, { zone: 3 }, { "mcp-param-zone": "4" })).toMatch(/Mcp-Param-Zone/);
  });
});
