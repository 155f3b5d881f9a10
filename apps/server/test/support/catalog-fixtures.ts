import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { stringify } from "yaml";
import { type CatalogEntry, loadCatalog, readCatalog } from "../../src/catalog/loader.ts";
import type { Db } from "../../src/db/database.ts";
import type { JsonObject } from "../../src/db/schema.ts";
import { newId } from "../../src/lib/ids.ts";
import { type StartedTestServer, startTestServer } from "./server.ts";

/** A config schema that takes no configuration (what `everything` has). */
export const EMPTY_CONFIG_SCHEMA: JsonObject = { type: "object", properties: {}, additionalProperties: false };

/**
 * A config schema exercising what JSON Schema 2020-12 validation must report: required fields, a nested
 * object with its own required field and bounds, formats, a pattern, an enum, an array and no extra keys.
 */
export const RICH_CONFIG_SCHEMA: JsonObject = {
  type: "object",
  properties: {
    api_key: { type: "string", minLength: 8, description: "Upstream API key." },
    workspace: { type: "string", pattern: "^[a-z][a-z0-9-]*$" },
    endpoint: { type: "string", format: "uri" },
    contact: { type: "string", format: "email" },
    region: { enum: ["eu", "us"] },
    limits: {
      type: "object",
      properties: {
        max_calls: { type: "integer", minimum: 1 },
        window: { type: "string", format: "duration" },
      },
      required: ["max_calls"],
      additionalProperties: false,
    },
    tags: { type: "array", items: { type: "string" }, maxItems: 3 },
  },
  required: ["api_key", "workspace"],
  additionalProperties: false,
};

/** Data that satisfies RICH_CONFIG_SCHEMA. */
export const richConfigData = (apiKey = "sk-test-12345678"): JsonObject => ({
  api_key: apiKey,
  workspace: "staging-eu",
  endpoint: "https://api.example.test/v1",
  contact: "ops@example.test",
  region: "eu",
  limits: { max_calls: 10, window: "PT1M" },
  tags: ["a", "b"],
});

export interface TestVersion {
  version: string;
  status?: "released" | "deprecated";
  config_schema?: JsonObject;
}

/** A catalog entry (as a catalog/ YAML file declares it) for a test provider reached over stdio. */
export function catalogEntry(
  slug: string,
  options: { name?: string; versions?: TestVersion[]; current_version?: string; description?: string | null } = {},
): CatalogEntry {
  const versions = options.versions ?? [{ version: "1.0.0" }];
  return {
    slug,
    name: options.name ?? `Test ${slug}`,
    description: options.description === undefined ? `${slug} for tests` : options.description,
    publisher: { slug: "toolplane-tests", name: "Toolplane tests" },
    metadata: { origin: "test" },
    current_version: options.current_version ?? versions[versions.length - 1]?.version ?? "1.0.0",
    versions: versions.map((v) => ({
      version: v.version,
      status: v.status ?? "released",
      runtime: { type: "stdio", command: "node", args: ["server.js", "stdio"] },
      config_schema: v.config_schema ?? EMPTY_CONFIG_SCHEMA,
      tools: [{ name: "echo", description: "Echoes" }],
    })),
    auth_methods: [],
  };
}

export interface LoadedProvider {
  providerId: string;
  slug: string;
  /** Version ids by version label. */
  versions: Record<string, string>;
  currentVersionId: string | null;
}

/**
 * Writes the entries as YAML files into a fresh directory and loads them the way the server does at start
 * (readCatalog validates them against catalog.schema.json; loadCatalog upserts by slug). Loading an entry
 * again with other versions or another current_version updates it in place.
 */
export async function loadTestCatalog(db: Db, entries: CatalogEntry[]): Promise<Record<string, LoadedProvider>> {
  const dir = mkdtempSync(join(tmpdir(), "toolplane-test-catalog-"));
  for (const entry of entries) writeFileSync(join(dir, `${entry.slug}.yaml`), stringify(entry));
  await loadCatalog(db, readCatalog([dir]));
  const out: Record<string, LoadedProvider> = {};
  for (const entry of entries) out[entry.slug] = await catalogProvider(db, entry.slug);
  return out;
}

/** Loads one test provider; see loadTestCatalog. */
export async function loadTestProvider(
  db: Db,
  slug: string,
  options: Parameters<typeof catalogEntry>[1] = {},
): Promise<LoadedProvider> {
  const loaded = await loadTestCatalog(db, [catalogEntry(slug, options)]);
  const provider = loaded[slug];
  if (!provider) throw new Error(`catalog entry ${slug} was not loaded`);
  return provider;
}

/** A catalog provider (built-in or loaded by a test) by slug, with its version ids. */
export async function catalogProvider(db: Db, slug: string): Promise<LoadedProvider> {
  const provider = await db
    .selectFrom("providers")
    .select(["id", "current_version_id"])
    .where("slug", "=", slug)
    .where("instance_id", "is", null)
    .executeTakeFirstOrThrow();
  const versions = await db
    .selectFrom("provider_versions")
    .select(["id", "version"])
    .where("provider_id", "=", provider.id)
    .execute();
  return {
    providerId: provider.id,
    slug,
    versions: Object.fromEntries(versions.map((v) => [v.version, v.id])),
    currentVersionId: provider.current_version_id,
  };
}

/** Sets a version's status directly (the API has no way to; custom provider versions can be pending or failed). */
export async function setVersionStatus(db: Db, versionId: string, status: string) {
  await db.updateTable("provider_versions").set({ status }).where("id", "=", versionId).execute();
}

/** Adds a version row to a provider (for providers seeded with seedCatalogProvider, which have none). */
export async function seedProviderVersion(
  db: Db,
  providerId: string,
  options: { version?: string; status?: string; config_schema?: JsonObject; current?: boolean } = {},
) {
  const id = newId("prv");
  await db
    .insertInto("provider_versions")
    .values({
      id,
      provider_id: providerId,
      version: options.version ?? "1.0.0",
      status: options.status ?? "released",
      runtime: JSON.stringify({ type: "stdio", command: "node", args: ["server.js"] }),
      config_schema: JSON.stringify(options.config_schema ?? EMPTY_CONFIG_SCHEMA),
      tools: "[]",
    })
    .execute();
  if (options.current ?? true) {
    await db.updateTable("providers").set({ current_version_id: id }).where("id", "=", providerId).execute();
  }
  return id;
}

export async function countRows(
  db: Db,
  table:
    | "provider_deployments"
    | "provider_configs"
    | "provider_config_vaults"
    | "provider_auth_credentials"
    | "provider_auth_configs"
    | "provider_auth_exports"
    | "provider_auth_imports",
  where: { column: "provider_deployment_id" | "instance_id"; value: string } | undefined = undefined,
): Promise<number> {
  let query = db.selectFrom(table).select(db.fn.countAll<string>().as("n"));
  if (where) query = query.where(where.column, "=", where.value);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/** Every row of every table in the public schema, as JSON text per table (for looking for plaintext). */
export async function dumpAllTables(db: Db): Promise<Record<string, string>> {
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`.execute(db);
  const out: Record<string, string> = {};
  for (const { table_name } of tables.rows) {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table_name)}`.execute(db);
    out[table_name] = JSON.stringify(rows.rows);
  }
  return out;
}

export type CustomTestServer = StartedTestServer;

/**
 * startTestServer with a chosen body limit (the production default is 1 MiB; startTestServer's is 64 KiB,
 * which is too small to reach the 64 KiB config data limit).
 */
export const startCustomServer = (options: { bodyLimitBytes?: number } = {}) => startTestServer(options);
