import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  bundledSpec,
  createApiKey,
  createApp,
  createHttpServer,
  createInstance,
  createLogger,
  type Db,
  loadConfig,
  loadSecretKeys,
  openMigratedDatabase,
  SecretBox,
} from "@toolplane/server";
import { freePort } from "./prism.ts";

export interface Tenant {
  name: string;
  instanceId: string;
  apiKey: string;
}

export interface RunningServer {
  url: string;
  db: Db;
  bodyLimitBytes: number;
  /** Two instances, each with its own key: the suite acts as the first, the second owns "someone else's" rows. */
  tenants: [Tenant, Tenant];
  close(): Promise<void>;
}

/**
 * The real server, in-process: a fresh embedded PGlite database in a temporary data directory (migrated, the
 * built-in catalog loaded), the Express app with a silent logger, listening on 127.0.0.1 at `port` (default: a free
 * one), which is also its public URL, as the server's own default is: the sessions' `connection_url` works as given.
 */
export async function startToolplane(options: { port?: number } = {}): Promise<RunningServer> {
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), "toolplane-contract-"));
  // Also on an interrupted run (SIGINT exits the process without the finally blocks).
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  process.once("exit", removeDataDir);
  const defaults = loadConfig({});
  const database = await openMigratedDatabase({ dataDir, databaseUrl: undefined });
  let server: Server | undefined;
  try {
    const app = createApp({
      db: database.db,
      spec: bundledSpec,
      logger: createLogger(process.env.CONTRACT_SERVER_LOG_LEVEL ?? "silent"),
      publicUrl: url,
      bodyLimitBytes: defaults.bodyLimitBytes,
      // As the embedded default does: a key generated into the (temporary) data directory.
      secrets: new SecretBox(loadSecretKeys(undefined, dataDir)),
    });
    // The HTTP server `main` listens with (its timeouts, its answers to broken requests and its lingering close).
    const listening = createHttpServer(app).listen(port, "127.0.0.1");
    server = listening;
    await new Promise<void>((resolve, reject) => {
      listening.once("listening", resolve);
      listening.once("error", reject);
    });

    const tenant = async (name: string): Promise<Tenant> => {
      const instanceId = await createInstance(database.db, name);
      const { key } = await createApiKey(database.db, instanceId, "contract tests");
      return { name, instanceId, apiKey: key };
    };
    const tenants: [Tenant, Tenant] = [await tenant("contract-a"), await tenant("contract-b")];

    return {
      url,
      db: database.db,
      bodyLimitBytes: defaults.bodyLimitBytes,
      tenants,
      close: async () => {
        listening.closeAllConnections();
        await new Promise<void>((resolve) => listening.close(() => resolve()));
        await database.close();
        removeDataDir();
        process.removeListener("exit", removeDataDir);
      },
    };
  } catch (err) {
    server?.closeAllConnections();
    server?.close();
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
