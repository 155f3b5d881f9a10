import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { sql, type Transaction } from "kysely";
import { parse } from "yaml";
import type { Db } from "../db/database.ts";
import type { AuthMethodScope, CatalogTool, Database, JsonObject, OAuthEndpoints, Runtime } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
import { type StoredServerVariant, storedVariants } from "../resources/servers/service.ts";

/** The catalog shipped with the server (`<repo>/catalog`). */
export const BUILTIN_CATALOG_DIR = fileURLToPath(new URL("../../../../catalog/", import.meta.url));
const CATALOG_LOCK = 724_312;
const CATALOG_SCHEMA = join(BUILTIN_CATALOG_DIR, "catalog.schema.json");

export interface CatalogEntry {
  slug: string;
  name: string;
  description?: string | null;
  metadata?: JsonObject;
  publisher: { slug: string; name: string; description?: string | null; image_url?: string | null };
  current_version: string;
  versions: {
    version: string;
    status: "released" | "deprecated";
    runtime: Runtime;
    config_schema: JsonObject;
    tools: CatalogTool[];
  }[];
  auth_methods: {
    key: string;
    type: "oauth" | "token" | "mcp_oauth";
    name: string;
    description?: string | null;
    input_schema?: JsonObject;
    scopes?: { scope: string; name?: string | null; description?: string | null }[];
    oauth?: OAuthEndpoints;
  }[];
}

/** What an OAuth auth method imports and exports: the token set. */
export const OAUTH_TOKEN_SCHEMA: JsonObject = {
  type: "object",
  properties: {
    access_token: { type: "string", minLength: 1 },
    refresh_token: { type: ["string", "null"] },
    token_type: { type: ["string", "null"] },
    scope: { type: ["string", "null"] },
    expires_at: { type: ["string", "null"], format: "date-time" },
  },
  required: ["access_token"],
  additionalProperties: false,
};

/** Reads and validates every `*.yaml` of the directories; a bad file fails with its name and each problem. */
export function readCatalog(dirs: string[]): CatalogEntry[] {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  (addFormatsModule as unknown as (a: Ajv2020) => void)(ajv);
  const validate = ajv.compile(JSON.parse(readFileSync(CATALOG_SCHEMA, "utf8")));
  const entries: CatalogEntry[] = [];
  const seen = new Map<string, string>();
  for (const path of catalogFiles(dirs)) {
    const entry = parse(readFileSync(path, "utf8")) as CatalogEntry;
    if (!validate(entry)) {
      const problems = (validate.errors ?? [])
        .map((e) => {
          const extra = e.keyword === "additionalProperties" ? ` (${String(e.params.additionalProperty)})` : "";
          return `  ${e.instancePath || "/"} ${e.message}${extra}`;
        })
        .join("\n");
      throw new Error(`Invalid catalog entry ${path}:\n${problems}`);
    }
    if (!entry.versions.some((v) => v.version === entry.current_version)) {
      throw new Error(
        `Invalid catalog entry ${path}: current_version ${entry.current_version} is not among its versions`,
      );
    }
    const other = seen.get(entry.slug);
    if (other) throw new Error(`Catalog slug "${entry.slug}" is declared twice: ${other} and ${path}`);
    seen.set(entry.slug, path);
    entries.push(entry);
  }
  return entries;
}

const catalogFiles = (dirs: string[]) =>
  dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort()
      .map((f) => join(dir, f)),
  );

/**
 * Loads the catalog of the directories unless the database last loaded exactly these files with this loader
 * (reading and upserting it was ~0.3 s of CPU on every start). `force` reloads anyway (after a migration).
 * Returns whether it loaded.
 */
export async function syncCatalog(db: Db, dirs: string[], force = false): Promise<boolean> {
  const hash = createHash("sha256");
  // The loader's own source is part of the digest: a change to how entries map to rows reloads them.
  for (const path of [fileURLToPath(import.meta.url), CATALOG_SCHEMA, ...catalogFiles(dirs)]) {
    hash.update(`${path}\0`).update(readFileSync(path)).update("\0");
  }
  const digest = hash.digest("hex");
  if (!force) {
    const state = await db.selectFrom("catalog_state").select("digest").executeTakeFirst();
    if (state?.digest === digest) return false;
  }
  await loadCatalog(db, readCatalog(dirs), digest);
  return true;
}

/**
 * Upserts the entries into the catalog tables in one transaction, matching by slug (versions by version,
 * auth methods by key) so ids stay stable across restarts and replicas. Returns the provider ids by slug.
 * `digest` is recorded for `syncCatalog` when the entries are the whole catalog; any other load clears it, so
 * the next start reloads the full catalog over it.
 */
export async function loadCatalog(db: Db, entries: CatalogEntry[], digest?: string): Promise<Map<string, string>> {
  return db.transaction().execute(async (trx) => {
    await lockCatalog(trx);
    await trx.deleteFrom("catalog_state").execute();
    if (digest) await trx.insertInto("catalog_state").values({ digest, loaded_at: new Date() }).execute();
    const ids = new Map<string, string>();
    const now = new Date();
    for (const entry of entries) ids.set(entry.slug, await upsertEntry(trx, entry, now));
    return ids;
  });
}

/** Serialises writers of the catalog tables (the loader and registry imports) across processes. */
export const lockCatalog = (trx: Transaction<Database>) =>
  sql`select pg_advisory_xact_lock(${CATALOG_LOCK})`.execute(trx);

/**
 * Upserts one entry (publisher, provider, its versions, auth methods, listing and server) by slug; versions the
 * entry does not name stay as they are. Returns the provider's id.
 */
