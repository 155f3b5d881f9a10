import type { Console } from "node:console";
import { parseArgs } from "node:util";
import { createApiKey, createInstance, displayPrefix, listApiKeys, revokeApiKey } from "../auth/api-keys.ts";
import { loadCatalog, readCatalog } from "../catalog/loader.ts";
import { type ImportEvent, importServers } from "../catalog/registry/import.ts";
import type { Db } from "../db/database.ts";
import { rotateSecrets } from "../secrets/rotate.ts";
import type { SecretBox } from "../secrets/secret-box.ts";

export const USAGE = `Usage: toolplane keys|catalog|secrets <command> [--json]

  keys create [--instance <ins_id> | --new-instance <name>] [--name <name>]
                 creates an API key (for the only instance when there is one) and prints it once
  keys list      lists keys: id, instance, prefix, name, created, last used, revoked
  keys revoke <key_id | tp_<prefix>_… | prefix | key>
                 revokes a key, named in any form keys list prints (or the key itself); requests with it get 401
                 within 5 seconds

  catalog list   lists catalog providers with the ids a deployment needs: provider, versions, auth methods
  catalog load   (re)loads the catalog directories into the database (the server also does it at start)
  catalog import <server.json | directory | registry URL> [--updated-since <ISO date>] [--full]
                 imports MCP Registry servers (schema 2025-12-11) as catalog providers: a file, every .json file
                 of a directory, or a registry's read API (GET <url>/v0.1/servers?version=latest, all pages). A
                 registry import asks only for what changed since the last one (recorded in the database);
                 --updated-since overrides that, --full reads everything. Idempotent; prints one line per server
                 (skipped ones with the reason) and a summary
  secrets rotate re-encrypts every stored secret with the first key of TOOLPLANE_SECRET_KEY (after adding a
                 new key in front of the old ones); the old key can be removed afterwards

--json prints the result as one JSON document on stdout instead (errors stay text on stderr, with the same exit
codes), for scripts: keys create {id, instance_id, name, prefix, key, …}, keys list and catalog list an array,
keys revoke the revoked key, catalog load and secrets rotate a count, catalog import its summary.

Uses the same DATABASE_URL / TOOLPLANE_DATA_DIR / TOOLPLANE_CATALOG_DIRS as the server. While a server runs on
the embedded database, the command runs inside that server (through its admin socket), with its settings.`;

/** What a command runs against: the CLI's own database connection, or a running server's (admin socket). */
export interface CommandContext {
  db: Db;
  catalogDirs: string[];
  secrets: () => SecretBox;
}

/** The database a command needs, opened only once the arguments are known to be valid; `close` ends it. */
export type OpenContext = () => Promise<{ context: CommandContext; close(): Promise<void> }>;

/**
 * Runs one CLI command and returns its exit status; everything it prints goes through `out` (the process's console,
 * or one that collects the output to send back over the admin socket).
 */
