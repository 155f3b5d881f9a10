import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { createPgConfig } from "@electric-sql/pglite/node-postgres";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { type ChangeFeed, LocalWrites, PGliteChangeFeed, PostgresChangeFeed } from "./changes.ts";
import type { Database } from "./schema.ts";

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  kind: "pglite" | "postgres";
  /** The connection pool behind `db` (PGlite's has its one connection): its counts are exported as metrics. */
  pool: pg.Pool;
  /** What the database announces and what this process writes (see changes.ts). */
  changes: ChangeFeed;
  close(): Promise<void>;
}

export type DatabaseTarget =
  | { kind: "postgres"; url: string; poolSize?: number }
  | { kind: "pglite"; dataDir: string }
  /** An already-open PGlite (tests load a migrated snapshot into memory). */
  | { kind: "pglite-instance"; pglite: PGlite };

/**
 * PGlite keeps shared_buffers inside the process (the data directory's default is 128MB, touched at start); one
 * connection in one process needs far less, and the kernel's page cache still holds the files. 16MB cut the
 * idle server's RSS by ~130 MB.
 */
const PGLITE_START_PARAMS = [...PGlite.defaultStartParams, "-c", "shared_buffers=16MB"];

/**
 * Each distinct parameterised query text becomes a named prepared statement on every connection that runs it, so
 * the database plans it once per connection instead of on every execution: planning was 0.4 ms of a 0.5 ms session
 * lookup on PostgreSQL, and 1.1 ms of the 1.3 ms deployment GET in PGlite (0.30 ms prepared). Queries are built
 * by Kysely, so the set of texts is bounded; past MAX_PREPARED texts the rest run unnamed.
 */
const MAX_PREPARED = 2_000;
const statementNames = new Map<string, string>();

class PreparingClient extends pg.Client {
  /** Statements this connection prepares again under a new name (see `replaceStale`). */
  private readonly renamed = new Map<string, string>();

  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // The pool listens for `error` only on idle clients. When the server goes away while a client is checked out
    // (postmaster killed, `pg_ctl restart` under load), the client emits `error` with no listener, which crashed
    // the process. The query in flight is rejected with the same error (the request answers 503), and the pool
    // discards the client on release because it is no longer queryable, so here there is nothing left to do.
    this.on("error", () => {});
  }

  // biome-ignore lint/suspicious/noExplicitAny: forwards pg's overloaded query() as is
  override query(...args: any[]): any {
    const [text, values] = args;
    if (typeof text === "string" && Array.isArray(values) && values.length > 0 && typeof args[2] !== "function") {
      let name = this.renamed.get(text) ?? statementNames.get(text);
      if (!name && statementNames.size < MAX_PREPARED) {
        name = `tp_${statementNames.size}`;
        statementNames.set(text, name);
      }
      if (name) {
        const prepared = name;
        return super.query({ name, text, values }).catch((error: unknown) => this.replaceStale(text, prepared, error));
      }
    }
    // biome-ignore lint/suspicious/noExplicitAny: see above
    return (super.query as (...a: any[]) => any)(...args);
  }

  /**
   * A migration run by another process can change a table under one of this connection's prepared statements
   * ("cached plan must not change result type"). That request fails; the connection prepares the statement again
   * under a new name on its next use (the old one cannot be dropped inside an aborted transaction).
   */
  private replaceStale(text: string, name: string, error: unknown): never {
    if ((error as { code?: string }).code === "0A000") this.renamed.set(text, `${name}_${this.renamed.size + 1}`);
    throw error;
  }
}

/** How long opening a PostgreSQL connection may take before the request fails as unavailable (503). */
export const DATABASE_CONNECT_TIMEOUT_MS = 5_000;
/**
 * How long a query may wait in the pool's queue while every connection is busy. This is load, not an outage, so
 * it is bounded far more loosely: with one bound for both, a burst of 1,000 MCP clients on 10 connections turned
 * 102–269 of its requests into 503s while the database was healthy. During an outage the queue does not grow:
 * each waiting request gets a connection attempt of its own, which fails within DATABASE_CONNECT_TIMEOUT_MS.
 */
