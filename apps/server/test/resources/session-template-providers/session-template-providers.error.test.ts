import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { json, snapshotTables } from "../../support/security.ts";
import {
  authConfigRef,
  configRef,
  createTemplate,
  deploymentRef,
  everythingDeployment,
  githubSetup,
} from "../sessions/session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const gh2 = fixture(() => githubSetup(t, t.client, "GitHub 2"));
const ev = fixture(() => everythingDeployment(t));

const rows = () => snapshotTables(t.db, ["session_template_providers"]);

async function refused(path: string, method: string, body: unknown) {
  const before = await rows();
  const res = await t.fetch(path, body === undefined ? { method } : json(method, body));
  const error = (await res.json()) as { code: string; entity?: string; errors?: { path: unknown[] }[] };
  expect(await rows()).toEqual(before);
  return { status: res.status, error };
}

describe("session template providers: errors", () => {
  it("answers 400 when the config or auth config is not of the (new) deployment", async () => {
    const template = await createTemplate(t.client, {
      name: "T",
      providers: { provider_deployment: deploymentRef(gh.deployment.id), provider_config: configRef(gh.config.id) },
    });
    const base = `/session-templates/${template.id}/providers`;
    const addMismatch = await refused(base, "POST", {
      provider_deployment: deploymentRef(gh.deployment.id),
      provider_auth_config: authConfigRef(gh2.authConfig.id),
    });
    expect(addMismatch.status).toBe(400);
    expect(addMismatch.error.errors?.[0]?.path).toEqual(["provider_auth_config", "provider_auth_config_id"]);

    const [tp] = (
      await unwrap(
        t.client.GET("/session-templates/{session_template_id}/providers", {
          params: { path: { session_template_id: template.id } },
        }),
      )
    ).items;
    // Moving to another deployment while keeping the old deployment's config.
    const move = await refused(`${base}/${tp?.id}`, "PATCH", { provider_deployment: deploymentRef(gh2.deployment.id) });
    expect(move.status).toBe(400);
    expect(move.error.errors?.[0]?.path).toEqual(["provider_config", "provider_config_id"]);
    const wrongConfig = await refused(`${base}/${tp?.id}`, "PATCH", { provider_config: configRef(gh2.config.id) });
    expect(wrongConfig.status).toBe(400);
  });

  it("answers 404 for unknown templates, providers and references", async () => {
    const template = await createTemplate(t.client, { name: "T" });
    const otherTemplate = await createTemplate(t.client, {
      name: "Other",
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    const [foreign] = (
      await unwrap(
        t.client.GET("/session-templates/{session_template_id}/providers", {
          params: { path: { session_template_id: otherTemplate.id } },
        }),
      )
    ).items;
    const base = `/session-templates/${template.id}/providers`;
    for (const [path, method, body, entity] of [
      ["/session-templates/set_01jqz7m3c8v4r2k9x5n6t0w1yh/providers", "GET", undefined, "session.template"],
      [
        "/session-templates/set_01jqz7m3c8v4r2k9x5n6t0w1yh/providers",
        "POST",
        { provider_deployment: deploymentRef(ev.deployment.id) },
        "session.template",
      ],
      [`${base}/${foreign?.id}`, "GET", undefined, "session.template.provider"],
      [`${base}/${foreign?.id}`, "PATCH", { name: "x" }, "session.template.provider"],
      [`${base}/${foreign?.id}`, "DELETE", undefined, "session.template.provider"],
      [base, "POST", { provider_deployment: deploymentRef("pde_01jqz7m3c8v4r2k9x5n6t0w1yd") }, "provider.deployment"],
      [
        base,
        "POST",
        {
          provider_deployment: deploymentRef(gh.deployment.id),
          provider_auth_config: authConfigRef("pac_01jqz7m3c8v4r2k9x5n6t0w1yd"),
        },
        "provider.auth_config",
      ],
    ] as const) {
      const { status, error } = await refused(path, method, body);
      expect(status, `${method} ${path}`).toBe(404);
      expect(error.entity, `${method} ${path}`).toBe(entity);
    }
  });

  it("answers 400 for malformed bodies", async () => {
    const template = await createTemplate(t.client, {
      name: "T",
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    const base = `/session-templates/${template.id}/providers`;
    for (const body of [{}, { provider_deployment: deploymentRef(ev.deployment.id), session_template_id: "set_x" }]) {
      expect((await refused(base, "POST", body)).status, JSON.stringify(body)).toBe(400);
    }
    const [tp] = (
      await unwrap(
        t.client.GET("/session-templates/{session_template_id}/providers", {
          params: { path: { session_template_id: template.id } },
        }),
      )
    ).items;
    for (const body of [{ provider_deployment: null }, { name: "" }, { tool_filters: { tool_keys: [1] } }]) {
      expect((await refused(`${base}/${tp?.id}`, "PATCH", body)).status, JSON.stringify(body)).toBe(400);
    }
  });
});
