import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { maskUrlCredentials } from "@toolplane/server-stubs";
import { sql, type Transaction } from "kysely";
import type { Logger } from "pino";
import type { Db } from "../../db/database.ts";
import type { Database } from "../../db/schema.ts";
import { lockCatalog, upsertEntry, upsertVersion } from "../loader.ts";
import {
  catalogEntryOf,
  OFFICIAL_META,
  type ServerDetail,
  type ServerResponse,
  serverDetailProblems,
  slugFor,
} from "./server-json.ts";

export type ImportOutcome = "provider_added" | "version_added" | "version_updated" | "unchanged" | "skipped";

export interface ImportEvent {
  name: string;
  version: string;
  outcome: ImportOutcome;
  provider_id?: string;
  slug?: string;
  /** Why a document was skipped. */
  reason?: string;
}

export interface ImportSummary {
  source: string;
  read: number;
  providers_added: number;
  versions_added: number;
  versions_updated: number;
  unchanged: number;
  skipped: ImportEvent[];
  /** The `updated_since` this run asked the registry for (null for files and full runs). */
  updated_since: string | null;
  /** What the next incremental run asks for (registries only). */
  next_updated_since: string | null;
}

export interface ImportOptions {
  /** Registries: ask for servers updated since then instead of since the last import. */
  updatedSince?: Date;
  /** Registries: ignore the recorded state and read every server. */
  full?: boolean;
  /** Called after each document. */
  onProgress?: (event: ImportEvent) => void;
  /** Registries: servers per page (the registry's own limit may be lower). */
  pageSize?: number;
}

const PAGE_TIMEOUT_MS = 30_000;
const isUrl = (source: string) => /^https?:\/\//i.test(source);

/**
 * Imports MCP servers into the catalog from a `server.json` file (or a file holding a registry response or an
 * array of either), a directory of such `.json` files, or an MCP registry's read API
 * (`GET {base}/v0.1/servers?version=latest`, following `metadata.nextCursor`). Idempotent: a version imported
 * before with the same runtime, config schema and status changes nothing; a new version is added (and becomes
 * current when the registry marks it latest, or when it sorts after the current one). A registry import records
 * the newest `updatedAt` it saw and, unless told otherwise, asks for `updated_since` that on its next run.
 */
export async function importServers(db: Db, source: string, options: ImportOptions = {}): Promise<ImportSummary> {
  const summary: ImportSummary = {
    source,
    read: 0,
    providers_added: 0,
    versions_added: 0,
    versions_updated: 0,
    unchanged: 0,
    skipped: [],
    updated_since: null,
    next_updated_since: null,
  };
  const take = async (response: ServerResponse) => {
    summary.read++;
    const event = await importOne(db, response);
    if (event.outcome === "provider_added") summary.providers_added++;
    if (event.outcome === "provider_added" || event.outcome === "version_added") summary.versions_added++;
    if (event.outcome === "version_updated") summary.versions_updated++;
    if (event.outcome === "unchanged") summary.unchanged++;
    if (event.outcome === "skipped") summary.skipped.push(event);
    options.onProgress?.(event);
  };
  if (!isUrl(source)) {
    for (const response of readLocal(source)) await take(response);
    return summary;
  }

  const base = new URL(source);
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  const key = base.href;
  const state = await db.selectFrom("registry_imports").selectAll().where("source", "=", key).executeTakeFirst();
  const since = options.updatedSince ?? (options.full ? null : (state?.updated_since ?? null));
  summary.updated_since = since?.toISOString() ?? null;
  let newest = state?.updated_since ?? null;
  for await (const page of registryPages(base, since, options.pageSize ?? 100)) {
    for (const response of page) {
      const updatedAt = response._meta?.[OFFICIAL_META]?.updatedAt;
      const at = updatedAt ? new Date(updatedAt) : null;
      if (at && !Number.isNaN(at.getTime()) && (!newest || at > newest)) newest = at;
      await take(response);
    }
  }
  // Recorded only once every page was read: a run that failed half-way starts from the same point again.
  const now = new Date();
  await db
    .insertInto("registry_imports")
    .values({ source: key, updated_since: newest, last_run_at: now })
    .onConflict((oc) => oc.column("source").doUpdateSet({ updated_since: newest, last_run_at: now }))
    .execute();
  summary.next_updated_since = newest?.toISOString() ?? null;
  return summary;
}

/** The documents of a file or of every `.json` file of a directory (in name order). */
function readLocal(path: string): ServerResponse[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => f.endsWith(".json"))
        .sort()
        .map((f) => join(path, f))
    : [path];
  return files.flatMap((file) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      throw new Error(`${file} is not JSON: ${(error as Error).message}`);
    }
    return asResponses(parsed);
  });
}

/** A `server.json`, a registry `ServerResponse` (`{server, _meta}`), a `ServerList` (`{servers}`) or an array. */
function asResponses(document: unknown): ServerResponse[] {
  if (Array.isArray(document)) return document.flatMap(asResponses);
  if (document && typeof document === "object") {
    if (Array.isArray((document as { servers?: unknown }).servers)) {
      return asResponses((document as { servers: unknown[] }).servers);
    }
    if ("server" in document) return [document as ServerResponse];
  }
  return [{ server: document as ServerDetail }];
}

