import { sql } from "kysely";
import type { ChangeFeed } from "../db/changes.ts";
import type { Db } from "../db/database.ts";

type RequestId = string | number;

/** The channel on which processes tell each other of a 2025 client's `notifications/cancelled`. */
const CANCELLED_CHANNEL = "toolplane_mcp_cancelled";
/** A reason is only for logs and the upstream's notification: NOTIFY payloads must stay under 8,000 bytes. */
const MAX_REASON = 500;
const MAX_PAYLOAD = 7_900;

/**
 * The requests of 2025-era MCP connections (`Mcp-Session-Id`) under way in this process, by connection and JSON-RPC
 * id: the session lane's calls on a connection held here, and the requests served here for a connection another
 * replica holds (its client's requests may land on any replica, and so may its `notifications/cancelled`).
 */
export class RunningRequests {
  private readonly byConnection = new Map<string, Map<RequestId, AbortController>>();
  private readonly held = new Set<string>();

  /** The map of a connection held here, kept (for its session lane) until `drop`. */
  hold(connectionId: string): Map<RequestId, AbortController> {
    this.held.add(connectionId);
    return this.mapOf(connectionId);
  }

  /** Forgets a connection that ended here. */
  drop(connectionId: string): void {
    this.held.delete(connectionId);
    this.byConnection.delete(connectionId);
  }

  /** Registers a request until the returned function is called. */
  add(connectionId: string, id: RequestId, controller: AbortController): () => void {
    const running = this.mapOf(connectionId);
    running.set(id, controller);
    return () => {
      if (running.get(id) === controller) running.delete(id);
      if (running.size === 0 && !this.held.has(connectionId)) this.byConnection.delete(connectionId);
    };
  }

  /** Aborts the request `id` of the connection, if it runs here. */
  cancel(connectionId: string, id: RequestId, reason: string): void {
    this.byConnection.get(connectionId)?.get(id)?.abort(new Error(reason));
  }

  private mapOf(connectionId: string): Map<RequestId, AbortController> {
    let running = this.byConnection.get(connectionId);
    if (!running) {
      running = new Map();
      this.byConnection.set(connectionId, running);
    }
    return running;
  }
}

/** The process's requests of 2025-era connections. */
export const runningRequests = new RunningRequests();

/** The cancellations a POST body carries (one message or a batch): each request id with its reason. */
function cancellationsOf(body: unknown): { requestId: RequestId; reason: string }[] {
  const found: { requestId: RequestId; reason: string }[] = [];
  for (const message of Array.isArray(body) ? body : [body]) {
    const params = (message as { method?: unknown; params?: unknown } | null)?.params as
      | { requestId?: unknown; reason?: unknown }
      | undefined;
    if ((message as { method?: unknown } | null)?.method !== "notifications/cancelled" || !params) continue;
    const { requestId, reason } = params;
    if (typeof requestId !== "string" && typeof requestId !== "number") continue;
    const text = typeof reason === "string" ? reason.slice(0, MAX_REASON) : "The client cancelled the request.";
    found.push({ requestId, reason: text });
  }
  return found;
}

/**
 * Carries a 2025 client's `notifications/cancelled` to the request it names, on whichever process runs it: here at
 * once, and to every other process through the database's NOTIFY (each aborts the request if it runs it).
 */
export class Cancellations {
  constructor(
    private readonly db: Db,
    changes: ChangeFeed | undefined,
  ) {
    changes?.listen(CANCELLED_CHANNEL, (payload) => {
      const notice = parseNotice(payload);
      if (notice) runningRequests.cancel(notice.connectionId, notice.requestId, notice.reason);
    });
  }

  /**
   * Cancels what `body` cancels on connection `connectionId`: here at once, every one of them, then on the other
   * processes (not awaited: the POST never waits on the database for it; `onFailure` hears of a notice not sent).
   */
  announce(connectionId: string, body: unknown, onFailure: (error: unknown) => void): void {
    const cancellations = cancellationsOf(body);
    for (const { requestId, reason } of cancellations) runningRequests.cancel(connectionId, requestId, reason);
    for (const { requestId, reason } of cancellations) {
      const payload = JSON.stringify({ connectionId, requestId, reason });
      if (Buffer.byteLength(payload) > MAX_PAYLOAD) continue; // an id no JSON-RPC client sends; cancelled here only
      sql`select pg_notify(${CANCELLED_CHANNEL}, ${payload})`.execute(this.db).catch(onFailure);
    }
  }
}

function parseNotice(payload: string | null): { connectionId: string; requestId: RequestId; reason: string } | null {
  if (!payload) return null;
  try {
    const { connectionId, requestId, reason } = JSON.parse(payload) as Record<string, unknown>;
    if (typeof connectionId !== "string" || (typeof requestId !== "string" && typeof requestId !== "number")) {
      return null;
    }
    return { connectionId, requestId, reason: typeof reason === "string" ? reason : "Cancelled." };
  } catch {
    return null;
  }
}
