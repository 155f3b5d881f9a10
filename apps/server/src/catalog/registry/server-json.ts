import { createHash } from "node:crypto";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { JsonObject, Runtime, RuntimePackage } from "../../db/schema.ts";
import type { ConfigTransformer } from "../../runtimes/transformer.ts";
import type { CatalogEntry } from "../loader.ts";

/**
 * The parts of an MCP Registry `server.json` (schema 2025-12-11,
 * https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json) and of the registry read API's
 * `ServerResponse` that an import uses.
 */
export interface Input {
  description?: string;
  isRequired?: boolean;
  format?: "string" | "number" | "boolean" | "filepath";
  value?: string;
  isSecret?: boolean;
  default?: string;
  placeholder?: string;
  choices?: string[];
}
export interface InputWithVariables extends Input {
  variables?: Record<string, Input>;
}
export interface KeyValueInput extends InputWithVariables {
  name: string;
}
export type Argument =
  | (InputWithVariables & { type: "positional"; valueHint?: string; isRepeated?: boolean })
  | (InputWithVariables & { type: "named"; name: string; isRepeated?: boolean });
interface Transport {
  type: "stdio" | "streamable-http" | "sse";
  url?: string;
  headers?: KeyValueInput[];
}
interface RemoteTransport {
  type: "streamable-http" | "sse";
  url: string;
  headers?: KeyValueInput[];
  variables?: Record<string, Input>;
}
interface Package {
  registryType: string;
  registryBaseUrl?: string;
  identifier: string;
  version?: string;
  runtimeHint?: string;
  transport: Transport;
  runtimeArguments?: Argument[];
  packageArguments?: Argument[];
  environmentVariables?: KeyValueInput[];
}
export interface ServerDetail {
  name: string;
  description: string;
  title?: string;
  version: string;
  websiteUrl?: string;
  repository?: { url: string; source: string };
  packages?: Package[];
  remotes?: RemoteTransport[];
}
export const OFFICIAL_META = "io.modelcontextprotocol.registry/official";
export interface OfficialMeta {
  status?: "active" | "deprecated" | "deleted";
  updatedAt?: string;
  isLatest?: boolean;
}
export interface ServerResponse {
  server: ServerDetail;
  _meta?: { [OFFICIAL_META]?: OfficialMeta };
}

/** What an import checks before it maps a document: the fields it reads, typed as the published schema types them. */
const input = {
  type: "object",
  properties: {
    description: { type: "string" },
    isRequired: { type: "boolean" },
    format: { enum: ["string", "number", "boolean", "filepath"] },
    value: { type: "string" },
    isSecret: { type: "boolean" },
    default: { type: "string" },
    choices: { type: "array", items: { type: "string" } },
  },
};
const withVariables = { ...input, properties: { ...input.properties, variables: { additionalProperties: input } } };
const keyValue = {
  ...withVariables,
  required: ["name"],
  properties: { ...withVariables.properties, name: { type: "string", minLength: 1 } },
};
const argument = {
  ...withVariables,
  required: ["type"],
  properties: {
    ...withVariables.properties,
    type: { enum: ["positional", "named"] },
    name: { type: "string" },
    valueHint: { type: "string" },
  },
};
const SERVER_DETAIL_SCHEMA = {
  type: "object",
  required: ["name", "description", "version"],
  properties: {
    name: { type: "string", pattern: "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$", minLength: 3, maxLength: 200 },
    description: { type: "string", minLength: 1 },
    title: { type: "string", minLength: 1 },
    version: { type: "string", minLength: 1, maxLength: 64 },
    websiteUrl: { type: "string" },
    packages: {
      type: "array",
      items: {
        type: "object",
        required: ["registryType", "identifier", "transport"],
        properties: {
          registryType: { type: "string" },
          identifier: { type: "string", minLength: 1 },
          version: { type: "string", minLength: 1, not: { const: "latest" } },
          transport: {
            type: "object",
            required: ["type"],
            properties: { type: { enum: ["stdio", "streamable-http", "sse"] } },
          },
          runtimeArguments: { type: "array", items: argument },
          packageArguments: { type: "array", items: argument },
          environmentVariables: { type: "array", items: keyValue },
        },
      },
    },
    remotes: {
      type: "array",
      items: {
        type: "object",
        required: ["type", "url"],
        properties: {
          type: { enum: ["streamable-http", "sse"] },
          url: { type: "string", pattern: "^(https?://[^\\s]+|\\{[a-zA-Z_][a-zA-Z0-9_]*\\}[^\\s]*)$" },
          headers: { type: "array", items: keyValue },
          variables: { type: "object", additionalProperties: input },
        },
      },
    },
  },
};
const validateDetail = new Ajv2020({ allErrors: true, strict: false }).compile(SERVER_DETAIL_SCHEMA);

