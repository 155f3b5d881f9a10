import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { createInlineConfig } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { json } from "../../support/security.ts";
import {
  authConfigRef,
  configRef,
  createSession,
  createTemplate,
  deploymentRef,
  everythingDeployment,
  githubSetup,
  sessionCounts,
} from "./session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const gh2 = fixture(() => githubSetup(t, t.client, "GitHub 2"));
const ev = fixture(() => everythingDeployment(t));

const UNKNOWN_SESSION = "ses_01jqz7m3c8v4r2k9x5n6t0w1ye";

/** POSTs a session body raw and returns the status and error body; nothing may have been written. */
async function refusedCreate(body: unknown) {
  const before = await sessionCounts(t.db);
  const res = await t.fetch("/sessions", json("POST", body));
  const error = (await res.json()) as { code: string; message: string; errors?: { path: unknown[] }[] };
  expect(await sessionCounts(t.db)).toEqual(before);
  return { status: res.status, error };
}

describe("sessions: create errors", () => {
  it("answers 400 for an entry without deployment or template, a mixed entry and an empty result", async () => {
    const empty = await createTemplate(t.client, { name: "Empty" });
    const cases: [unknown, unknown[]][] = [
      [{ providers: [{ provider_deployment: deploymentRef(ev.deployment.id) }, {}] }, ["providers", 1]],
      [{ providers: { tool_filters: { tool_keys: ["x"] } } }, ["providers"]],
      [
        {
          providers: [{ session_template_id: empty.id, provider_deployment: deploymentRef(ev.deployment.id) }],
        },
        ["providers", 0, "provider_deployment"],
      ],
      [{ providers: { session_template_id: empty.id } }, ["providers"]],
    ];
    for (const [body, path] of cases) {
      const { status, error } = await refusedCreate(body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(error.code).toBe("invalid_data");
      expect(error.errors?.[0]?.path, JSON.stringify(error)).toEqual(path);
    }
  });

  it("answers 400 with the field path for a config or auth config of another deployment", async () => {
    const config = await refusedCreate({
      providers: [
        { provider_deployment: deploymentRef(ev.deployment.id) },
        { provider_deployment: deploymentRef(gh.deployment.id), provider_config: configRef(gh2.config.id) },
      ],
    });
    expect(config.status).toBe(400);
    expect(config.error.message).toContain(gh2.deployment.id);
    expect(config.error.errors?.[0]?.path).toEqual(["providers", 1, "provider_config", "provider_config_id"]);
    const auth = await refusedCreate({
      providers: {
        provider_deployment: deploymentRef(gh.deployment.id),
        provider_auth_config: authConfigRef(gh2.authConfig.id),
      },
    });
    expect(auth.status).toBe(400);
    expect(auth.error.errors?.[0]?.path).toEqual(["providers", "provider_auth_config", "provider_auth_config_id"]);
  });

  it("answers 404 with the path for unknown deployments, configs, auth configs and templates", async () => {
    const cases: [unknown, unknown[]][] = [
      [
        { providers: [{ provider_deployment: deploymentRef("pde_01jqz7m3c8v4r2k9x5n6t0w1yd") }] },
        ["providers", 0, "provider_deployment", "provider_deployment_id"],
      ],
      [
        {
          providers: {
            provider_deployment: deploymentRef(gh.deployment.id),
            provider_config: configRef("pcf_01jqz7m3c8v4r2k9x5n6t0w1yd"),
          },
        },
        ["providers", "provider_config", "provider_config_id"],
      ],
      [
        {
          providers: {
            provider_deployment: deploymentRef(gh.deployment.id),
            provider_auth_config: authConfigRef("pac_01jqz7m3c8v4r2k9x5n6t0w1yd"),
          },
        },
        ["providers", "provider_auth_config", "provider_auth_config_id"],
      ],
      [
        {
          providers: [
            { provider_deployment: deploymentRef(ev.deployment.id) },
            { session_template_id: "set_01jqz7m3c8v4r2k9x5n6t0w1yh" },
          ],
        },
        ["providers", 1, "session_template_id"],
      ],
    ];
    for (const [body, path] of cases) {
      const { status, error } = await refusedCreate(body);
      expect(status, JSON.stringify(body)).toBe(404);
      expect(error.code).toBe("not_found");
      expect(error.errors?.[0]?.path).toEqual(path);
    }
  });

  it("answers 400 for malformed bodies: no providers, bad references, too many entries, unknown members", async () => {
    const entry = { provider_deployment: deploymentRef(ev.deployment.id) };
    for (const body of [
      {},
      { providers: [] },
      { providers: Array.from({ length: 51 }, () => entry) },
      { providers: { provider_deployment: { type: "inline", provider_deployment_id: ev.deployment.id } } },
      { providers: entry, extra: true },
      { providers: { ...entry, tool_filters: { tool_keys: "echo" } } },
      { providers: entry, name: "" },
    ]) {
      const { status, error } = await refusedCreate(body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(error.code).toBe("invalid_data");
    }
  });
});

describe("sessions: read, update and delete errors", () => {
  it("answers 404 for unknown sessions on every path", async () => {
    const path = { session_id: UNKNOWN_SESSION };
    for (const res of [
      await t.client.GET("/sessions/{session_id}", { params: { path } }),
      await t.client.PATCH("/sessions/{session_id}", { params: { path }, body: { name: "x" } }),
      await t.client.DELETE("/sessions/{session_id}", { params: { path } }),
    ]) {
      expect(res.response.status).toBe(404);
      expect(res.error).toMatchObject({ code: "not_found", entity: "session" });
    }
  });

  it("answers 409 when updating or deleting a deleted session, and changes nothing", async () => {
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    const path = { session_id: session.id };
    const deleted = await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path } }));
    const patch = await t.client.PATCH("/sessions/{session_id}", { params: { path }, body: { name: "Revived" } });
    expect(patch.response.status).toBe(409);
    expect(patch.error).toMatchObject({ code: "conflict", entity: "session" });
    const again = await t.client.DELETE("/sessions/{session_id}", { params: { path } });
    expect(again.response.status).toBe(409);
    expect(await unwrap(t.client.GET("/sessions/{session_id}", { params: { path } }))).toEqual(deleted);
  });

  it("answers 400 for bad list parameters", async () => {
    for (const query of [
      "status=paused",
      "limit=0",
      "limit=101",
      "order=sideways",
      "after=ses_a&before=ses_b",
      "cursor=not-a-cursor",
    ]) {
      const res = await t.fetch(`/sessions?${query}`);
      expect(res.status, query).toBe(400);
    }
  });
});

