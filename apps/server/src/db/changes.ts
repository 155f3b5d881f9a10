import { randomBytes } from "node:crypto";
import type { PGlite } from "@electric-sql/pglite";
import {
  AliasNode,
  DeleteQueryNode,
  FromNode,
  InsertQueryNode,
  type KyselyPlugin,
  type OperationNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  TableNode,
  type UnknownRow,
  UpdateQueryNode,
} from "kysely";
import pg from "pg";

/** A notice's payload, or null when notices may have been missed (whatever was kept from before is suspect). */
type NoticeListener = (payload: string | null) => void;

/**
 * What the database announces (`LISTEN`/`NOTIFY`, raised by triggers) and what this process itself writes: how a
 * process keeps reads in memory without serving them after another process, or this one, changed them.
 */
export interface ChangeFeed {
  /** Whether notices are being heard right now. While false, nothing may be served from memory. */
  readonly live: boolean;
  /** Calls `listener` with every notice on `channel` from now on, and with null when notices may have been missed. */
  listen(channel: string, listener: NoticeListener): () => void;
  /**
   * Calls `listener` with the table of every insert, update, delete or merge this process sends through Kysely's
   * builder, before it runs: its own writes are known at once, before their notice comes back (raw SQL is not
   * seen; the triggers' notices cover it).
   */
  onLocalWrite(listener: (table: string) => void): () => void;
  close(): Promise<void>;
}

/** Reports the tables written by the queries it sees; attach it to the Kysely instance whose writes count. */
export class LocalWrites implements KyselyPlugin {
  private readonly listeners = new Set<(table: string) => void>();