/** The problems that keep a document from being imported ("" when there are none). */
export function serverDetailProblems(document: unknown): string {
  if (validateDetail(document)) return "";
  return (validateDetail.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
}

/** A catalog slug (`^[a-z0-9]+(?:-[a-z0-9]+)*$`, at most 60) for a registry name or namespace. */
export function slugFor(name: string, hashed = false): string {
  const base = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  if (!hashed && base.length <= 60) return base;
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `${base.slice(0, 51).replace(/-+$/, "")}-${hash}`;
}

/** Config keys are placeholder path segments (runtimes/transformer.ts): letters, digits, `_` and `-`. */
const configKey = (name: string) => name.replace(/^-+/, "").replace(/[^A-Za-z0-9_-]/g, "_") || "value";

/** Collects the config schema and the templates an input's values become. */
class ConfigBuilder {
  readonly properties: Record<string, JsonObject> = {};
  readonly required = new Set<string>();

  /** Declares a config property for an input the deployment's config supplies. */
  property(key: string, spec: Input): void {
    const type = spec.format === "number" ? "number" : spec.format === "boolean" ? "boolean" : "string";
    const typed = (value: string) =>
      type === "number" ? Number(value) : type === "boolean" ? value === "true" : value;
    this.properties[key] = {
      type,
      ...(spec.description ? { description: spec.description } : {}),
      ...(spec.choices?.length ? { enum: spec.choices.map(typed) } : {}),
      ...(spec.default !== undefined ? { default: typed(spec.default) } : {}),
      // Secrets are write-only, as every secret field of the API is (config data is stored encrypted anyway).
      ...(spec.isSecret ? { writeOnly: true } : {}),
    };
    if (spec.isRequired && spec.default === undefined) this.required.add(key);
  }

  /**
   * The template of an input: its fixed `value` with `{name}` variables turned into config placeholders, or,
   * without a value, a placeholder for a config property of its own named `key`.
   */
  template(spec: InputWithVariables, key: string, variables: Record<string, Input> = spec.variables ?? {}): string {
    if (spec.value === undefined) {
      this.property(key, spec);
      return `{{config.${key}}}`;
    }
    return spec.value.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => {
      const variable = variables[name];
      if (!variable) return whole;
      this.property(configKey(name), variable);
      return `{{config.${configKey(name)}}}`;
    });
  }

  keyValues(inputs: KeyValueInput[] | undefined): Record<string, string> {
    return Object.fromEntries((inputs ?? []).map((i) => [i.name, this.template(i, configKey(i.name))]));
  }

  /** Command-line arguments; a named one is one `--flag=value` argument, so a missing value drops the flag too. */
  args(args: Argument[] | undefined): string[] {
    return (args ?? []).map((a) =>
      a.type === "named"
        ? `${a.name}=${this.template(a, configKey(a.name))}`
        : this.template(a, configKey(a.valueHint ?? "value")),
    );
  }

  schema(): JsonObject {
    return {
      type: "object",
      properties: this.properties,
      ...(this.required.size ? { required: [...this.required] } : {}),
      additionalProperties: false,
    };
  }
}

