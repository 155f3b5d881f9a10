import { sql } from "kysely";
import type { Db } from "../db/database.ts";

/** How long a session counts as `connected` after its last MCP request. */
const CONNECTED_FOR_MS = 5 * 60_000;
/** How long requests are gathered into one write: a steady stream of calls costs a few writes a second, not one each. */
const GATHER_MS = 200;

interface Pending {
  messages: number;
  connected: boolean;
}

/**
 * A session's message count and `connected_until`, kept by every MCP request. What is recorded within GATHER_MS
 * (and while a write is under way) is merged into one write that updates all those sessions in one statement: a
 * burst of requests costs a few writes instead of one each (1,000 clients opening at once queued ~4,000 updates for
 * 10 pooled connections), and so does a steady stream (at one call in flight, the update was a third of the
 * gateway's database round trips). Each `record` resolves once the write that carries it is done, so a caller
 * still sees its count.
 */
export class SessionActivity {
  private pending = new Map<string, Pending>();
  private next: Promise<void> | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly db: Db) {}

  record(sessionId: string, messages: number, connected: boolean): Promise<void> {
    const entry = this.pending.get(sessionId) ?? { messages: 0, connected: false };
    entry.messages += messages;
    entry.connected ||= connected;
    this.pending.set(sessionId, entry);
    // One write is queued behind the one under way (and GATHER_MS); everything recorded until it starts goes into it.
    this.next ??= Promise.all([this.writing, gathered()]).then(() => this.flush());
    return this.next;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.next = null;
    const connectedUntil = new Date(Date.now() + CONNECTED_FOR_MS);
    const rows = [...batch].map(
      ([id, { messages, connected }]) => sql`(${id}, ${messages}::integer, ${connected}::boolean)`,
    );
    const write = sql`
      update sessions as s
      set message_count = s.message_count + v.messages,
          connected_until = case when v.connected then ${connectedUntil}::timestamptz else s.connected_until end
      from (values ${sql.join(rows)}) as v(id, messages, connected)
      where s.id = v.id and s.status = 'active'`
      .execute(this.db)
      .then(() => undefined);
    // The next batch waits for this one whatever its outcome; this batch's callers see the outcome.
    this.writing = write.catch(() => undefined);
    await write;
  }
}

const gathered = () => new Promise<void>((resolve) => setTimeout(resolve, GATHER_MS).unref());
