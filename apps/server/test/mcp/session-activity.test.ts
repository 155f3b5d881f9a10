import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionActivity } from "../../src/mcp/session-activity.ts";
import { catalogProvider } from "../support/catalog-fixtures.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import { type CreatedSession, createSession, deploymentRef, deployProvider } from "./gateway-fixtures.ts";

let t: StartedTestServer;
const sessions: CreatedSession[] = [];

beforeAll(async () => {
  t = await startTestServer();
  const deployment = await deployProvider(t.client, (await catalogProvider(t.db, "everything")).providerId, "Ev");
  for (let i = 0; i < 3; i++)
    sessions.push(await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]));
});

afterAll(async () => {
  await t?.close();
});

const row = (id: string) =>
  t.db
    .selectFrom("sessions")
    .select(["message_count", "connected_until"])
    .where("id", "=", id)
    .executeTakeFirstOrThrow();

describe("session activity", () => {
  it("counts every message of a burst exactly once, merged into a few writes, each caller seeing its own", async () => {
    const activity = new SessionActivity(t.db);
    const [a, b, c] = sessions.map((s) => s.id) as [string, string, string];
    const before = await Promise.all([a, b, c].map(row));
    // 120 requests at once over three sessions; c's are API calls (not connected).
    await Promise.all(
      Array.from({ length: 120 }, (_, i) => {
        const id = [a, b, c][i % 3] as string;
        return activity.record(id, i % 3 === 0 ? 2 : 1, id !== c);
      }),
    );
    const after = await Promise.all([a, b, c].map(row));
    expect(after.map((r, i) => Number(r.message_count) - Number(before[i]?.message_count))).toEqual([80, 40, 40]);
    expect(after[0]?.connected_until).toBeInstanceOf(Date);
    expect(after[2]?.connected_until).toEqual(before[2]?.connected_until ?? null);
    // A caller that awaits its record reads its own message.
    await activity.record(a, 1, true);
    expect(Number((await row(a)).message_count)).toBe(Number(after[0]?.message_count) + 1);
  });
});
