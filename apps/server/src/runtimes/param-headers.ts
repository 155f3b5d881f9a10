/**
 * SEP-2243 (MCP 2026-07-28, Streamable HTTP): a tool's `inputSchema` may mark a primitive argument with
 * `x-mcp-header: <Name>`; a client then sends its value also as the `Mcp-Param-<Name>` header, and a server (the SDK
 * v2's McpServer among them) refuses a call whose header is absent or disagrees (400, -32020). The SDK client does
 * this only in its `callTool`, which the gateway does not use (it would also check results against output schemas
 * the gateway passes on unchecked), and exports neither the scan nor the encoding: both are mirrored here from the
 * SDK client 2.4 (`scanXMcpHeaderDeclarations`, `buildMcpParamHeaders`, `encodeMcpParamValue`).
 */

type Schema = Record<string, unknown>;

/** The JSON-RPC error (with HTTP 400) of a request whose headers and body disagree (HEADER_MISMATCH, SEP-2243). */
export const HEADER_MISMATCH = -32020;
interface Declaration {
  path: string[];
  headerName: string;
  type: string;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PERMITTED_TYPES = new Set(["string", "integer", "boolean"]);
/** Where an `x-mcp-header` may not be (it would not be statically reachable through `properties`). */
const UNREACHABLE_KEYWORDS = [
  "items",
  "prefixItems",
  "contains",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "propertyNames",
  "patternProperties",
  "dependentSchemas",
  "oneOf",
  "anyOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "$defs",
  "definitions",
];
const NAME_TO_SCHEMA_KEYWORDS = new Set(["patternProperties", "dependentSchemas", "$defs", "definitions"]);
const BASE64_PREFIX = "=?base64?";
const BASE64_SUFFIX = "?=";

const declarationsOf = new WeakMap<object, Declaration[]>();

/**
 * The `Mcp-Param-*` headers of a call of a tool with `inputSchema`: none when the schema declares none, or any
 * invalid one (a conforming client leaves such a tool alone), and none for an argument that is absent, null or
 * not a primitive it can write.
 */
export function mcpParamHeaders(inputSchema: unknown, args: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { headerName, text } of declaredValues(inputSchema, args))
    headers[`Mcp-Param-${headerName}`] = encoded(text);
  return headers;
}

/**
 * Why a 2026-07-28 call's `Mcp-Param-*` headers (`given`, by lower-case name) disagree with its arguments, or
 * undefined when they agree; as a server checks them (the SDK's `validateMcpParamHeaders`): every declared
 * argument the body carries needs its header, base64-wrapped values are decoded, and integers compare as numbers.
 */
export function mcpParamMismatch(
  inputSchema: unknown,
  args: unknown,
  given: Record<string, string | string[] | undefined>,
): string | undefined {
  for (const { headerName, type, text } of declaredValues(inputSchema, args)) {
    const header = `Mcp-Param-${headerName}`;
    const raw = given[header.toLowerCase()];
    const carries = `the body carries ${headerName.toLowerCase()}=${JSON.stringify(text)}`;
    if (typeof raw !== "string") return `${carries} but the ${header} header is ${raw ? "repeated" : "absent"}`;
    const value = decoded(raw.trim());
    if (value === undefined) return `the ${header} header is not a valid value`;
    const same = type === "integer" ? Number(value) === Number(text) && value.trim() !== "" : value === text;
    if (!same) return `${carries} but the ${header} header carries ${JSON.stringify(value)}`;
  }
  return undefined;
}

/** The declared arguments a call carries, as header text (what a header is written from and checked against). */
function declaredValues(inputSchema: unknown, args: unknown): { headerName: string; type: string; text: string }[] {
  if (typeof inputSchema !== "object" || inputSchema === null) return [];
  let declarations = declarationsOf.get(inputSchema);
  if (!declarations) {
    declarations = scan(inputSchema as Schema) ?? [];
    declarationsOf.set(inputSchema, declarations);
  }
  const values: { headerName: string; type: string; text: string }[] = [];
  for (const { path, headerName, type } of declarations) {
    let value: unknown = args;
    for (const key of path) value = typeof value === "object" && value !== null ? (value as Schema)[key] : undefined;
    const text = primitiveText(value);
    if (text !== undefined) values.push({ headerName, type, text });
  }
  return values;
}

/** The schema's declarations, or undefined when any is invalid (SEP-2243's constraints, as the SDK checks them). */
function scan(inputSchema: Schema): Declaration[] | undefined {
  const declarations: Declaration[] = [];
  const names = new Set<string>();
  const valid = (node: unknown, path: string[], reachable: boolean): boolean => {
    if (typeof node !== "object" || node === null) return true;
    const schema = node as Schema;
    if ("x-mcp-header" in schema) {
      const name = schema["x-mcp-header"];
      if (!reachable || path.length === 0 || typeof name !== "string" || !TOKEN.test(name)) return false;
      if (typeof schema.type !== "string" || !PERMITTED_TYPES.has(schema.type)) return false;
      if (names.has(name.toLowerCase())) return false;
      names.add(name.toLowerCase());
      declarations.push({ path, headerName: name, type: schema.type });
    }
    const properties = schema.properties;
    if (typeof properties === "object" && properties !== null) {
      for (const [key, child] of Object.entries(properties)) if (!valid(child, [...path, key], reachable)) return false;
    }
    for (const keyword of UNREACHABLE_KEYWORDS) {
      const sub = schema[keyword];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub)
        ? sub
        : NAME_TO_SCHEMA_KEYWORDS.has(keyword) && typeof sub === "object" && sub !== null
          ? Object.values(sub)
          : [sub];
      for (const branch of branches) if (!valid(branch, [...path, `<${keyword}>`], false)) return false;
    }
    return true;
  };
  return valid(inputSchema, [], true) ? declarations : undefined;
}

/** A primitive argument as the header carries it; undefined for what gets no header. */
function primitiveText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value !== "number" || !Number.isFinite(value)) return undefined;
  return Number.isInteger(value) && !Number.isSafeInteger(value) ? undefined : String(value);
}

/** A header's value: as it is, or decoded from `=?base64?…?=` (undefined when that is not base64 of UTF-8). */
function decoded(value: string): string | undefined {
  if (!(value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX))) return value;
  const payload = value.slice(BASE64_PREFIX.length, value.length - BASE64_SUFFIX.length);
  const bytes = Buffer.from(payload, "base64");
  if (bytes.toString("base64") !== payload) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** Plain visible ASCII as it is; anything else (or what looks encoded already) as `=?base64?<utf-8>?=`. */
function encoded(value: string): string {
  const plain =
    value.length > 0 &&
    value === value.trim() &&
    !(value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX)) &&
    /^[\t\x20-\x7e]*$/.test(value);
  return plain ? value : `${BASE64_PREFIX}${Buffer.from(value, "utf8").toString("base64")}${BASE64_SUFFIX}`;
}