const PACKAGE_TYPES: RuntimePackage["registry_type"][] = ["npm", "pypi", "oci", "nuget", "mcpb"];

/** How a package is started over stdio: the runner's command and the arguments around the package's own. */
function packageCommand(pkg: Package, type: RuntimePackage["registry_type"], runtimeArgs: string[], env: string[]) {
  const at = pkg.version ? `@${pkg.version}` : "";
  switch (type) {
    case "npm":
      return { command: "npx", args: [...runtimeArgs, "-y", `${pkg.identifier}${at}`] };
    case "pypi":
      return { command: "uvx", args: [...runtimeArgs, `${pkg.identifier}${pkg.version ? `==${pkg.version}` : ""}`] };
    case "nuget":
      return { command: "dnx", args: [...runtimeArgs, `${pkg.identifier}${at}`, "--yes"] };
    case "oci":
      // `-e NAME` hands the variable from docker's environment (the config's values) into the container.
      return {
        command: "docker",
        args: ["run", "-i", "--rm", ...runtimeArgs, ...env.flatMap((name) => ["-e", name]), pkg.identifier],
      };
    case "mcpb":
      // Never run (runtimes/runner.ts refuses bundles); kept so the version says what it would take.
      return { command: "mcpb", args: [pkg.identifier] };
  }
}

/**
 * The runtime and config schema of a server version: its first remote (Streamable HTTP preferred), else its first
 * stdio package in the order npm, PyPI, OCI, NuGet, mcpb. Null when it has neither.
 */
export function runtimeOf(server: ServerDetail): { runtime: Runtime; config_schema: JsonObject } | null {
  const config = new ConfigBuilder();
  const remote =
    server.remotes?.find((r) => r.type === "streamable-http") ?? server.remotes?.find((r) => r.type === "sse");
  if (remote) {
    const url = config.template({ value: remote.url }, "url", remote.variables ?? {});
    const headers = config.keyValues(remote.headers);
    const transformer: ConfigTransformer = Object.keys(headers).length ? { headers } : {};
    const protocol = remote.type === "sse" ? "sse" : "streamable_http";
    return {
      runtime: { type: "remote", url, protocol, ...(transformer.headers ? { transformer } : {}) },
      config_schema: config.schema(),
    };
  }
  const stdio = (server.packages ?? []).filter((p) => p.transport.type === "stdio");
  for (const type of PACKAGE_TYPES) {
    const pkg = stdio.find((p) => p.registryType === type);
    if (!pkg) continue;
    const env = config.keyValues(pkg.environmentVariables);
    const { command, args } = packageCommand(pkg, type, config.args(pkg.runtimeArguments), Object.keys(env));
    const runtime: Runtime = {
      type: "stdio",
      command,
      args: [...args, ...config.args(pkg.packageArguments)],
      package: { registry_type: type, identifier: pkg.identifier, version: pkg.version ?? null },
      ...(Object.keys(env).length ? { transformer: { env } } : {}),
    };
    return { runtime, config_schema: config.schema() };
  }
  return null;
}

/** The catalog entry of one server version (publisher from the name's namespace), or why it has none. */
export function catalogEntryOf(
  server: ServerDetail,
  slug: string,
  status: "released" | "deprecated",
): CatalogEntry | string {
  const runnable = runtimeOf(server);
  if (!runnable) return "it has no remote and no stdio package of a known type";
  const namespace = server.name.split("/")[0] ?? server.name;
  return {
    slug,
    name: server.title ?? server.name,
    description: server.description,
    metadata: {
      registry_name: server.name,
      ...(server.websiteUrl ? { homepage: server.websiteUrl } : {}),
      ...(server.repository?.url ? { repository: server.repository.url } : {}),
    },
    publisher: { slug: slugFor(namespace), name: namespace },
    current_version: server.version,
    versions: [{ version: server.version, status, ...runnable, tools: [] }],
    auth_methods: [],
  };
}
