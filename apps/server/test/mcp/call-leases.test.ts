import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failExpiredCalls } from "../../src/mcp/gateway.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  remoteProvider,
} from "./gateway-fixtures.ts";

// Read when the first call starts: leases of 600 ms, renewed every 200 ms.
process.env.TOOLPLANE_CALL_LEASE_MS = "600";

let t: StartedTestServer;
let ours: TestUpstream;
let session: CreatedSession;

beforeAll(async () => {
  [t, ours] = await Promise.all([startTestServer(), startTestUpstream()]);
  const provider = await remoteProvider(t.db, "ours", ours.url);
  session = await createSession(t.client, [
    { provider_deployment: deploymentRef((await deployProvider(t.client, provider.providerId, "Ours")).id) },
  ]);
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([ours?.close(), t?.close()]);
});

const record = (id: string) => t.db.selectFrom("tool_calls").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

describe("tool call leases", () => {
  it("fails a call left waiting by a process that died, once its lease ran out", async () => {
    const session_ = await t.db
      .selectFrom("sessions")
      .select("instance_id")
      .where("id", "=", session.id)
      .executeTakeFirstOrThrow();
    // What a process that died mid-call leaves behind: a waiting record nobody renews.
    await t.db
      .insertInto("tool_calls")
      .values({
        id: "tcl_00000000000000000000000000",
        instance_id: session_.instance_id,
        session_id: session.id,
        tool_key: "slow",
        transport: "mcp",
        message_id: "smg_00000000000000000000000000",
        lease_until: new Date(Date.now() - 1_000),
      })
      .execute();
    expect(await failExpiredCalls(t.db)).toBe(1);
    expect(await record("tcl_00000000000000000000000000")).toMatchObject({
      status: "failed",
      error: { code: "shutdown" },
      completed_at: expect.any(Date),
    });
  });

  it("keeps renewing the lease of a call that runs longer than a lease, so no sweep fails it", async () => {
    const call = t.client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: session.id } },
      body: { tool_id: "slow", input: { ms: 2_000 } },
    });
    // Sweep while it runs: three leases' worth of time.
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await failExpiredCalls(t.db);
    }
    const { data, response } = await call;
    expect(response.status).toBe(201);
    expect(data).toMatchObject({ status: "succeeded" });
  });
});