export const DATABASE_QUEUE_TIMEOUT_MS = 30_000;

/** A pooled PostgreSQL connection whose opening is bounded by DATABASE_CONNECT_TIMEOUT_MS on its own. */
class PostgresClient extends PreparingClient {
  constructor(config?: pg.ClientConfig) {
    super({ ...config, connectionTimeoutMillis: DATABASE_CONNECT_TIMEOUT_MS });
  }
}

/** One data layer for both engines: the same Kysely queries and SQL migrations run on PGlite and PostgreSQL. */
export async function openDatabase(target: DatabaseTarget): Promise<DatabaseHandle> {
  if (target.kind === "postgres") {
    const pool = new pg.Pool({
      connectionString: target.url,
      max: target.poolSize ?? 10,
      Client: PostgresClient,
      // pg's default is to wait forever. pg-pool applies this bound to both queueing and connecting; the client
      // applies the shorter DATABASE_CONNECT_TIMEOUT_MS to connecting. keepAlive notices a server that vanished
      // without closing the socket.
      connectionTimeoutMillis: DATABASE_QUEUE_TIMEOUT_MS,
      keepAlive: true,
    });
    // An idle pooled connection the server ends (restart, failover, a dropped database) is emitted here; the pool
    // has already discarded it and the next query opens a new one. Unhandled, it would crash the process.
    pool.on("error", () => {});
    const writes = new LocalWrites();
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [writes] });
    const changes = new PostgresChangeFeed(
      { connectionString: target.url, connectionTimeoutMillis: DATABASE_CONNECT_TIMEOUT_MS },
      writes,
    );
    return {
      db,
      kind: "postgres",
      pool,
      changes,
      close: async () => {
        await changes.close();
        await db.destroy();
      },
    };
  }
  let pglite: PGlite;
  let unlock = () => {};
  if (target.kind === "pglite") {
    mkdirSync(target.dataDir, { recursive: true, mode: 0o700 });
    unlock = lockDataDir(target.dataDir);
    try {
      pglite = await PGlite.create(target.dataDir, { startParams: PGLITE_START_PARAMS });
    } catch (err) {
      unlock();
      throw err;
    }
  } else {
    pglite = target.pglite;
  }
  // PGlite through its node-postgres adapter: the same driver (and type parsing, and prepared statements) as
  // PostgreSQL. It is one connection, so the pool has one client and queries wait for a transaction to finish.
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, Client: PreparingClient });
  const writes = new LocalWrites();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [writes] });
  const changes = new PGliteChangeFeed(pglite, writes);
  return {
    db,
    kind: "pglite",
    pool,
    changes,
    close: async () => {
      await changes.close();
      await db.destroy();
      if (!pglite.closed) await pglite.close();
      unlock();
    },
  };
}

/** Another live process holds the PGlite data directory (the CLI then asks that server, see cli/admin-socket.ts). */
export class DataDirInUseError extends Error {
  override name = "DataDirInUseError";
}

/**
 * PGlite is one process's database: a second process opening the same directory would corrupt it. A pid file
 * makes the second one (a CLI next to a running server, say) stop with a clear message instead.
 */
function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, "toolplane.pid");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx", mode: 0o600 });
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number(readFileSync(file, "utf8"));
      if (owner && owner !== process.pid && isAlive(owner)) {
        throw new DataDirInUseError(
          `The embedded database in ${dataDir} is in use by process ${owner} (a running server?). ` +
            "Stop it first, or share one PostgreSQL server between processes with DATABASE_URL.",
        );
      }
      rmSync(file, { force: true }); // left by a process that is gone
    }
  }
  throw new Error(`Could not lock ${dataDir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