async function* registryPages(base: URL, since: Date | null, pageSize: number): AsyncGenerator<ServerResponse[]> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const url = new URL("v0.1/servers", base);
    url.searchParams.set("version", "latest");
    url.searchParams.set("limit", String(pageSize));
    if (since) url.searchParams.set("updated_since", since.toISOString());
    if (cursor) url.searchParams.set("cursor", cursor);
    const response = await fetch(url, {
      headers: { accept: "application/json" },
      signal: AbortSignal.timeout(PAGE_TIMEOUT_MS),
    });
    const where = `${url.origin}${url.pathname}`;
    if (!response.ok) throw new Error(`The registry answered ${response.status} at ${where}.`);
    const body = (await response.json().catch(() => null)) as {
      servers?: unknown;
      metadata?: { nextCursor?: string | null };
    } | null;
    if (!body || !Array.isArray(body.servers)) throw new Error(`${where} did not answer an MCP registry server list.`);
    yield body.servers as ServerResponse[];
    cursor = body.metadata?.nextCursor || undefined;
    if (cursor && seen.has(cursor)) throw new Error(`The registry at ${where} handed out the same cursor twice.`);
    if (cursor) seen.add(cursor);
  } while (cursor);
}

/** Numeric-aware order of version labels (`1.10.0` after `1.9.0`). */
const compareVersions = (a: string, b: string) => a.localeCompare(b, "en", { numeric: true });

async function importOne(db: Db, response: ServerResponse): Promise<ImportEvent> {
  const server = response?.server;
  const name = typeof server?.name === "string" ? server.name : "(unnamed)";
  const version = typeof server?.version === "string" ? server.version : "(no version)";
  const skipped = (reason: string): ImportEvent => ({ name, version, outcome: "skipped", reason });
  const problems = serverDetailProblems(server);
  if (problems) return skipped(`not a valid server.json: ${problems}`);
  const meta = response._meta?.[OFFICIAL_META];

  return db.transaction().execute(async (trx) => {
    await lockCatalog(trx);
    const provider = await trx
      .selectFrom("providers as p")
      .leftJoin("provider_versions as cur", "cur.id", "p.current_version_id")
      .select(["p.id", "p.slug", "p.current_version_id", "cur.version as current"])
      .where("p.instance_id", "is", null)
      .where(sql<string>`p.metadata->>'registry_name'`, "=", name)
      .executeTakeFirst();
    const slug = provider?.slug ?? (await freeSlug(trx, name));
    const entry = catalogEntryOf(server, slug, meta?.status && meta.status !== "active" ? "deprecated" : "released");
    if (typeof entry === "string") return skipped(entry);
    const [v] = entry.versions;
    if (!v) return skipped("it has no version");
    const stored = provider
      ? await trx
          .selectFrom("provider_versions")
          .select([
            "id",
            sql<boolean>`runtime = ${JSON.stringify(v.runtime)}::jsonb
              and config_schema = ${JSON.stringify(v.config_schema)}::jsonb and status = ${v.status}`.as("same"),
          ])
          .where("provider_id", "=", provider.id)
          .where("version", "=", v.version)
          .executeTakeFirst()
      : undefined;
    const done = (outcome: ImportOutcome, providerId: string): ImportEvent => ({
      name,
      version,
      outcome,
      provider_id: providerId,
      slug,
    });
    if (provider && stored?.same) return done("unchanged", provider.id);
    if (!stored && meta?.status === "deleted") return skipped("it is deleted in the registry");

    const now = new Date();
    const isCurrent =
      !provider ||
      (stored !== undefined && stored.id === provider.current_version_id) ||
      (v.status === "released" &&
        (meta?.isLatest ?? (!provider.current || compareVersions(v.version, provider.current) >= 0)));
    if (isCurrent) {
      const providerId = await upsertEntry(trx, entry, now);
      return done(!provider ? "provider_added" : stored ? "version_updated" : "version_added", providerId);
    }
    await upsertVersion(trx, provider.id, v, now);
    return done(stored ? "version_updated" : "version_added", provider.id);
  });
}

/** The name's slug, or a hashed one when another catalog or custom provider already has it. */
async function freeSlug(trx: Transaction<Database>, name: string): Promise<string> {
  const slug = slugFor(name);
  const taken = await trx.selectFrom("providers").select("id").where("slug", "=", slug).executeTakeFirst();
  return taken ? slugFor(name, true) : slug;
}

/**
 * Runs an incremental import of a registry now and every `intervalMs` (TOOLPLANE_REGISTRY_URL), one at a time,
 * logging each summary. Replicas may all run it: the catalog lock serialises them and a second import of the same
 * versions changes nothing. `stop` waits for a run under way.
 */
export function scheduleImports(db: Db, url: string, intervalMs: number, logger: Logger): { stop(): Promise<void> } {
  const registry = maskUrlCredentials(url);
  let running: Promise<void> | null = null;
  const run = () => {
    running ??= importServers(db, url)
      .then(
        ({ skipped, ...summary }) =>
          logger.info({ ...summary, source: registry, skipped: skipped.length }, "registry import"),
        (error: unknown) => logger.warn({ registry, error: (error as Error).message }, "registry import failed"),
      )
      .finally(() => {
        running = null;
      });
  };
  run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
