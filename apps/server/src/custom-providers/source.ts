import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { CustomProviderSource, JsonObject, Runtime } from "../db/schema.ts";
import { assertMatchesSchema } from "../lib/json-schema.ts";
import { type ConfigTransformer, configTransformerSchema } from "../runtimes/transformer.ts";
import type { SecretBox } from "../secrets/secret-box.ts";

type From = components["schemas"]["CustomProviderFrom"];
type Config = components["schemas"]["CustomProviderConfig"];

/** A version without `config` takes no configuration. */
export const EMPTY_CONFIG_SCHEMA: JsonObject = { type: "object", properties: {}, additionalProperties: false };
const FUNCTION_DEFAULTS = { entrypoint: "index.mjs", timeout_ms: 30_000, memory_mb: 256 };

export const passwordAad = (versionId: string) => `custom_provider_versions:${versionId}:password`;

const invalid = (path: (string | number)[], message: string, code = "invalid") =>
  new ApiError("invalid_data", `${path.join(".")} ${message}`, {
    entity: "body",
    errors: [{ code, message, path }],
  });

// Only to check that a config schema compiles; validation itself goes through lib/json-schema.
const schemaChecker = new Ajv2020({ strict: false, validateFormats: false });

/** What a version row and its provider version are made of, from a validated create body. */
export interface PreparedVersion {
  source: CustomProviderSource;
  password: string | null;
  /** The provider version's runtime until the deployment fills in where it runs. */
  runtime: Runtime;
  configSchema: JsonObject;
}

/** Checks what the body schema cannot (entrypoint, unique paths, transformer, config schema) and normalises. */
export function prepareVersion(from: From, config: Config | undefined): PreparedVersion {
  const transformer = parseTransformer(config?.transformer);
  const configSchema = config?.schema ?? EMPTY_CONFIG_SCHEMA;
  try {
    schemaChecker.compile(configSchema);
  } catch (error) {
    throw invalid(["config", "schema"], `is not a valid JSON Schema: ${(error as Error).message}`);
  }
  const withTransformer = (runtime: Runtime): Runtime => (transformer ? { ...runtime, transformer } : runtime);

  switch (from.type) {
    case "remote": {
      const protocol = from.protocol ?? "streamable_http";
      return {
        source: { type: "remote", remote_url: from.remote_url, protocol },
        password: null,
        runtime: withTransformer({ type: "remote", url: from.remote_url, protocol }),
        configSchema,
      };
    }
    case "container":
      return {
        source: { type: "container", image_ref: from.image_ref, username: from.username ?? null },
        password: from.password ?? null,
        // Where the container listens is known once the engine runs it; until then nothing can connect.
        runtime: withTransformer({ type: "remote", url: "http://container.invalid/mcp", protocol: "streamable_http" }),
        configSchema,
      };
    case "function": {
      const entrypoint = from.entrypoint ?? FUNCTION_DEFAULTS.entrypoint;
      const seen = new Set<string>();
      from.files.forEach((file, i) => {
        if (seen.has(file.path)) throw invalid(["from", "files", i, "path"], `repeats the path "${file.path}".`);
        seen.add(file.path);
      });
      if (!seen.has(entrypoint)) {
        throw invalid(["from", "entrypoint"], `"${entrypoint}" is not the path of one of from.files.`);
      }
      return {
        source: {
          type: "function",
          runtime: from.runtime,
          entrypoint,
          files: from.files.map((f) => ({ path: f.path, content: f.content })),
          timeout_ms: from.timeout_ms ?? FUNCTION_DEFAULTS.timeout_ms,
          memory_mb: from.memory_mb ?? FUNCTION_DEFAULTS.memory_mb,
        },
        password: null,
        // The deployment writes the files and fills in the command line.
        runtime: withTransformer({ type: "stdio", command: "node", args: [] }),
        configSchema,
      };
    }
  }
}

/** `config.transformer` is JSON text: parsed as data and checked against the transformer schema (400 with paths). */
function parseTransformer(text: string | undefined): ConfigTransformer | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid(["config", "transformer"], "is not valid JSON.", "format");
  }
  assertMatchesSchema(configTransformerSchema, parsed, {
    pathPrefix: ["config", "transformer"],
    entity: "body",
    what: "config.transformer is not a valid transformer",
  });
  return parsed as ConfigTransformer;
}

export const encryptPassword = (secrets: SecretBox, versionId: string, password: string | null): string | null =>
  password === null ? null : secrets.encrypt(password, passwordAad(versionId));
