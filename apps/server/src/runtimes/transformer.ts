import type { JsonObject, Runtime } from "../db/schema.ts";

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

/** The config keys a template's placeholders name that the config has no value for. */
function missingKeys(template: string, config: JsonObject | null): string[] {
  return [...template.matchAll(PLACEHOLDER)]
    .map(([, dotted = ""]) => dotted.slice(1))
    .filter((dotted) => lookup(config, dotted.split(".")) === undefined);
}

/**
 * The runtime with the config filled into the `{{config.…}}` placeholders of its remote URL and stdio args (MCP
 * Registry imports: URL template variables and package arguments; catalog/registry/server-json.ts). An argument
 * whose value is missing is left out; a URL that cannot be completed throws, naming the keys it needs.
 */
export function configuredRuntime(runtime: Runtime, config: JsonObject | null): Runtime {
  if (runtime.type === "stdio") return { ...runtime, args: runtime.args.flatMap((arg) => render(arg, config) ?? []) };
  const url = render(runtime.url, config);
  if (url === undefined) {
    throw new Error(
      `its URL needs the config value(s) ${missingKeys(runtime.url, config).join(", ")}: give the deployment a config that sets them.`,
    );
  }
  return { ...runtime, url };
}
