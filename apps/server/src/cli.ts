#!/usr/bin/env -S npx tsx
import { parseArgs } from "node:util";
import { createApiKey, createInstance, listApiKeys, revokeApiKey } from "./auth/api-keys.ts";
import { openMigratedDatabase } from "./bootstrap.ts";
import { loadConfig } from "./config.ts";

const USAGE = `Usage: toolplane keys <command>

  keys create [--instance <ins_id> | --new-instance <name>] [--name <name>]
                 creates an API key (for the only instance when there is one) and prints it once
  keys list      lists keys: id, instance, prefix, name, created, last used, revoked
  keys revoke <key_id | prefix>
                 revokes a key; requests with it get 401 within 5 seconds

Uses the same DATABASE_URL / TOOLPLANE_DATA_DIR as the server.`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { instance: { type: "string" }, "new-instance": { type: "string" }, name: { type: "string" } },
  });
  const [group, command, arg] = positionals;
  if (group !== "keys" || !command) {
    console.error(USAGE);
    return 2;
  }
  const database = await openMigratedDatabase(loadConfig());
  const { db } = database;
  try {
    if (command === "create") {
      let instanceId = values.instance;
      if (values["new-instance"]) instanceId = await createInstance(db, values["new-instance"]);
      if (!instanceId) {
        const instances = await db.selectFrom("instances").select("id").limit(2).execute();
        if (instances.length !== 1 || !instances[0]) {
          console.error(
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
        console.error(`No instance ${instanceId}.`);
        return 2;
      }
      const { key, summary } = await createApiKey(db, instanceId, values.name ?? null);
      console.log(`Created key ${summary.id} for instance ${instanceId}. It is shown only now:\n${key}`);
      return 0;
    }
    if (command === "list") {
      const keys = await listApiKeys(db);
      console.table(
        keys.map((k) => ({
          id: k.id,
          instance: k.instance_id,
          prefix: `tp_${k.prefix}_…`,
          name: k.name ?? "",
          created: k.created_at.toISOString(),
          last_used: k.last_used_at?.toISOString() ?? "",
          revoked: k.revoked_at?.toISOString() ?? "",
        })),
      );
      return 0;
    }
    if (command === "revoke" && arg) {
      const revoked = await revokeApiKey(db, arg);
      if (!revoked) {
        console.error(`No active key ${arg}.`);
        return 1;
      }
      console.log(`Revoked key ${revoked.id} (tp_${revoked.prefix}_…).`);
      return 0;
    }
    console.error(USAGE);
    return 2;
  } finally {
    await database.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
