import type { JsonObject } from "../db/schema.ts";

/**
 * How a custom provider's validated config shapes the call to its upstream. Every value is a template whose only
 * dynamic parts are `{{config.a.b}}` placeholders: text is substituted, never evaluated, so a transformer cannot run
 * code. Strings are substituted as they are, other values as JSON text; a placeholder whose value is missing or
 * null drops the whole entry.
 */
export interface ConfigTransformer {
  /** HTTP headers sent to a remote upstream. */
  headers?: Record<string, string>;
  /** Query parameters appended to a remote upstream's URL. */
  query?: Record<string, string>;
  /** Environment variables of a function (child process) upstream. */
  env?: Record<string, string>;
}

export interface AppliedTransformer {
  headers: Record<string, string>;
  query: Record<string, string>;
  env: Record<string, string>;
}

const PLACEHOLDER = /\{\{\s*config((?:\.[A-Za-z0-9_-]+)+)\s*\}\}/g;
/** A template: any text in which every `{{` opens a well-formed placeholder. */
const TEMPLATE_PATTERN = "^(?:[^{]|\\{(?!\\{)|\\{\\{\\s*config(?:\\.[A-Za-z0-9_-]+)+\\s*\\}\\})*$";
const MAX_ENTRIES = 50;

const templateMap = (namePattern: string) => ({
  type: "object",
  maxProperties: MAX_ENTRIES,
  propertyNames: { pattern: namePattern, maxLength: 128 },
  additionalProperties: { type: "string", maxLength: 4096, pattern: TEMPLATE_PATTERN },
});

/** JSON Schema (2020-12) of a `config.transformer` in a create body; see `assertMatchesSchema`. */
export const configTransformerSchema: JsonObject = {
  type: "object",
  additionalProperties: false,
  properties: {
    // RFC 9110 token characters.
    headers: templateMap("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"),
    query: templateMap("^[^\\s&=#]+$"),
    env: templateMap("^[A-Za-z_][A-Za-z0-9_]*$"),
  },
};

function lookup(config: JsonObject | null, path: string[]): string | undefined {
  let value: unknown = config;
  for (const key of path) {
    if (value === null || typeof value !== "object" || Array.isArray(value) || !Object.hasOwn(value, key)) {
      return undefined;
    }
    value = (value as JsonObject)[key];
  }
  if (value === undefined || value === null) return undefined;
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Renders a template, or undefined when a placeholder has no value. */
function render(template: string, config: JsonObject | null): string | undefined {
  let missing = false;
  const out = template.replace(PLACEHOLDER, (_match, dotted: string) => {
    const value = lookup(config, dotted.slice(1).split("."));
    if (value === undefined) missing = true;
    return value ?? "";
  });
  return missing ? undefined : out;
}

function renderAll(
  templates: Record<string, string> | undefined,
  config: JsonObject | null,
  accept: (value: string) => boolean = () => true,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, template] of Object.entries(templates ?? {})) {
    const value = render(template, config);
    if (value !== undefined && accept(value)) out[name] = value;
  }
  return out;
}

// A header value with CR, LF or NUL would be rejected by fetch (or split the request): drop it instead.
const safeHeaderValue = (value: string) => !/[\r\n\0]/.test(value);
// Environment strings cannot carry NUL.
const safeEnvValue = (value: string) => !value.includes("\0");

export function applyTransformer(t: ConfigTransformer | undefined, config: JsonObject | null): AppliedTransformer {
  return {
    headers: renderAll(t?.headers, config, safeHeaderValue),
    query: renderAll(t?.query, config),
    env: renderAll(t?.env, config, safeEnvValue),
  };
}
