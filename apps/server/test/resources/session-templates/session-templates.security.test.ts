import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  expectCrossTenantNotFound,
  expectUnauthorizedEverywhere,
  json,
  snapshotTables,
} from "../../support/security.ts";
import { configRef, createTemplate, deploymentRef, githubSetup } from "../sessions/session-fixtures.ts";

const t = useTestServer();
const other = fixture(() => t.createTenant("other"));
const mine = fixture(() => githubSetup(t));
const theirs = fixture(() => githubSetup(t, other.client, "Theirs"));

const allRows = () => snapshotTables(t.db, ["session_templates", "session_template_providers"]);

describe("session templates: security", () => {
  it("refuses every template operation without a valid key with 401, and writes nothing", async () => {
    const template = await createTemplate(t.client, { name: "Guarded" });
    await expectUnauthorizedEverywhere(
      t,
      [
        ["/session-templates", { method: "GET" }],
        ["/session-templates", json("POST", { name: "Sneaky" })],
        [`/session-templates/${template.id}`, { method: "GET" }],
        [`/session-templates/${template.id}`, json("PATCH", { name: "Hijacked" })],
      ],
      allRows,
    );
  });

  it("answers 404 for another instance's template, and never lists it", async () => {
    const theirTemplate = await createTemplate(other.client, { name: "Their template" });
    await expectCrossTenantNotFound(t, {
      attempts: [
        [`/session-templates/${theirTemplate.id}`, { method: "GET" }],
        [`/session-templates/${theirTemplate.id}`, json("PATCH", { name: "Mine now" })],
      ],
      entity: "session.template",
      hidden: ["Their template"],
      unchanged: allRows,
    });
    const list = await unwrap(t.client.GET("/session-templates"));
    expect(list.items.map((x) => x.id)).not.toContain(theirTemplate.id);
  });

  it("answers 404 when an entry names another instance's deployment, config or template", async () => {
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
      [{ session_template_id: theirTemplate.id }, "session.template"],
    ];
    for (const [entry, entity] of cases) {
      await expectCrossTenantNotFound(t, {
        attempts: [["/session-templates", json("POST", { name: "Copy", providers: entry })]],
        entity,
        hidden: ["Theirs", "Their template"],
        unchanged: allRows,
      });
    }
  });
});
