import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { sql } from "kysely";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { claimIdempotencyKey, hashRequest, sweepExpiredIdempotencyKeys } from "../../src/http/idempotency.ts";
import { createHttpServer } from "../../src/http/server.ts";
import { bundledSpec } from "../../src/spec.ts";
import { everythingDeployment } from "../resources/sessions/session-fixtures.ts";
import { fixture, useTestServer } from "../support/fixture.ts";

const t = useTestServer();

/** A second app on the same database, as a second replica would be. */
const replica = fixture(
  async () => {
    const server = createHttpServer();
    server.on(
      "request",
      createApp({
        db: t.db,
        spec: bundledSpec,
        logger: pino({ level: "silent" }),
        publicUrl: "http://127.0.0.1",
        bodyLimitBytes: 64 * 1024,
        secrets: t.secrets,
      }),
    );
    server.listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", resolve));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  },
  async ({ server }) => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  },
);

function post(path: string, key: string | undefined, body: unknown, options: { apiKey?: string; base?: string } = {}) {
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.apiKey ?? t.tenant.apiKey}`,
    "content-type": "application/json",
  };
  if (key !== undefined) headers["idempotency-key"] = key;
  return fetch(`${options.base ?? t.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
}

async function answer(res: Response) {
  return {
    status: res.status,
    replayed: res.headers.get("idempotent-replayed"),
    body: (await res.json()) as Record<string, unknown>,
  };
}

async function groupsNamed(name: string, instanceId = t.tenant.instanceId) {
  const rows = await t.db
    .selectFrom("provider_groups")
    .select("id")
    .where("instance_id", "=", instanceId)
    .where("name", "=", name)
    .execute();
  return rows.map((r) => r.id);
}

