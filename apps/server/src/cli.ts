#!/usr/bin/env -S npx tsx
import { resolve } from "node:path";
import { openMigratedDatabase } from "./bootstrap.ts";
import { adminSocketPath, runThroughAdminSocket } from "./cli/admin-socket.ts";
import { type OpenContext, runCommand } from "./cli/commands.ts";
import { loadConfig } from "./config.ts";
import { DataDirInUseError } from "./db/database.ts";
import { loadSecretKeys, SecretBox } from "./secrets/secret-box.ts";

// A file or directory to import is named relative to where the command was typed (pnpm runs scripts in apps/server,
// and a command sent to a running server runs in its directory): it travels as an absolute path.
const argv = process.argv
  .slice(2)
  .map((arg, i, all) =>
    i === 2 && all[0] === "catalog" && all[1] === "import" && !/^https?:\/\//i.test(arg)
      ? resolve(process.env.INIT_CWD ?? process.cwd(), arg)
      : arg,
  );
const config = (() => {
  try {
    return loadConfig();
  } catch (err) {
    console.error((err as Error).message);
    return process.exit(1);
  }
})();

/** The CLI's own connection: PostgreSQL (shared with running servers), or the embedded database when it is free. */
const openDirectly: OpenContext = async () => {
  // Migration steps go to stderr, so --json output on stdout stays one document.
  const log = { info: (fields: Record<string, unknown>, message: string) => console.error(message, fields.migration) };
  const database = await openMigratedDatabase(config, log);
  const secrets = () =>
    new SecretBox(loadSecretKeys(process.env.TOOLPLANE_SECRET_KEY, config.databaseUrl ? undefined : config.dataDir));
  return { context: { db: database.db, catalogDirs: config.catalogDirs, secrets }, close: () => database.close() };
};

/** A server holds the embedded database: the command runs inside it, through its admin socket. */
async function runInServer(inUse: DataDirInUseError): Promise<number> {
  const result = await runThroughAdminSocket(adminSocketPath(config.dataDir), argv).catch((err: unknown) => {
    throw new Error(`${inUse.message} (its admin socket did not answer: ${(err as Error).message})`);
  });
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.code;
}

try {
  process.exitCode = await runCommand(argv, openDirectly, console);
} catch (err) {
  if (err instanceof DataDirInUseError) {
    process.exitCode = await runInServer(err).catch((e: unknown) => {
      console.error((e as Error).message);
      return 1;
    });
  } else {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  }
}
