import { describe, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  expectCrossTenantNotFound,
  expectUnauthorizedEverywhere,
  json,
  snapshotTables,
} from "../../support/security.ts";
import { authConfigRef, configRef, createSession, deploymentRef, githubSetup } from "../sessions/session-fixtures.ts";

const t = useTestServer();
const other = fixture(() => t.createTenant("other"));
const mine = fixture(() => githubSetup(t));
const theirs = fixture(() => githubSetup(t, other.client, "Theirs"));

const allRows = () => snapshotTables(t.db, ["sessions", "session_providers"]);

describe("session providers: security", () => {
  it("refuses every session provider operation without a valid key with 401, and writes nothing", async () => {
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(mine.deployment.id) },
    });
    const item = `/sessions/${session.id}/providers/${session.provider_deployments[0]?.id}`;
    await expectUnauthorizedEverywhere(
      t,
      [
        [`/sessions/${session.id}/providers`, { method: "GET" }],
        [`/sessions/${session.id}/providers`, json("POST", { provider_deployment: deploymentRef(mine.deployment.id) })],
        [item, { method: "GET" }],
        [item, json("PATCH", { name: "Hijacked" })],
        [item, { method: "DELETE" }],
      ],
      allRows,
    );
  });

  it("answers 404 on every path under another instance's session", async () => {
    const theirSession = await createSession(other.client, {
      name: "Their session",
      providers: { provider_deployment: deploymentRef(theirs.deployment.id) },
    });
    const base = `/sessions/${theirSession.id}/providers`;
    const item = `${base}/${theirSession.provider_deployments[0]?.id}`;
    await expectCrossTenantNotFound(t, {
      attempts: [
        [base, { method: "GET" }],
        [base, json("POST", { provider_deployment: deploymentRef(mine.deployment.id) })],
        [item, { method: "GET" }],
        [item, json("PATCH", { name: "Mine now" })],
        [item, { method: "DELETE" }],
      ],
      entity: "session",
      hidden: ["Their session", theirs.deployment.id],
      unchanged: allRows,
    });
    // Their provider id under my session is unknown too.
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(mine.deployment.id) },
    });
    const foreign = `/sessions/${session.id}/providers/${theirSession.provider_deployments[0]?.id}`;
    await expectCrossTenantNotFound(t, {
      attempts: [
        [foreign, { method: "GET" }],
        [foreign, json("PATCH", { name: "Mine now" })],
        [foreign, { method: "DELETE" }],
      ],
      entity: "session.provider",
      unchanged: allRows,
    });
  });

  it("answers 404 when adding another instance's deployment, config or auth config", async () => {
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(mine.deployment.id) },
    });
    const base = `/sessions/${session.id}/providers`;
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
    ];
    for (const [body, entity] of cases) {
      await expectCrossTenantNotFound(t, {
        attempts: [[base, json("POST", body)]],
        entity,
        hidden: ["Theirs"],
        unchanged: allRows,
      });
    }
  });
});
