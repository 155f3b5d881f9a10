import type { Console } from "node:console";
import { parseArgs } from "node:util";
import { createApiKey, createInstance, displayPrefix, listApiKeys, revokeApiKey } from "../auth/api-keys.ts";
import { loadCatalog, readCatalog } from "../catalog/loader.ts";
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
  secrets rotate re-encrypts every stored secret with the first key of TOOLPLANE_SECRET_KEY (after adding a
                 new key in front of the old ones); the old key can be removed afterwards

--json prints the result as one JSON document on stdout instead (errors stay text on stderr, with the same exit
codes), for scripts: keys create {id, instance_id, name, prefix, key, …}, keys list and catalog list an array,
keys revoke the revoked key, catalog load and secrets rotate a count.

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
  json?: boolean;
}

/** With --json, the value as JSON on stdout; else the human form. */
type Output = (value: unknown, human: () => void) => void;

async function dispatch(positionals: string[], values: Options, context: CommandContext, out: Console) {
  const { db } = context;
  const [group, command, arg] = positionals;
  const output: Output = (value, human) => (values.json ? out.log(JSON.stringify(value, null, 2)) : human());
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