describe("Idempotency-Key on POST", () => {
  it("replays the first answer, marked, for a repeat with the same body in any key order", async () => {
    const key = randomUUID();
    const first = await answer(await post("/provider-groups", key, { name: "Once", description: "only one" }));
    expect(first).toMatchObject({ status: 201, replayed: null });
    const again = await answer(await post("/provider-groups", key, { description: "only one", name: "Once" }));
    expect(again).toEqual({ status: 201, replayed: "true", body: first.body });
    expect(await groupsNamed("Once")).toEqual([first.body.id]);
  });

  it("stores the answer encrypted: a session's one-time secret is replayed, never kept in clear", async () => {
    const { deployment } = await everythingDeployment(t);
    const key = randomUUID();
    const body = { providers: [{ provider_deployment: { type: "reference", provider_deployment_id: deployment.id } }] };
    const first = await answer(await post("/sessions", key, body));
    expect(first.status).toBe(201);
    const again = await answer(await post("/sessions", key, body));
    expect(again).toEqual({ status: 201, replayed: "true", body: first.body });
    const row = await t.db
      .selectFrom("idempotency_keys")
      .select("response_ciphertext")
      .where("key", "=", key)
      .executeTakeFirstOrThrow();
    expect(String(first.body.secret).length).toBeGreaterThan(16);
    expect(row.response_ciphertext).not.toContain(String(first.body.secret));
    expect(row.response_ciphertext).not.toContain(String(first.body.id));
  });

  it("answers 422 for the key with another body or another path, and leaves the first answer in place", async () => {
    const key = randomUUID();
    const first = await answer(await post("/provider-groups", key, { name: "Original" }));
    expect(first.status).toBe(201);
    const otherBody = await answer(await post("/provider-groups", key, { name: "Different" }));
    expect(otherBody).toMatchObject({ status: 422, replayed: null, body: { code: "idempotency_key_reused" } });
    const otherPath = await answer(await post("/portals", key, { name: "Original" }));
    expect(otherPath).toMatchObject({ status: 422, body: { code: "idempotency_key_reused", status: 422 } });
    expect(await groupsNamed("Different")).toEqual([]);
    expect(await answer(await post("/provider-groups", key, { name: "Original" }))).toMatchObject({
      status: 201,
      replayed: "true",
      body: first.body,
    });
  });

  it("replays 4xx answers too", async () => {
    const key = randomUUID();
    const path = "/provider-groups/pgr_00000000000000000000000000/listings";
    const body = { provider_listing_id: "plg_00000000000000000000000000" };
    const first = await answer(await post(path, key, body));
    expect(first).toMatchObject({ status: 404, replayed: null, body: { code: "not_found" } });
    expect(await answer(await post(path, key, body))).toEqual({ status: 404, replayed: "true", body: first.body });

    // An invalid body is answered (and recorded) as sent: the key is checked before the body is validated.
    const invalidKey = randomUUID();
    const invalid = await answer(await post("/provider-groups", invalidKey, { name: "" }));
    expect(invalid).toMatchObject({ status: 400, replayed: null, body: { code: "invalid_data" } });
    expect(await answer(await post("/provider-groups", invalidKey, { name: "" }))).toMatchObject({
      status: 400,
      replayed: "true",
    });
  });

  it("answers 409 to a repeat while the first request still runs (another replica holds the key)", async () => {
    const key = randomUUID();
    const body = { name: "In flight" };
    const held = await claimIdempotencyKey(
      t.db,
      t.tenant.instanceId,
      key,
      hashRequest("POST", "/provider-groups", body),
    );
    expect(held).toMatch(/^idk_/);
    const res = await post("/provider-groups", key, body);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await answer(res)).toMatchObject({ status: 409, body: { code: "idempotency_conflict", status: 409 } });
    // Another body is a 422 even while the first request runs.
    expect((await post("/provider-groups", key, { name: "Else" })).status).toBe(422);
    expect(await groupsNamed("In flight")).toEqual([]);

    // A request still "running" after 5 minutes was abandoned by a dead process: the key is taken over.
    await sql`update idempotency_keys set created_at = now() - interval '6 minutes' where id = ${held}`.execute(t.db);
    expect(await answer(await post("/provider-groups", key, body))).toMatchObject({ status: 201, replayed: null });
    expect(await groupsNamed("In flight")).toHaveLength(1);
  });

  it("acts once for a burst of repeats spread over two app instances on one database", async () => {
    const key = randomUUID();
    const body = { name: "Burst" };
    const answers = await Promise.all(
      Array.from({ length: 8 }, async (_, i) =>
        answer(await post("/provider-groups", key, body, { base: i % 2 ? replica.url : t.url })),
      ),
    );
    const created = await groupsNamed("Burst");
    expect(created).toHaveLength(1);
    for (const a of answers) {
      if (a.status === 409) expect(a.body.code).toBe("idempotency_conflict");
      else expect(a).toMatchObject({ status: 201, body: { id: created[0] } });
    }
    expect(answers.filter((a) => a.status === 201 && a.replayed === null)).toHaveLength(1);
  });

  it("does not record a 5xx: the retry runs again and can succeed", async () => {
    // A real failure inside the database: inserting this group raises until the trigger is dropped.
    await sql`create function refuse_boom() returns trigger language plpgsql as $$
      begin if new.name = 'Boom' then raise exception 'boom'; end if; return new; end $$`.execute(t.db);
    await sql`create trigger refuse_boom before insert on provider_groups
      for each row execute function refuse_boom()`.execute(t.db);
    const key = randomUUID();
    try {
      for (let i = 0; i < 2; i++) {
        expect(await answer(await post("/provider-groups", key, { name: "Boom" }))).toMatchObject({
          status: 500,
          replayed: null,
          body: { code: "internal_server_error" },
        });
      }
      expect(await t.db.selectFrom("idempotency_keys").select("id").where("key", "=", key).execute()).toEqual([]);
    } finally {
      await sql`drop trigger refuse_boom on provider_groups`.execute(t.db);
      await sql`drop function refuse_boom()`.execute(t.db);
    }
    const retried = await answer(await post("/provider-groups", key, { name: "Boom" }));
    expect(retried).toMatchObject({ status: 201, replayed: null, body: { name: "Boom" } });
    expect(await answer(await post("/provider-groups", key, { name: "Boom" }))).toMatchObject({
      status: 201,
      replayed: "true",
      body: { id: retried.body.id },
    });
  });

  it("keeps keys per instance: another instance's same key is its own", async () => {
    const other = await t.createTenant("other");
    const key = randomUUID();
    const mine = await answer(await post("/provider-groups", key, { name: "Mine" }));
    const theirs = await answer(await post("/provider-groups", key, { name: "Theirs" }, { apiKey: other.apiKey }));
    expect(mine).toMatchObject({ status: 201, replayed: null });
    expect(theirs).toMatchObject({ status: 201, replayed: null });
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(await groupsNamed("Theirs", other.instanceId)).toEqual([theirs.body.id]);
    expect(await groupsNamed("Theirs")).toEqual([]);
  });

  it("forgets a key after 24 hours: it then runs a new request, and expired keys are swept", async () => {
    const key = randomUUID();
    expect((await post("/provider-groups", key, { name: "Yesterday" })).status).toBe(201);
    const expire = sql`update idempotency_keys set expires_at = now() - interval '1 second' where key = ${key}`;
    await expire.execute(t.db);
    const today = await answer(await post("/provider-groups", key, { name: "Today" }));
    expect(today).toMatchObject({ status: 201, replayed: null, body: { name: "Today" } });

    await expire.execute(t.db);
    expect(await sweepExpiredIdempotencyKeys(t.db)).toBeGreaterThanOrEqual(1);
    expect(await t.db.selectFrom("idempotency_keys").select("id").where("key", "=", key).execute()).toEqual([]);
  });

  it("refuses a malformed key with a 400 and ignores the header on other methods", async () => {
    for (const key of ["", "x".repeat(256), "caf\u00e9", "a\tb"]) {
      const res = await fetch(`${t.url}/provider-groups`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${t.tenant.apiKey}`,
          "content-type": "application/json",
          "idempotency-key": key,
        },
        body: JSON.stringify({ name: "Bad key" }),
      });
      expect(await answer(res)).toMatchObject({ status: 400, body: { code: "bad_request" } });
    }
    expect(await groupsNamed("Bad key")).toEqual([]);
    const get = await fetch(`${t.url}/provider-groups`, {
      headers: { authorization: `Bearer ${t.tenant.apiKey}`, "idempotency-key": "" },
    });
    expect(get.status).toBe(200);
    expect(get.headers.get("idempotent-replayed")).toBeNull();
  });
});
