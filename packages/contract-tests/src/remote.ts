import { createApiKey, createInstance, type Db, loadConfig, openMigratedDatabase } from "@toolplane/server";
import type { RunningServer, Tenant } from "./server.ts";

/**
 * A server that is already running: ours (on PostgreSQL, or a build started elsewhere) or another implementation
 * of the spec. The suites act as two tenants, so they need either two API keys of two different instances, or
 * the server's PostgreSQL database, in which the runner creates both tenants itself, as it does in-process.
 */
export interface RemoteTarget {
  baseUrl: string;
  apiKey?: string;
  /** A key of a second instance: its rows must be 404 for the first. */
  otherApiKey?: string;
  /**
   * Our server's PostgreSQL database. With it the runner creates the two tenants and the suites can seed what no
   * API creates yet (catalog rows); without it those suites fail with a message saying so.
   */
  databaseUrl?: string;
  /** The server's JSON body limit, for the 413 checks (default: our server's default). */
  bodyLimitBytes?: number;
}

export const TWO_TENANTS_NEEDED =
  "--base-url needs two API keys of two different instances (--api-key and --other-api-key: the suites check that " +
  "one instance's ids answer 404 to the other), or --database-url with our server on PostgreSQL (the runner then " +
  "creates both). With our server: `pnpm keys create --new-instance contract-a` and again for contract-b.";

export async function connectToServer(target: RemoteTarget): Promise<RunningServer> {
  const url = target.baseUrl.replace(/\/+$/, "");
  const bodyLimitBytes = target.bodyLimitBytes ?? loadConfig({}).bodyLimitBytes;
  if (!target.databaseUrl) {
    if (!target.apiKey || !target.otherApiKey) throw new Error(TWO_TENANTS_NEEDED);
    const tenants: [Tenant, Tenant] = [
      { name: "api-key", instanceId: "(unknown: no --database-url)", apiKey: target.apiKey },
      { name: "other-api-key", instanceId: "(unknown: no --database-url)", apiKey: target.otherApiKey },
    ];
    await Promise.all(tenants.map((t) => assertKeyAccepted(url, t)));
    return { url, db: withoutDatabase(), bodyLimitBytes, tenants, close: async () => {} };
  }
  // Migrating is a no-op on the server's own, already migrated database; the data directory is unused.
  const database = await openMigratedDatabase({ databaseUrl: target.databaseUrl, dataDir: "" });
  try {
    const tenant = async (name: string): Promise<Tenant> => {
      const instanceId = await createInstance(database.db, name);
      const { key } = await createApiKey(database.db, instanceId, "contract tests");
      return { name, instanceId, apiKey: key };
    };
    const tenants: [Tenant, Tenant] = [await tenant("contract-a"), await tenant("contract-b")];
    await Promise.all(tenants.map((t) => assertKeyAccepted(url, t)));
    return { url, db: database.db, bodyLimitBytes, tenants, close: () => database.close() };
  } catch (err) {
    await database.close();
    throw err;
  }
}

/** Fails the run at once, with a message that says why, instead of in every check of every suite. */
async function assertKeyAccepted(url: string, tenant: Tenant): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`${url}/provider-groups?limit=1`, {
      headers: { authorization: `Bearer ${tenant.apiKey}` },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new Error(`${url} does not answer: ${(err as Error).cause ?? err}`);
  }
  await response.body?.cancel();
  if (response.status === 401) throw new Error(`${url} refused the key given as ${tenant.name} (401)`);
}

/** What suites get as `ctx.db` when there is none: any use says which option is missing. */
function withoutDatabase(): Db {
  return new Proxy({} as Db, {
    get(_target, property) {
      if (property === "then") return undefined; // not a thenable
      throw new Error(
        "this suite seeds rows through the server's database (rows no API creates yet): pass --database-url " +
          "with the server's PostgreSQL URL to run it",
      );
    },
  });
}
