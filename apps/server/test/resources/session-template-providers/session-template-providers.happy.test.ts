import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  authConfigRef,
  configRef,
  createTemplate,
  deploymentRef,
  everythingDeployment,
  githubSetup,
  ISO,
} from "../sessions/session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const gh2 = fixture(() => githubSetup(t, t.client, "GitHub 2"));
const ev = fixture(() => everythingDeployment(t));

const add = (templateId: string, body: Record<string, unknown>) =>
  unwrap(
    t.client.POST("/session-templates/{session_template_id}/providers", {
      params: { path: { session_template_id: templateId } },
      body: body as never,
    }),
  );

const update = (templateId: string, id: string, body: Record<string, unknown>) =>
  unwrap(
    t.client.PATCH("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
      params: { path: { session_template_id: templateId, session_template_provider_id: id } },
      body: body as never,
    }),
  );

describe("session template providers", () => {
  it("adds, gets and removes a provider with the names of what it references", async () => {
    const template = await createTemplate(t.client, { name: "T" });
    const added = await add(template.id, {
      provider_deployment: deploymentRef(gh.deployment.id),
      provider_config: configRef(gh.config.id),
      provider_auth_config: authConfigRef(gh.authConfig.id),
      tool_filters: { tool_keys: ["get_me"] },
      name: "GitHub",
      metadata: { m: 1 },
    });
    expect(added).toEqual({
      object: "session.template.provider",
      id: expect.stringMatching(/^stp_[0-9a-z]{26}$/),
      name: "GitHub",
      description: null,
      metadata: { m: 1 },
      session_template_id: template.id,
      provider_id: gh.providerId,
      provider_deployment_id: gh.deployment.id,
      provider_deployment_name: "GitHub",
      provider_config_id: gh.config.id,
      provider_config_name: "GitHub config",
      provider_auth_config_id: gh.authConfig.id,
      provider_auth_config_name: "GitHub connection",
      tool_filters: { tool_keys: ["get_me"] },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const path = { session_template_id: template.id, session_template_provider_id: added.id };
    expect(
      await unwrap(
        t.client.GET("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
          params: { path },
        }),
      ),
    ).toEqual(added);
    const removed = await unwrap(
      t.client.DELETE("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path },
      }),
    );
    expect(removed).toEqual(added);
    const gone = await t.client.GET(
      "/session-templates/{session_template_id}/providers/{session_template_provider_id}",
      { params: { path } },
    );
    expect(gone.response.status).toBe(404);
  });

  it("updates any field, clears nullable ones and moves to another deployment with its own config", async () => {
    const template = await createTemplate(t.client, { name: "T" });
    const added = await add(template.id, {
      provider_deployment: deploymentRef(gh.deployment.id),
      provider_config: configRef(gh.config.id),
      provider_auth_config: authConfigRef(gh.authConfig.id),
      tool_filters: { tool_keys: ["get_me"] },
    });
    const moved = await update(template.id, added.id, {
      provider_deployment: deploymentRef(gh2.deployment.id),
      provider_config: configRef(gh2.config.id),
      provider_auth_config: null,
      name: "Moved",
    });
    expect(moved).toMatchObject({
      name: "Moved",
      provider_deployment_id: gh2.deployment.id,
      provider_deployment_name: "GitHub 2",
      provider_config_id: gh2.config.id,
      provider_auth_config_id: null,
      provider_auth_config_name: null,
      tool_filters: { tool_keys: ["get_me"] },
    });
    const cleared = await update(template.id, added.id, { provider_config: null, tool_filters: null, name: null });
    expect(cleared).toMatchObject({
      name: null,
      provider_config_id: null,
      provider_config_name: null,
      tool_filters: null,
    });
    const toOtherProvider = await update(template.id, added.id, {
      provider_deployment: deploymentRef(ev.deployment.id),
    });
    expect(toOtherProvider).toMatchObject({ provider_id: ev.providerId, provider_deployment_id: ev.deployment.id });
  });

  it("lists with pagination and the provider filter in every form", async () => {
    const template = await createTemplate(t.client, {
      name: "Many",
      providers: [
        { provider_deployment: deploymentRef(ev.deployment.id) },
        { provider_deployment: deploymentRef(gh.deployment.id) },
        { provider_deployment: deploymentRef(ev.deployment.id) },
      ],
    });
    const ids = async (query: string) => {
      const res = await t.fetch(`/session-templates/${template.id}/providers?${query}`);
      expect(res.status, query).toBe(200);
      return ((await res.json()) as { items: { id: string }[] }).items.map((p) => p.id);
    };
    const all = await ids("");
    expect(all).toHaveLength(3);
    expect(await ids("order=desc")).toEqual([...all].reverse());
    expect(await ids(`limit=1&after=${all[0]}`)).toEqual([all[1]]);
    for (const form of [
      `provider_id=${ev.providerId}`,
      `provider_id[]=${ev.providerId}`,
      `provider_id[0]=${ev.providerId}`,
    ]) {
      expect(await ids(form), form).toEqual([all[0], all[2]]);
    }
    for (const form of [
      `provider_id=${ev.providerId}&provider_id=${gh.providerId}`,
      `provider_id[]=${ev.providerId}&provider_id[]=${gh.providerId}`,
      `provider_id[0]=${ev.providerId}&provider_id[1]=${gh.providerId}`,
    ]) {
      expect(await ids(form), form).toEqual(all);
    }
  });
});
