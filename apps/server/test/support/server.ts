import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import { createToolplaneClient, type ToolplaneClient } from "@toolplane/client";
import { type Level, pino } from "pino";
import { createApp } from "../../src/app.ts";
import { createApiKey, createInstance } from "../../src/auth/api-keys.ts";
import type { ChangeFeed } from "../../src/db/changes.ts";
import type { Db } from "../../src/db/database.ts";
import { createHttpServer } from "../../src/http/server.ts";
import { answeredRecords } from "../../src/mcp/answered-records.ts";
import { SecretBox, type SecretKey } from "../../src/secrets/secret-box.ts";
import { bundledSpec } from "../../src/spec.ts";
import { createTestDatabase } from "./database.ts";

// A loaded test machine can take several seconds to start a stdio upstream: listings wait for it here, unless a
// test file that exercises the bound sets a short one itself (its own assignment runs after this import).
process.env.TOOLPLANE_UPSTREAM_LIST_TIMEOUT_MS ??= "30000";

export interface Tenant {
  instanceId: string;
  apiKey: string;
  client: ToolplaneClient;
}

export interface TestServer {
  url: string;
  db: Db;
  /** The key the app encrypts secrets with. */
  secretKey: SecretKey;
  /** The first tenant; most tests act as it. */
  tenant: Tenant;
  client: ToolplaneClient;
  createTenant(name?: string): Promise<Tenant>;
  /** A raw request with the first tenant's key (for bodies and headers the typed client cannot send). */
  fetch(path: string, init?: RequestInit & { auth?: boolean }): Promise<Response>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** The production default is 1 MiB; 64 KiB here unless a test needs to reach a larger limit. */
  bodyLimitBytes?: number;
  /** Keeps the app's log lines at this level and above in `logs` (to look for secrets in them). */
  logLevel?: Level;
  /**
   * Hands out links (the public URL) to this server's own port, for pages a test opens like a browser (OAuth
   * start links and callbacks). By default links are `http://127.0.0.1/…`, stable for assertions.
   */
  linksToOwnPort?: boolean;
}

export interface StartedTestServer extends TestServer {
  /** The PGlite instance behind `db` (null on PostgreSQL): lets a test dump the raw data directory. */
  pglite: PGlite | null;
  /** The PostgreSQL database's URL (null on PGlite). */
  databaseUrl: string | null;
  /** The app's SecretBox (decrypts what the app stored). */
  secrets: SecretBox;
  /** The database's change notices the app's gateway keeps its session views by. */
  changes: ChangeFeed;
  /** Everything the app logged as raw JSON lines, when started with `logLevel` (empty otherwise). */
  logs(): string;
}

/** The real app on a real database, listening on a free 127.0.0.1 port. */
export async function startTestServer(options: TestServerOptions = {}): Promise<StartedTestServer> {
  const database = await createTestDatabase();
  const secretKey: SecretKey = { id: "test", key: randomBytes(32) };
  const secrets = new SecretBox([secretKey]);
  let logged = "";
  const logger = options.logLevel
    ? pino({ level: options.logLevel }, { write: (line: string) => (logged += line) })
    : pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const server = createHttpServer();
  server.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const app = createApp({
    db: database.db,
    spec: bundledSpec,
    logger,
    publicUrl: options.linksToOwnPort ? url : "http://127.0.0.1",
    bodyLimitBytes: options.bodyLimitBytes ?? 64 * 1024,
    secrets,
    changes: database.changes,
  });
  server.on("request", app);

  const createTenant = async (name = "tenant"): Promise<Tenant> => {
    const instanceId = await createInstance(database.db, name);
    const { key } = await createApiKey(database.db, instanceId, "test");
    return { instanceId, apiKey: key, client: createToolplaneClient({ baseUrl: url, apiKey: key, retries: 0 }) };
  };
  const tenant = await createTenant("first");

  return {
    url,
    db: database.db,
    secretKey,
    secrets,
    changes: database.changes,
    pglite: database.pglite,
    databaseUrl: database.url,
    tenant,
    client: tenant.client,
    createTenant,
    logs: () => logged,
    fetch: (path, init = {}) => {
      const headers = new Headers(init.headers);
      if (init.auth !== false) headers.set("authorization", `Bearer ${tenant.apiKey}`);
      return fetch(`${url}${path}`, { ...init, headers });
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await answeredRecords.written(); // as main.ts shuts down
      await database.close();
    },
  };
}