export async function runCommand(argv: string[], open: OpenContext, out: Console): Promise<number> {
  const parsed = (() => {
    try {
      return parseArgs({
        args: argv,
        allowPositionals: true,
        options: {
          instance: { type: "string" },
          "new-instance": { type: "string" },
          name: { type: "string" },
          "updated-since": { type: "string" },
          full: { type: "boolean", default: false },
          json: { type: "boolean", default: false },
        },
      });
    } catch (err) {
      out.error(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
      return undefined;
    }
  })();
  const [group, command] = parsed?.positionals ?? [];
  if (!parsed || !["keys", "catalog", "secrets"].includes(group ?? "") || !command) {
    if (parsed) out.error(USAGE);
    return 2;
  }
  const { context, close } = await open();
  try {
    return await dispatch(parsed.positionals, parsed.values, context, out);
  } finally {
    await close();
  }
}

interface Options {
  instance?: string;
  "new-instance"?: string;
  name?: string;
  "updated-since"?: string;
  full?: boolean;
  json?: boolean;
}

/** With --json, the value as JSON on stdout; else the human form. */
type Output = (value: unknown, human: () => void) => void;

async function dispatch(positionals: string[], values: Options, context: CommandContext, out: Console) {
  const { db } = context;
  const [group, command, arg] = positionals;
  const output: Output = (value, human) => (values.json ? out.log(JSON.stringify(value, null, 2)) : human());
  if (group === "catalog" && command === "import") return await importCommand(db, arg, values, output, out);
  if (group === "catalog") return await catalogCommand(db, command ?? "", context.catalogDirs, output, out);
  if (group === "secrets" && command === "rotate") {
    const reencrypted = await rotateSecrets(db, context.secrets());
    output({ reencrypted }, () => out.log(`Re-encrypted ${reencrypted} secrets with the primary key.`));
    return 0;
  }
  if (group === "keys" && command === "create") {
    let instanceId = values.instance;
    if (values["new-instance"]) instanceId = await createInstance(db, values["new-instance"]);
    if (!instanceId) {
      const instances = await db.selectFrom("instances").select("id").limit(2).execute();
      if (instances.length !== 1 || !instances[0]) {
        out.error(
          instances.length
            ? "Several instances exist: pass --instance <ins_id>."
            : "No instance yet: pass --new-instance <name>.",
        );
        return 2;
      }
      instanceId = instances[0].id;
    }
    const exists = await db.selectFrom("instances").select("id").where("id", "=", instanceId).executeTakeFirst();
    if (!exists) {
      out.error(`No instance ${instanceId}.`);
      return 2;
    }
    const { key, summary } = await createApiKey(db, instanceId, values.name ?? null);
    output({ ...summary, key }, () =>
      out.log(`Created key ${summary.id} for instance ${instanceId}. It is shown only now:\n${key}`),
    );
    return 0;
  }
  if (group === "keys" && command === "list") {
    const keys = await listApiKeys(db);
    output(keys, () =>
      out.table(
        keys.map((k) => ({
          id: k.id,
          instance: k.instance_id,
          prefix: displayPrefix(k.prefix),
          name: k.name ?? "",
          created: k.created_at.toISOString(),
          last_used: k.last_used_at?.toISOString() ?? "",
          revoked: k.revoked_at?.toISOString() ?? "",
        })),
      ),
    );
    return 0;
  }
  if (group === "keys" && command === "revoke" && arg) {
    const revoked = await revokeApiKey(db, arg);
    if (!revoked) {
      out.error(`No active key ${arg}.`);
      return 1;
    }
    output(revoked, () => out.log(`Revoked key ${revoked.id} (${displayPrefix(revoked.prefix)}).`));
    return 0;
  }
  out.error(USAGE);
  return 2;
}

async function catalogCommand(db: Db, command: string, dirs: string[], output: Output, out: Console) {
  if (command === "load") {
    const ids = await loadCatalog(db, readCatalog(dirs));
    output({ loaded: ids.size, dirs }, () => out.log(`Loaded ${ids.size} catalog providers from ${dirs.join(", ")}.`));
    return 0;
  }
  if (command !== "list") {
    out.error(USAGE);
    return 2;
  }
  const rows = await db
    .selectFrom("providers as p")
    .leftJoin("provider_versions as v", "v.id", "p.current_version_id")
    .select(["p.id", "p.slug", "p.name", "v.id as version_id", "v.version"])
    .where("p.instance_id", "is", null)
    .orderBy("p.slug")
    .execute();
  const methods = await db.selectFrom("provider_auth_methods").select(["provider_id", "id", "type"]).execute();
  const providers = rows.map((r) => ({
    slug: r.slug,
    name: r.name,
    provider_id: r.id,
    current_version: r.version_id ? { id: r.version_id, version: r.version } : null,
    auth_methods: methods.filter((m) => m.provider_id === r.id).map((m) => ({ id: m.id, type: m.type })),
  }));
  output(providers, () =>
    out.table(
      providers.map((p) => ({
        ...p,
        current_version: p.current_version ? `${p.current_version.version} (${p.current_version.id})` : "",
        auth_methods: p.auth_methods.map((m) => `${m.type} ${m.id}`).join(", "),
      })),
    ),
  );
  return 0;
}

const OUTCOME_MARK: Record<ImportEvent["outcome"], string> = {
  provider_added: "+ new provider",
  version_added: "+ new version ",
  version_updated: "~ updated     ",
  unchanged: "= unchanged   ",
  skipped: "! skipped     ",
};

/** `catalog import`: `source` is a URL or an absolute path (cli.ts resolves a relative one where it was typed). */
async function importCommand(db: Db, source: string | undefined, values: Options, output: Output, out: Console) {
  if (!source) {
    out.error(USAGE);
    return 2;
  }
  const since = values["updated-since"];
  const updatedSince = since === undefined ? undefined : new Date(since);
  if (updatedSince && Number.isNaN(updatedSince.getTime())) {
    out.error(`--updated-since ${since} is not a date (use ISO 8601, e.g. 2026-11-01T00:00:00Z).`);
    return 2;
  }
  const summary = await importServers(db, source, {
    ...(updatedSince ? { updatedSince } : {}),
    full: values.full === true,
    onProgress: (e) => {
      if (values.json) return;
      const where = e.slug ? ` → ${e.slug} (${e.provider_id})` : "";
      out.log(`${OUTCOME_MARK[e.outcome]} ${e.name} ${e.version}${where}${e.reason ? `: ${e.reason}` : ""}`);
    },
  });
  output(summary, () => {
    out.log(
      `Read ${summary.read} servers from ${source}${summary.updated_since ? ` (updated since ${summary.updated_since})` : ""}: ` +
        `${summary.providers_added} new providers, ${summary.versions_added} new versions, ` +
        `${summary.versions_updated} updated, ${summary.unchanged} unchanged, ${summary.skipped.length} skipped.`,
    );
    if (summary.next_updated_since)
      out.log(`The next import asks for servers updated since ${summary.next_updated_since}.`);
  });
  return 0;
}
