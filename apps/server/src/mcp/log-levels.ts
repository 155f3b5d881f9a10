import type { LoggingLevel } from "@modelcontextprotocol/server";
import { sql } from "kysely";
import type { ChangeFeed } from "../db/changes.ts";
import type { Db } from "../db/database.ts";
import { LOG_LEVELS } from "../runtimes/pool.ts";

/** The channel on which processes tell the one holding a 2025 connection of the level its client set elsewhere. */
const LOG_LEVEL_CHANNEL = "toolplane_mcp_log_level";

/** `value` if it is an MCP log level, else undefined (a stored or announced level is checked before use). */
export const asLogLevel = (value: unknown): LoggingLevel | undefined =>
  LOG_LEVELS.includes(value as LoggingLevel) ? (value as LoggingLevel) : undefined;

/**
 * The log level a 2025 client set on its MCP connection (`logging/setLevel`), for every replica its requests reach.
 * It is stored on the connection's row, which a replica serving one of the connection's requests reads anyway; the
 * process holding the connection (its GET stream, its upstream connections' level) is told through the database's
 * NOTIFY when the client set it on another one.
 */
export class ConnectionLogLevels {
  private readonly holders = new Map<string, (level: LoggingLevel) => void>();

  constructor(
    private readonly db: Db,
    changes: ChangeFeed | undefined,
  ) {
    changes?.listen(LOG_LEVEL_CHANNEL, (payload) => {
      // null: notices may have been missed (the listening connection was re-established), so read them all.
      if (payload === null) return void this.reloadHeld().catch(() => undefined);
      const notice = parseNotice(payload);
      if (notice) this.holders.get(notice.connectionId)?.(notice.level);
    });
  }

  /** Applies the stored level of every connection held here (a level set elsewhere while notices were lost). */
  private async reloadHeld(): Promise<void> {
    if (this.holders.size === 0) return;
    const rows = await this.db
      .selectFrom("mcp_connections")
      .select(["id", "log_level"])
      .where("id", "in", [...this.holders.keys()])
      .execute();
    for (const { id, log_level } of rows) {
      const level = asLogLevel(log_level);
      if (level) this.holders.get(id)?.(level);
    }
  }

  /** Applies levels set elsewhere to the connection `connectionId` held here, until the returned function is called. */
  hold(connectionId: string, apply: (level: LoggingLevel) => void): () => void {
    this.holders.set(connectionId, apply);
    return () => {
      if (this.holders.get(connectionId) === apply) this.holders.delete(connectionId);
    };
  }

  /**
   * Stores the level of connection `connectionId` of session `sessionId` and, unless it is held here, tells the
   * process holding it; one statement, so a notice goes out only for a connection of that session.
   */
  async store(connectionId: string, sessionId: string, level: LoggingLevel): Promise<void> {
    const notice = this.holders.has(connectionId) ? null : JSON.stringify({ connectionId, level });
    await sql`
      with stored as (
        update mcp_connections set log_level = ${level}
        where id = ${connectionId} and session_id = ${sessionId}
        returning id
      )
      select pg_notify(${LOG_LEVEL_CHANNEL}, ${notice}::text) from stored where ${notice}::text is not null`.execute(
      this.db,
    );
  }
}

function parseNotice(payload: string | null): { connectionId: string; level: LoggingLevel } | null {
  if (!payload) return null;
  try {
    const { connectionId, level } = JSON.parse(payload) as Record<string, unknown>;
    const checked = asLogLevel(level);
    return typeof connectionId === "string" && checked ? { connectionId, level: checked } : null;
  } catch {
    return null;
  }
}