export async function upsertEntry(trx: Transaction<Database>, entry: CatalogEntry, now: Date): Promise<string> {
  const publisherValues = {
    name: entry.publisher.name,
    description: entry.publisher.description ?? null,
    image_url: entry.publisher.image_url ?? null,
    updated_at: now,
  };
  const publisher = await trx
    .selectFrom("publishers")
    .select("id")
    .where("instance_id", "is", null)
    .where("slug", "=", entry.publisher.slug)
    .executeTakeFirst();
  const publisherId = publisher?.id ?? newId("pub");
  if (publisher) await trx.updateTable("publishers").set(publisherValues).where("id", "=", publisherId).execute();
  else {
    await trx
      .insertInto("publishers")
      .values({
        id: publisherId,
        instance_id: null,
        slug: entry.publisher.slug,
        ...publisherValues,
        created_at: now,
      })
      .execute();
  }

  const providerValues = {
    name: entry.name,
    description: entry.description ?? null,
    publisher_id: publisherId,
    metadata: JSON.stringify(entry.metadata ?? {}),
    updated_at: now,
  };
  const provider = await trx
    .selectFrom("providers")
    .select("id")
    .where("instance_id", "is", null)
    .where("slug", "=", entry.slug)
    .executeTakeFirst();
  const providerId = provider?.id ?? newId("pro");
  if (provider) await trx.updateTable("providers").set(providerValues).where("id", "=", providerId).execute();
  else {
    await trx
      .insertInto("providers")
      .values({ id: providerId, instance_id: null, slug: entry.slug, ...providerValues, created_at: now })
      .execute();
  }

  const versionIds = new Map<string, string>();
  for (const v of entry.versions) {
    const id = await upsertVersion(trx, providerId, v, now);
    versionIds.set(v.version, id);
  }
  const currentVersionId = versionIds.get(entry.current_version) ?? null;
  await trx
    .updateTable("providers")
    .set({ current_version_id: currentVersionId })
    .where("id", "=", providerId)
    .execute();

  for (const m of entry.auth_methods) {
    const existing = await trx
      .selectFrom("provider_auth_methods")
      .select(["id", "scopes"])
      .where("provider_id", "=", providerId)
      .where("key", "=", m.key)
      .executeTakeFirst();
    // Scope ids are kept for scopes that stay, so clients holding them do not break on a reload.
    const previous = new Map((existing?.scopes ?? []).map((s) => [s.scope, s.id]));
    const scopes: AuthMethodScope[] = (m.scopes ?? []).map((s) => ({
      id: previous.get(s.scope) ?? newId("pams"),
      scope: s.scope,
      name: s.name ?? null,
      description: s.description ?? null,
    }));
    const values = {
      provider_version_id: currentVersionId,
      type: m.type,
      name: m.name,
      description: m.description ?? null,
      input_schema: JSON.stringify(m.type !== "token" ? OAUTH_TOKEN_SCHEMA : (m.input_schema ?? {})),
      scopes: JSON.stringify(scopes),
      oauth: m.oauth ? JSON.stringify(m.oauth) : null,
      updated_at: now,
    };
    if (existing) await trx.updateTable("provider_auth_methods").set(values).where("id", "=", existing.id).execute();
    else {
      await trx
        .insertInto("provider_auth_methods")
        .values({ id: newId("pam"), provider_id: providerId, key: m.key, ...values, created_at: now })
        .execute();
    }
  }

  await trx
    .insertInto("provider_listings")
    .values({ id: newId("plg"), provider_id: providerId, instance_id: null, created_at: now, updated_at: now })
    .onConflict((oc) => oc.column("provider_id").doUpdateSet({ updated_at: now }))
    .execute();

  const current = entry.versions.find((v) => v.version === entry.current_version);
  const onlyOAuth = entry.auth_methods.length > 0 && entry.auth_methods.every((m) => m.type !== "token");
  const variants = storedVariants(
    current
      ? { source: serverSource(current.runtime), schema: current.config_schema, createdAt: now.toISOString() }
      : null,
    { oauthRequired: onlyOAuth },
  );
  const serverValues = {
    name: entry.name,
    description: entry.description ?? null,
    metadata: JSON.stringify(entry.metadata ?? {}),
    variants: JSON.stringify(variants),
    updated_at: now,
  };
  await trx
    .insertInto("servers")
    .values({ id: newId("srv"), instance_id: null, provider_id: providerId, ...serverValues, created_at: now })
    .onConflict((oc) => oc.column("provider_id").doUpdateSet(serverValues))
    .execute();
  return providerId;
}

/** Inserts a provider's version or updates it in place (its id stays); returns its id. */
export async function upsertVersion(
  trx: Transaction<Database>,
  providerId: string,
  v: CatalogEntry["versions"][number],
  now: Date,
): Promise<string> {
  const values = {
    status: v.status,
    runtime: JSON.stringify(v.runtime),
    config_schema: JSON.stringify(v.config_schema),
    tools: JSON.stringify(v.tools),
    updated_at: now,
  };
  const row = await trx
    .insertInto("provider_versions")
    .values({ id: newId("prv"), provider_id: providerId, version: v.version, ...values, created_at: now })
    .onConflict((oc) => oc.columns(["provider_id", "version"]).doUpdateSet(values))
    .returning("id")
    .executeTakeFirstOrThrow();
  return row.id;
}

function serverSource(runtime: Runtime): StoredServerVariant["source"] {
  return runtime.type === "remote"
    ? { type: "remote", remote: { url: runtime.url, protocol: runtime.protocol } }
    : { type: "stdio", stdio: { command: runtime.command, args: runtime.args } };
}
