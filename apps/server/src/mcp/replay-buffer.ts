import type { EventId, EventStore, JSONRPCMessage, StreamId } from "@modelcontextprotocol/server";

/** How many of its latest messages a 2025 session keeps for clients that reconnect (TOOLPLANE_MCP_REPLAY_EVENTS). */
export const replayLimit = () => {
  const value = Number(process.env.TOOLPLANE_MCP_REPLAY_EVENTS);
  return Number.isInteger(value) && value >= 0 ? value : 500;
};

/** The SDK's id of a session's GET stream (its Streamable HTTP transport's `_standaloneSseStreamId`). */
const STANDALONE_STREAM = "_GET_stream";

/**
 * The resumability of one 2025-era MCP session's SSE streams (Streamable HTTP's `Last-Event-ID`): every message
 * sent on a stream gets an event id, and a client whose stream broke reconnects with the last id it saw and gets
 * what it missed on that stream. The buffer is the session's own and lives as long as its connection, in the
 * process that holds the stream (streams are sticky anyway); it keeps the latest `limit` messages of all the
 * session's streams, so a client that stayed away longer than that misses the oldest ones.
 * Event ids are `<sequence>_<stream id>`: the stream is known even when the event itself is no longer kept.
 * (No `getStreamIdForEventId`: with it the SDK answers 409 while it has not yet noticed that the broken stream is
 * gone; without it the reconnecting client's stream replaces the old one.)
 */
export class ReplayBuffer implements EventStore {
  private readonly events: { sequence: number; streamId: StreamId; message: JSONRPCMessage }[] = [];
  private sequence = 0;

  constructor(private readonly limit = replayLimit()) {}

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const sequence = ++this.sequence;
    this.events.push({ sequence, streamId, message });
    if (this.events.length > this.limit) this.events.shift();
    return `${sequence}_${streamId}`;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const last = parse(lastEventId);
    // An id this buffer never made: nothing to replay, the GET stream goes on from now (throwing would be a 500).
    if (!last) return STANDALONE_STREAM;
    for (const event of this.events) {
      if (event.streamId === last.streamId && event.sequence > last.sequence) {
        await send(`${event.sequence}_${event.streamId}`, event.message);
      }
    }
    return last.streamId;
  }
}

function parse(eventId: EventId): { sequence: number; streamId: StreamId } | undefined {
  const separator = eventId.indexOf("_");
  const sequence = Number(eventId.slice(0, separator));
  if (separator <= 0 || !Number.isSafeInteger(sequence)) return undefined;
  return { sequence, streamId: eventId.slice(separator + 1) };
}
