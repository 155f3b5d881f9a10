/**
 * When a tool call's record is written (src/mcp/gateway.ts, callRecordAfterMs): a call that ends within
 * TOOLPLANE_CALL_RECORD_AFTER_MS is written once, complete, as it is answered (an MCP client's plain result goes
 * out as the write is sent, see answersBeforeRecorded); a longer one is listed `waiting_for_response` from then on;
 * 0 writes every record as its call starts. The delay is read per call, so each test sets its own. The client is
 * the SDK v1 one, on a 2025 session, unless a test says otherwise.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { answeredRecords } from "../../src/mcp/answered-records.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import type { ModernUpstream } from "../support/upstream-modern.ts";
import {
  type CreatedSession,
  connectMcp,
  connectModernMcp,
  createSession,
  deploymentRef,
  deployProvider,
  firstText,
  latestToolCall,
  remoteProvider,
  startModernSession,
} from "./gateway-fixtures.ts";

// Read when the app is built: how long a call waits on an upstream that never answers (see the last test).
process.env.TOOLPLANE_UPSTREAM_TIMEOUT_MS = "1500";

let t: StartedTestServer;
let modern: ModernUpstream;
let first: CreatedSession;

beforeAll(async () => {
  ({ t, modern, session: first } = await startModernSession());
});

afterEach(() => {
  delete process.env.TOOLPLANE_CALL_RECORD_AFTER_MS;
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([modern?.close(), t?.close()]);
});

/** A session provider of `session`, as stored. */
const providerOf = (session: CreatedSession) =>
  t.db
    .selectFrom("session_providers")
    .select(["id", "provider_deployment_id"])
    .where("session_id", "=", session.id)
    .executeTakeFirstOrThrow();

/** A fresh session on the same deployment, so that its latest call is the test's own. */
const freshSession = async () =>
  createSession(t.client, [{ provider_deployment: deploymentRef((await providerOf(first)).provider_deployment_id) }]);

/** Starts a 3-step countdown (200 ms a step); resolves `running` at its first progress, when the upstream runs it. */
function countdown(client: Client) {
  let progressed: (at: Date) => void = () => undefined;
  const running = new Promise<Date>((resolve) => (progressed = resolve));
  const answer = client.callTool({ name: "countdown", arguments: { steps: 3, stepMs: 200 } }, undefined, {
    onprogress: () => progressed(new Date()),
  });
  return { running, answer };
}