  on(listener: (table: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  transformQuery({ node }: PluginTransformQueryArgs) {
    if (this.listeners.size > 0) {
      for (const table of writtenTables(node)) for (const listener of this.listeners) listener(table);
    }
    return node;
  }

  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}

function writtenTables(node: OperationNode): string[] {
  const target = InsertQueryNode.is(node)
    ? node.into
    : UpdateQueryNode.is(node)
      ? node.table
      : DeleteQueryNode.is(node)
        ? node.from
        : node.kind === "MergeQueryNode"
          ? (node as unknown as { into: OperationNode }).into
          : undefined;
  const names = (n: OperationNode | undefined): string[] => {
    if (!n) return [];
    if (TableNode.is(n)) return [n.table.identifier.name];
    if (AliasNode.is(n)) return names(n.node);
    if (FromNode.is(n)) return n.froms.flatMap(names);
    return [];
  };
  return names(target);
}

/** Notices of the embedded database: delivered inside the process as the writing transaction commits. */
export class PGliteChangeFeed implements ChangeFeed {
  private readonly stops = new Set<() => Promise<void>>();
  private pending = 0;

  constructor(
    private readonly pglite: PGlite,
    private readonly writes: LocalWrites,
  ) {}

  get live(): boolean {
    return this.pending === 0;
  }

  listen(channel: string, listener: NoticeListener): () => void {
    let stop: (() => Promise<void>) | undefined;
    let stopped = false;
    this.pending++;
    void this.pglite
      .listen(channel, (payload) => listener(payload))
      .then((unlisten) => {
        stop = unlisten;
        this.stops.add(unlisten);
        if (stopped) void unlisten();
      })
      .finally(() => this.pending--);
    return () => {
      stopped = true;
      if (stop) this.stops.delete(stop);
      void stop?.().catch(() => undefined);
    };
  }

  onLocalWrite(listener: (table: string) => void): () => void {
    return this.writes.on(listener);
  }

  async close(): Promise<void> {
    await Promise.all([...this.stops].map((stop) => stop().catch(() => undefined)));
    this.stops.clear();
  }
}

const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 10_000;
/** How often the listening connection proves it still hears notices, and how long it waits for its own. */
const PROBE_EVERY_MS = 30_000;
const PROBE_WITHIN_MS = 5_000;
/** The `application_name` of each process's listening connection. */
export const LISTENER_NAME = "toolplane-notices";

/**
 * Notices of a PostgreSQL server, heard on one connection of their own (a pooled one would be handed to other
 * queries). The feed is live once that connection listens to every channel asked for and has heard a notice it
 * sent itself; it sends one again every PROBE_EVERY_MS. A connection that does not hear its own notice is treated
 * as broken: a proxy pooling by transaction (PgBouncer's transaction mode) accepts LISTEN but delivers nothing, and
 * a connection the network dropped silently hears nothing until TCP gives up. When it breaks (that, or the server
 * restarted), every listener is told notices may have been missed, and it connects again with a growing delay.
 */
export class PostgresChangeFeed implements ChangeFeed {
  private readonly listeners = new Map<string, Set<NoticeListener>>();
  private client: pg.Client | null = null;
  private connected = false;
  private closed = false;
  private retryMs = RECONNECT_FIRST_MS;
  private retry: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  /** This connection's own channel, for its probes, and the probe it waits to hear. */
  private readonly probeChannel = `toolplane_probe_${randomBytes(8).toString("hex")}`;
  private awaited: { token: string; heard: () => void } | null = null;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly writes: LocalWrites,
  ) {}

  get live(): boolean {
    return this.connected;
  }

  listen(channel: string, listener: NoticeListener): () => void {
    let listeners = this.listeners.get(channel);
    if (!listeners) {
      listeners = new Set();
      this.listeners.set(channel, listeners);
      // A channel asked for while connected: not live until this connection listens to it too.
      const client = this.client;
      if (client && this.connected) {
        this.connected = false;
        this.listenAll(client).then(
          () => {
            if (this.client === client) this.connected = true;
          },
          () => this.reconnect(client),
        );
      }
    }
    listeners.add(listener);
    if (!this.client && !this.retry && !this.closed) void this.connect();
    return () => listeners.delete(listener);
  }

  onLocalWrite(listener: (table: string) => void): () => void {
    return this.writes.on(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    if (this.heartbeat) clearInterval(this.heartbeat);
    const client = this.client;
    this.client = null;
    this.connected = false;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    this.retry = null;
    // Named, so an operator sees what this connection is in pg_stat_activity.
    const client = new pg.Client({ ...this.config, keepAlive: true, application_name: LISTENER_NAME });
    this.client = client;
    client.on("notification", ({ channel, payload }) => {
      if (channel === this.probeChannel) {
        const awaited = this.awaited;
        if (awaited && payload === awaited.token) awaited.heard();
        return;
      }
      for (const listener of this.listeners.get(channel) ?? []) listener(payload ?? "");
    });
    client.on("error", () => this.reconnect(client));
    client.on("end", () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`listen "${this.probeChannel}"`);
      await this.listenAll(client);
      await this.probe(client);
    } catch {
      this.reconnect(client);
      return;
    }
    if (this.client !== client) return;
    this.connected = true;
    this.retryMs = RECONNECT_FIRST_MS;
    this.heartbeat = setInterval(() => {
      this.probe(client).catch(() => this.reconnect(client));
    }, PROBE_EVERY_MS).unref();
    // What changed before this connection listened was not heard.
    this.tellAll(null);
  }

  /** Sends a notice to this connection's own channel; rejects unless it is heard within PROBE_WITHIN_MS. */
  private async probe(client: pg.Client): Promise<void> {
    const token = randomBytes(8).toString("hex");
    let timer: NodeJS.Timeout | undefined;
    const heard = new Promise<void>((resolve, reject) => {
      this.awaited = { token, heard: resolve };
      timer = setTimeout(
        () => reject(new Error("the listening connection did not hear its own notice")),
        PROBE_WITHIN_MS,
      );
    });
    try {
      // The query of a connection that went silent never answers: the wait for the notice bounds it.
      await Promise.all([client.query("select pg_notify($1, $2)", [this.probeChannel, token]), heard]);
    } finally {
      clearTimeout(timer);
      if (this.awaited?.token === token) this.awaited = null;
    }
  }

  private async listenAll(client: pg.Client): Promise<void> {
    // (A Map's iterator also visits channels added while it runs.)
    for (const channel of this.listeners.keys()) {
      await client.query(`listen "${channel.replaceAll('"', '""')}"`);
    }
  }

  private reconnect(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    const wasLive = this.connected;
    this.connected = false;
    if (wasLive) this.tellAll(null);
    void client.end().catch(() => undefined);
    if (this.closed) return;
    this.retry = setTimeout(() => void this.connect(), this.retryMs).unref();
    this.retryMs = Math.min(this.retryMs * 2, RECONNECT_MAX_MS);
  }

  private tellAll(payload: string | null): void {
    for (const listeners of this.listeners.values()) for (const listener of listeners) listener(payload);
  }
}
