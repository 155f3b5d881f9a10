import { unwrap } from "@toolplane/client";
import { describe, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  expectCrossTenantNotFound,
  expectUnauthorizedEverywhere,
  json,
  snapshotTables,
} from "../../support/security.ts";
import { authConfigRef, configRef, createTemplate, deploymentRef, githubSetup } from "../sessions/session-fixtures.ts";

const t = useTestServer();
const other = fixture(() => t.createTenant("other"));
const mine = fixture(() => githubSetup(t));
const theirs = fixture(() => githubSetup(t, other.client, "Theirs"));

const allRows = () => snapshotTables(t.db, ["session_templates", "session_template_providers"]);

const firstProvider = async (client: typeof t.client, templateId: string) => {
  const [tp] = (
    await unwrap(
      client.GET("/session-templates/{session_template_id}/providers", {
        params: { path: { session_template_id: templateId } },
      }),
    )
  ).items;
  if (!tp) throw new Error("template has no provider");
  return tp;
};

describe("session template providers: security", () => {
  it("refuses every operation without a valid key with 401, and writes nothing", async () => {
    const template = await createTemplate(t.client, {
      name: "Guarded",
      providers: { provider_deployment: deploymentRef(mine.deployment.id) },
    });
    const base = `/session-templates/${template.id}/providers`;
    const item = `${base}/${(await firstProvider(t.client, template.id)).id}`;
    await expectUnauthorizedEverywhere(
      t,
      [
        [base, { method: "GET" }],
        [base, json("POST", { provider_deployment: deploymentRef(mine.deployment.id) })],
        [item, { method: "GET" }],
        [item, json("PATCH", { name: "Hijacked" })],
        [item, { method: "DELETE" }],
      ],
      allRows,
    );
  });

  it("answers 404 on every path under another instance's template, and for their provider under mine", async () => {
    const theirTemplate = await createTemplate(other.client, {
      name: "Their template",
      providers: { provider_deployment: deploymentRef(theirs.deployment.id) },
    });
    const theirProvider = await firstProvider(other.client, theirTemplate.id);
    const base = `/session-templates/${theirTemplate.id}/providers`;
    const item = `${base}/${theirProvider.id}`;
    await expectCrossTenantNotFound(t, {
      attempts: [
        [base, { method: "GET" }],
        [base, json("POST", { provider_deployment: deploymentRef(mine.deployment.id) })],
        [item, { method: "GET" }],
        [item, json("PATCH", { name: "Mine now" })],
        [item, { method: "DELETE" }],
      ],
      entity: "session.template",
      hidden: ["Their template", theirs.deployment.id],
      unchanged: allRows,
    });
    const template = await createTemplate(t.client, { name: "Mine" });
    const foreign = `/session-templates/${template.id}/providers/${theirProvider.id}`;
    await expectCrossTenantNotFound(t, {
      attempts: [
        [foreign, { method: "GET" }],
        [foreign, json("PATCH", { name: "Mine now" })],
        [foreign, { method: "DELETE" }],
      ],
      entity: "session.template.provider",
      unchanged: allRows,
    });
  });

  it("answers 404 when adding or switching to another instance's deployment, config or auth config", async () => {
    const template = await createTemplate(t.client, {
      name: "Mine",
      providers: { provider_deployment: deploymentRef(mine.deployment.id) },
    });
    const base = `/session-templates/${template.id}/providers`;
    const item = `${base}/${(await firstProvider(t.client, template.id)).id}`;
    const cases: [string, string, unknown, string][] = [
      [base, "POST", { provider_deployment: deploymentRef(theirs.deployment.id) }, "provider.deployment"],
      [item, "PATCH", { provider_deployment: deploymentRef(theirs.deployment.id) }, "provider.deployment"],
      [item, "PATCH", { provider_config: configRef(theirs.config.id) }, "provider.config"],
      [item, "PATCH", { provider_auth_config: authConfigRef(theirs.authConfig.id) }, "provider.auth_config"],
    ];
    for (const [path, method, body, entity] of cases) {
      await expectCrossTenantNotFound(t, {
        attempts: [[path, json(method, body)]],
        entity,
        hidden: ["Theirs"],
        unchanged: allRows,
      });
    }
  });
});
