import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { json } from "../../support/security.ts";
import {
  authConfigRef,
  configRef,
  createSession,
  deploymentRef,
  everythingDeployment,
  githubSetup,
  sessionCounts,
} from "../sessions/session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const gh2 = fixture(() => githubSetup(t, t.client, "GitHub 2"));
const ev = fixture(() => everythingDeployment(t));

const newSession = () =>
  createSession(t.client, { providers: { provider_deployment: deploymentRef(ev.deployment.id) } });

async function refusedAdd(sessionId: string, body: unknown) {
  const before = await sessionCounts(t.db);
  const res = await t.fetch(`/sessions/${sessionId}/providers`, json("POST", body));
  const error = (await res.json()) as { code: string; message: string; errors?: { path: unknown[] }[] };
  expect(await sessionCounts(t.db)).toEqual(before);
  return { status: res.status, error };
}

describe("session providers: errors", () => {
  it("answers 409 when adding to or removing from a session that is not active", async () => {
    const session = await newSession();
    await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: session.id } } }));
    const add = await refusedAdd(session.id, { provider_deployment: deploymentRef(ev.deployment.id) });
    expect(add.status).toBe(409);
    expect(add.error).toMatchObject({ code: "conflict", message: expect.stringContaining("deleted") });
    const remove = await t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
      params: { path: { session_id: session.id, session_provider_id: session.provider_deployments[0]?.id ?? "" } },
    });
    expect(remove.response.status).toBe(409);
  });

  it("answers 409 when removing a provider twice", async () => {
    const session = await newSession();
    const path = { session_id: session.id, session_provider_id: session.provider_deployments[0]?.id ?? "" };
    await unwrap(t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", { params: { path } }));
    const again = await t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
      params: { path },
    });
    expect(again.response.status).toBe(409);
    expect(again.error).toMatchObject({ code: "conflict", message: expect.stringContaining("already removed") });
  });

  it("answers 400 with the field path for a config or auth config of another deployment", async () => {
    const session = await newSession();
    const config = await refusedAdd(session.id, {
      provider_deployment: deploymentRef(gh.deployment.id),
      provider_config: configRef(gh2.config.id),
    });
    expect(config.status).toBe(400);
    expect(config.error.errors?.[0]?.path).toEqual(["provider_config", "provider_config_id"]);
    const auth = await refusedAdd(session.id, {
      provider_deployment: deploymentRef(gh.deployment.id),
      provider_auth_config: authConfigRef(gh2.authConfig.id),
    });
    expect(auth.status).toBe(400);
    expect(auth.error.errors?.[0]?.path).toEqual(["provider_auth_config", "provider_auth_config_id"]);
  });

  it("answers 404 for unknown references, sessions and providers, and a provider of another session", async () => {
    const session = await newSession();
    const otherSession = await newSession();
    for (const [body, path] of [
      [
        { provider_deployment: deploymentRef("pde_01jqz7m3c8v4r2k9x5n6t0w1yd") },
        ["provider_deployment", "provider_deployment_id"],
      ],
      [
        {
          provider_deployment: deploymentRef(gh.deployment.id),
          provider_config: configRef("pcf_01jqz7m3c8v4r2k9x5n6t0w1yd"),
        },
        ["provider_config", "provider_config_id"],
      ],
    ] as const) {
      const { status, error } = await refusedAdd(session.id, body);
      expect(status).toBe(404);
      expect(error.errors?.[0]?.path).toEqual(path);
    }
    const unknownSession = await refusedAdd("ses_01jqz7m3c8v4r2k9x5n6t0w1ye", {
      provider_deployment: deploymentRef(ev.deployment.id),
    });
    expect(unknownSession.status).toBe(404);
    expect(unknownSession.error).toMatchObject({ entity: "session" });

    const foreignProvider = {
      session_id: session.id,
      session_provider_id: otherSession.provider_deployments[0]?.id ?? "",
    };
    for (const res of [
      await t.client.GET("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: foreignProvider },
      }),
      await t.client.PATCH("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: foreignProvider },
        body: { name: "x" },
      }),
      await t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: foreignProvider },
      }),
    ]) {
      expect(res.response.status).toBe(404);
      expect(res.error).toMatchObject({ code: "not_found", entity: "session.provider" });
    }
    const list = await t.client.GET("/sessions/{session_id}/providers", {
      params: { path: { session_id: "ses_01jqz7m3c8v4r2k9x5n6t0w1ye" } },
    });
    expect(list.response.status).toBe(404);
  });

  it("answers 400 for malformed bodies and changes of fixed fields", async () => {
    const session = await newSession();
    for (const body of [
      {},
      { provider_deployment: { type: "reference" } },
      { provider_deployment: deploymentRef(ev.deployment.id), session_template_id: "set_x" },
      { provider_deployment: deploymentRef(ev.deployment.id), tool_filters: { keys: [] } },
    ]) {
      const { status } = await refusedAdd(session.id, body);
      expect(status, JSON.stringify(body)).toBe(400);
    }
    const path = `/sessions/${session.id}/providers/${session.provider_deployments[0]?.id}`;
    for (const body of [
      { provider_deployment: deploymentRef(gh.deployment.id) },
      { tool_filters: null },
      { name: "" },
    ]) {
      const res = await t.fetch(path, json("PATCH", body));
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await t.fetch(`/sessions/${session.id}/providers?status=gone`)).status).toBe(400);
  });
});