describe("tool call records", () => {
  it("writes a call that ends within the delay once, complete, timed from its start", async () => {
    process.env.TOOLPLANE_CALL_RECORD_AFTER_MS = "60000";
    const session = await freshSession();
    const client = await connectMcp(t, session);
    const { running, answer } = countdown(client);
    const progressAt = await running;
    // Under way upstream, and not written yet.
    expect(await latestToolCall(t, session.id)).toBeUndefined();
    expect(firstText(await answer)).toBe("liftoff after 3");
    const record = await latestToolCall(t, session.id);
    expect(record).toMatchObject({ status: "succeeded", tool_key: "countdown", input: { steps: 3, stepMs: 200 } });
    // created_at is when the call started, before its first progress, not when the record was written.
    expect(Date.parse(record?.created_at ?? "")).toBeLessThan(progressAt.getTime());
    expect(Date.parse(record?.completed_at ?? "")).toBeGreaterThan(progressAt.getTime());
    await client.close();
  });

  it("times a call from its start, including the wait for an upstream that never answers", async () => {
    const hung: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => hung.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/mcp`;
      const provider = await remoteProvider(t.db, "hung", url);
      const deployment = await deployProvider(t.client, provider.providerId, "Hung");
      const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
      const client = await connectMcp(t, session);
      const startedAt = Date.now();
      const result = await client.callTool({ name: "anything", arguments: {} });
      const waitedMs = Date.now() - startedAt;
      expect(result.isError).toBe(true);
      const record = await latestToolCall(t, session.id);
      expect(record).toMatchObject({ status: "failed" });
      // The wait (connecting to find the tool, ~1.5 s here) lies between created_at and completed_at.
      const recordedMs = Date.parse(record?.completed_at ?? "") - Date.parse(record?.created_at ?? "");
      expect(waitedMs).toBeGreaterThan(1000);
      expect(recordedMs).toBeGreaterThan(waitedMs / 2);
      await client.close();
    } finally {
      hung.closeAllConnections();
      await new Promise((resolve) => hung.close(resolve));
    }
  });

  it("lists a call as waiting once the delay has passed, and with 0 as it starts", async () => {
    for (const delay of ["100", "0"]) {
      process.env.TOOLPLANE_CALL_RECORD_AFTER_MS = delay;
      const session = await freshSession();
      const client = await connectMcp(t, session);
      const { running, answer } = countdown(client);
      await running;
      await expect.poll(() => latestToolCall(t, session.id)).toMatchObject({ status: "waiting_for_response" });
      expect(firstText(await answer)).toBe("liftoff after 3");
      expect(await latestToolCall(t, session.id)).toMatchObject({ status: "succeeded" });
      await client.close();
    }
  });

  it("records and answers provider_removed when the provider is removed before the record is written", async () => {
    process.env.TOOLPLANE_CALL_RECORD_AFTER_MS = "60000";
    const session = await freshSession();
    const client = await connectMcp(t, session);
    const { running, answer } = countdown(client);
    await running;
    const removed = await t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
      params: { path: { session_id: session.id, session_provider_id: (await providerOf(session)).id } },
    });
    expect(removed.response.status).toBe(200);
    const result = await answer;
    expect(result.isError).toBe(true);
    expect(firstText(result)).toMatch(/removed from the session/);
    expect(await latestToolCall(t, session.id)).toMatchObject({
      status: "failed",
      error: { code: "provider_removed", message: expect.stringMatching(/removed from the session/) },
    });
    await client.close();
  });
});

// A lock taken from another connection holds every write to tool_calls while reads go on (PGlite is one connection,
// so these run on PostgreSQL only): what a client gets, and when, while its call's record cannot be written yet.
describe.skipIf(!process.env.TEST_DATABASE_URL)("calls answered as their records are written (PostgreSQL)", () => {
  /** Holds the table's writes until `release`; `holder` runs statements in the transaction that holds them. */
  async function holdRecordWrites() {
    const holder = new pg.Client({ connectionString: t.databaseUrl ?? "" });
    await holder.connect();
    await holder.query("begin");
    await holder.query("lock table tool_calls in share row exclusive mode");
    return {
      holder,
      release: async () => {
        await holder.query("commit");
        await holder.end();
      },
    };
  }

  it("answers clients of both eras while their records wait, and this process's API lists each call once written", async () => {
    const session = await freshSession();
    const [legacy, modern] = [await connectMcp(t, session), await connectModernMcp(t, session)];
    const hold = await holdRecordWrites();
    let listing: Promise<unknown> | undefined;
    let listed = false;
    try {
      // Before the change both calls waited for the lock: the answer came only once the record was written.
      expect(firstText(await legacy.callTool({ name: "shout", arguments: { text: "old" } }))).toBe("OLD");
      expect(firstText(await modern.callTool({ name: "shout", arguments: { text: "new" } }))).toBe("NEW");
      listing = latestToolCall(t, session.id).then((record) => {
        listed = true;
        return record;
      });
      await sleep(300);
      expect(listed).toBe(false); // the API waits for the answered calls' writes
    } finally {
      await hold.release();
    }
    expect(await listing).toMatchObject({ status: "succeeded", tool_key: "shout", input: { text: "new" } });
    const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: session.id } },
    });
    expect(data?.items.map((call) => call.output)).toEqual([
      expect.objectContaining({ content: [{ type: "text", text: "OLD" }] }),
      expect.objectContaining({ content: [{ type: "text", text: "NEW" }] }),
    ]);
    await Promise.all([legacy.close(), modern.close()]);
  });

  it("writes an answered call's record again when the database connection writing it is lost", async () => {
    const session = await freshSession();
    const client = await connectMcp(t, session);
    const hold = await holdRecordWrites();
    try {
      expect(firstText(await client.callTool({ name: "shout", arguments: { text: "again" } }))).toBe("AGAIN");
      // The backend waiting to write the record is ended (SQLSTATE 57P01, as when the server restarts).
      await expect
        .poll(async () => {
          const ended = await hold.holder.query(
            "select pg_terminate_backend(pid) from pg_stat_activity where pid <> pg_backend_pid() and query like 'insert into tool_calls%' and wait_event_type = 'Lock'",
          );
          return ended.rowCount;
        })
        .toBeGreaterThan(0);
    } finally {
      await hold.release();
    }
    // The API does not wait for the write to be tried again (a second later): it lists what is written so far.
    expect(await latestToolCall(t, session.id)).toBeUndefined();
    // Written again a second later, on another connection.
    await expect
      .poll(() => latestToolCall(t, session.id), { timeout: 10_000 })
      .toMatchObject({ status: "succeeded", output: { content: [{ type: "text", text: "AGAIN" }] } });
    await client.close();
  });

  it("records what the client got when its provider's removal commits while the answered call's record waits", async () => {
    const session = await freshSession();
    const client = await connectMcp(t, session);
    const hold = await holdRecordWrites();
    try {
      expect(firstText(await client.callTool({ name: "shout", arguments: { text: "kept" } }))).toBe("KEPT");
      // Committed with the lock's release, before the record's insert (which checks its provider) can run.
      await hold.holder.query("update session_providers set status = 'removed' where session_id = $1", [session.id]);
    } finally {
      await hold.release();
    }
    await answeredRecords.written();
    expect(await latestToolCall(t, session.id)).toMatchObject({
      status: "succeeded",
      output: { content: [{ type: "text", text: "KEPT" }] },
    });
    await client.close();
  });
});
