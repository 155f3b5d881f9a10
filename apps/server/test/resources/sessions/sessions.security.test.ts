import { createHash } from "node:crypto";
import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { dumpAllTables } from "../../support/catalog-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  expectCrossTenantNotFound,
  expectSameAsUnknown,
  expectUnauthorizedEverywhere,
  json,
  snapshotTables,
} from "../../support/security.ts";
import {
  authConfigRef,
  configRef,
  createSession,
  createTemplate,
  deploymentRef,
  everythingDeployment,
  githubSetup,
} from "./session-fixtures.ts";

const t = useTestServer();
const other = fixture(() => t.createTenant("other"));
const mine = fixture(() => githubSetup(t));
const theirs = fixture(() => githubSetup(t, other.client, "Theirs"));

const allRows = () =>
  snapshotTables(t.db, ["sessions", "session_providers", "session_templates", "session_template_providers"]);

describe("sessions: security", () => {
  it("refuses every session operation without a valid key with 401, and writes nothing", async () => {
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(mine.deployment.id) },
    });
    await expectUnauthorizedEverywhere(
      t,
      [
        ["/sessions", { method: "GET" }],
        ["/sessions", json("POST", { providers: { provider_deployment: deploymentRef(mine.deployment.id) } })],
        [`/sessions/${session.id}`, { method: "GET" }],
        [`/sessions/${session.id}`, json("PATCH", { name: "Hijacked" })],
        [`/sessions/${session.id}`, { method: "DELETE" }],
      ],
      allRows,
    );
  });

  it("answers 404 for another instance's session on every path, exactly as for an unknown id", async () => {
    const theirSession = await createSession(other.client, {
      name: "Their session",
      providers: { provider_deployment: deploymentRef(theirs.deployment.id) },
    });
    const path = { session_id: theirSession.id };
    const answers = await expectCrossTenantNotFound(t, {
      attempts: async () => [
        await t.client.GET("/sessions/{session_id}", { params: { path } }),
        await t.client.PATCH("/sessions/{session_id}", { params: { path }, body: { name: "Mine now" } }),
        await t.client.DELETE("/sessions/{session_id}", { params: { path } }),
      ],
      entity: "session",
      hidden: ["Their session"],
      unchanged: allRows,
    });
    const unknownId = "ses_01jqz7m3c8v4r2k9x5n6t0w1ye";
    const unknown = await t.client.GET("/sessions/{session_id}", { params: { path: { session_id: unknownId } } });
    expectSameAsUnknown(answers[0] ?? {}, theirSession.id, unknown, unknownId);
    const list = await unwrap(t.client.GET("/sessions"));
    expect(list.items.map((s) => s.id)).not.toContain(theirSession.id);
    expect(
      (
        await unwrap(
          t.client.GET("/sessions", { params: { query: { provider_deployment_id: [theirs.deployment.id] } } }),
        )
      ).items,
    ).toEqual([]);
  });

  it("answers 404 when an entry names another instance's deployment, config, auth config or template", async () => {
    const theirTemplate = await createTemplate(other.client, {
      name: "Their template",
      providers: { provider_deployment: deploymentRef(theirs.deployment.id) },
    });
    const cases: [unknown, string][] = [
      [{ provider_deployment: deploymentRef(theirs.deployment.id) }, "provider.deployment"],
      [
        { provider_deployment: deploymentRef(mine.deployment.id), provider_config: configRef(theirs.config.id) },
        "provider.config",
      ],
      [
        {
          provider_deployment: deploymentRef(mine.deployment.id),
          provider_auth_config: authConfigRef(theirs.authConfig.id),
        },
        "provider.auth_config",
      ],
      [{ session_template_id: theirTemplate.id }, "session.template"],
    ];
    for (const [entry, entity] of cases) {
      await expectCrossTenantNotFound(t, {
        attempts: [["/sessions", json("POST", { providers: entry })]],
        entity,
        hidden: ["Theirs", "Their template"],
        unchanged: allRows,
      });
    }
  });

  it("stores only the SHA-256 of the session secret and returns the secret only when the session is created", async () => {
    const { deployment } = await everythingDeployment(t);
    const session = await createSession(t.client, { providers: { provider_deployment: deploymentRef(deployment.id) } });
    const secret = session.secret ?? "";
    expect(secret).toMatch(/^tpss_.{32}$/);
    const row = await t.db
      .selectFrom("sessions")
      .select("secret_hash")
      .where("id", "=", session.id)
      .executeTakeFirstOrThrow();
    expect(row.secret_hash).toBe(createHash("sha256").update(secret).digest("hex"));
    const dump = JSON.stringify(await dumpAllTables(t.db));
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain(secret.slice(5));

    const path = { session_id: session.id };
    const reads = [
      await unwrap(t.client.GET("/sessions/{session_id}", { params: { path } })),
      await unwrap(t.client.PATCH("/sessions/{session_id}", { params: { path }, body: { name: "Renamed" } })),
      ...(await unwrap(t.client.GET("/sessions"))).items,
      await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path } })),
    ];
    for (const read of reads) expect(read.secret).toBeNull();
    // Every session gets its own secret.
    const second = await createSession(t.client, { providers: { provider_deployment: deploymentRef(deployment.id) } });
    expect(second.secret).not.toBe(secret);
  });
});
