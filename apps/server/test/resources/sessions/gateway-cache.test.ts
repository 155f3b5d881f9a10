// The gateway's session views kept in memory (resources/sessions/gateway-view.ts, migration 0022): a view is served
// from memory only while nothing it was read from changed, whoever changed it. Run on PGlite and on PostgreSQL.
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { LISTENER_NAME } from "../../../src/db/changes.ts";
import { gatewaySessionLoader } from "../../../src/resources/sessions/gateway-view.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { createSession, deploymentRef, everythingDeployment } from "./session-fixtures.ts";

const t = useTestServer();
const ev = fixture(() => everythingDeployment(t));
const onPostgres = () => t.databaseUrl !== null;

/** Turns a trigger of migration 0022 off (a change it would announce is then heard by nobody). */
const silence = (table: string, trigger: string) =>
  sql`alter table ${sql.table(table)} disable trigger ${sql.raw(trigger)}`.execute(t.db);
afterEach(async () => {
  await sql`alter table sessions enable trigger sessions_changed`.execute(t.db);
});

/** Raw SQL: neither Kysely's builder (whose writes this process sees at once) nor the API. */
const setStatus = (sessionId: string, status: string) =>
  sql`update sessions set status = ${status} where id = ${sessionId}`.execute(t.db);

async function newSession() {
  return createSession(t.client, { providers: [{ provider_deployment: deploymentRef(ev.deployment.id) }] });
}

/** A new active session whose view a new loader has read (and, the notices being heard, keeps). */
async function viewedSession() {
  const session = await newSession();
  const load = gatewaySessionLoader(t.db, t.secrets, t.changes);
  await expect.poll(() => t.changes.live).toBe(true);
  expect((await load(session.id))?.status).toBe("active");
  return { session, load };
}

describe("gateway session views in memory", () => {
  it("serves a view from memory, and drops it when a trigger announces a change (from any process)", async () => {
    const { session, load } = await viewedSession();

    // Unannounced, the change is not seen: the view came from memory.
    await silence("sessions", "sessions_changed");
    await setStatus(session.id, "archived");
    expect((await load(session.id))?.status).toBe("active");

    // Announced (as a write of another process would be), it is.
    await sql`alter table sessions enable trigger sessions_changed`.execute(t.db);
    await setStatus(session.id, "deleted");
    await expect.poll(async () => (await load(session.id))?.status).toBe("deleted");
  });

  it("drops every view before this process's own write to a table they are read from runs", async () => {
    const { session, load } = await viewedSession();

    // No notice comes (the trigger is off), yet the next read sees the write at once: no waiting, no polling.
    await silence("sessions", "sessions_changed");
    await t.db.updateTable("sessions").set({ status: "archived" }).where("id", "=", session.id).execute();
    expect((await load(session.id))?.status).toBe("archived");
  });

  it("hears changes to a session's providers and to rows sessions share", async () => {
    const session = await newSession();
    const other = await newSession();
    const load = gatewaySessionLoader(t.db, t.secrets, t.changes);
    await expect.poll(() => t.changes.live).toBe(true);
    expect((await load(session.id))?.providers).toHaveLength(1);
    expect((await load(other.id))?.providers[0]?.providerSlug).toBe("everything");

    // A session provider removed (payload: that session's id).
    await sql`delete from session_providers where session_id = ${session.id}`.execute(t.db);
    await expect.poll(async () => (await load(session.id))?.providers).toHaveLength(0);

    // A provider renamed (payload `*`: every session drops its view).
    await sql`update providers set slug = 'everything-renamed' where id = ${ev.providerId}`.execute(t.db);
    await expect.poll(async () => (await load(other.id))?.providers[0]?.providerSlug).toBe("everything-renamed");
    await sql`update providers set slug = 'everything' where id = ${ev.providerId}`.execute(t.db);
  });

  it("reads every request while the notices are not heard, and keeps views again once they are", async () => {
    if (!onPostgres()) return; // PGlite's notices are delivered in this process; there is no connection to lose.
    const { session, load } = await viewedSession();
    await silence("sessions", "sessions_changed");

    // The listening connection is killed: from then on, unannounced changes are seen (nothing served from memory).
    const listening = await sql<{ pid: number }>`select pid from pg_stat_activity
      where datname = current_database() and application_name = ${LISTENER_NAME}`.execute(t.db);
    expect(listening.rows).toHaveLength(1);
    await sql`select pg_terminate_backend(${listening.rows[0]?.pid})`.execute(t.db);
    await setStatus(session.id, "archived");
    await expect.poll(async () => (await load(session.id))?.status).toBe("archived");

    // It connects again by itself, and views are kept again.
    await expect.poll(() => t.changes.live, { timeout: 15_000 }).toBe(true);
    expect((await load(session.id))?.status).toBe("archived");
    await setStatus(session.id, "active");
    expect((await load(session.id))?.status).toBe("archived");
  });

  it("keeps nothing with TOOLPLANE_SESSION_CACHE_MS=0", async () => {
    const session = await newSession();
    process.env.TOOLPLANE_SESSION_CACHE_MS = "0";
    const load = (() => {
      try {
        return gatewaySessionLoader(t.db, t.secrets, t.changes);
      } finally {
        delete process.env.TOOLPLANE_SESSION_CACHE_MS;
      }
    })();
    expect((await load(session.id))?.status).toBe("active");
    await silence("sessions", "sessions_changed");
    await setStatus(session.id, "archived");
    expect((await load(session.id))?.status).toBe("archived");
  });
});