describe("deleting what sessions and templates use", () => {
  it("refuses to delete a deployment an active session or a template uses, and allows it once they let go", async () => {
    const { deployment } = await everythingDeployment(t, t.client, "In use");
    const session = await createSession(t.client, { providers: { provider_deployment: deploymentRef(deployment.id) } });
    const path = { provider_deployment_id: deployment.id };
    const blocked = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } });
    expect(blocked.response.status).toBe(409);
    expect(blocked.error).toMatchObject({ code: "conflict", message: expect.stringContaining(session.id) });

    const template = await createTemplate(t.client, {
      name: "Uses it",
      providers: { provider_deployment: deploymentRef(deployment.id) },
    });
    await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: session.id } } }));
    const byTemplate = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } });
    expect(byTemplate.response.status).toBe(409);
    expect(byTemplate.error).toMatchObject({ code: "conflict", message: expect.stringContaining(template.id) });

    const [tp] = (
      await unwrap(
        t.client.GET("/session-templates/{session_template_id}/providers", {
          params: { path: { session_template_id: template.id } },
        }),
      )
    ).items;
    await unwrap(
      t.client.DELETE("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path: { session_template_id: template.id, session_template_provider_id: tp?.id ?? "" } },
      }),
    );
    await unwrap(t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } }));
    // The ended session keeps its history, deployment id included.
    const [provider] = (
      await unwrap(t.client.GET("/sessions/{session_id}/providers", { params: { path: { session_id: session.id } } }))
    ).items;
    expect(provider).toMatchObject({ provider_deployment_id: deployment.id, status: "active" });
  });

  it("refuses to delete a config or auth config an active session uses, and allows it once the session ends", async () => {
    const { deployment, config, authConfig } = await githubSetup(t, t.client, "Referenced");
    const session = await createSession(t.client, {
      providers: {
        provider_deployment: deploymentRef(deployment.id),
        provider_config: configRef(config.id),
        provider_auth_config: authConfigRef(authConfig.id),
      },
    });
    const configPath = { provider_deployment_id: deployment.id, provider_config_id: config.id };
    const authPath = { provider_deployment_id: deployment.id, provider_auth_config_id: authConfig.id };
    const deleteConfig = () =>
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: configPath },
      });
    const deleteAuthConfig = () =>
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}", {
        params: { path: authPath },
      });
    const before = await sessionCounts(t.db);
    for (const [attempt, entity] of [
      [deleteConfig, "provider.config"],
      [deleteAuthConfig, "provider.auth_config"],
    ] as const) {
      const blocked = await attempt();
      expect(blocked.response.status, entity).toBe(409);
      expect(blocked.error, entity).toMatchObject({
        code: "conflict",
        entity,
        message: expect.stringContaining(session.id),
      });
    }
    // Both are still there and still referenced.
    await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: configPath },
      }),
    );
    expect(await sessionCounts(t.db)).toEqual(before);

    await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: session.id } } }));
    expect((await deleteConfig()).response.status).toBe(200);
    expect((await deleteAuthConfig()).response.status).toBe(200);
  });

  it("lets a deployment go once the session's provider using it is removed", async () => {
    const { deployment } = await everythingDeployment(t, t.client, "Removed from session");
    const session = await createSession(t.client, {
      providers: [
        { provider_deployment: deploymentRef(deployment.id) },
        { provider_deployment: deploymentRef(ev.deployment.id) },
      ],
    });
    await unwrap(
      t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: { session_id: session.id, session_provider_id: session.provider_deployments[0]?.id ?? "" } },
      }),
    );
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
        params: { path: { provider_deployment_id: deployment.id } },
      }),
    );
    const got = await unwrap(t.client.GET("/sessions/{session_id}", { params: { path: { session_id: session.id } } }));
    expect(got.provider_deployments.map((p) => p.provider_deployment_id)).toEqual([ev.deployment.id]);
  });

  it("clears an ended session's reference to a config deleted later", async () => {
    const { deployment } = await githubSetup(t, t.client, "Config history");
    const config = await createInlineConfig(t.client, deployment.id, "Later deleted", { toolsets: "issues" });
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(deployment.id), provider_config: configRef(config.id) },
    });
    await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: session.id } } }));
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: { provider_deployment_id: deployment.id, provider_config_id: config.id } },
      }),
    );
    const [provider] = (
      await unwrap(t.client.GET("/sessions/{session_id}/providers", { params: { path: { session_id: session.id } } }))
    ).items;
    expect(provider?.provider_config_id).toBeNull();
  });
});
