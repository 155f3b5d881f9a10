import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  authConfigRef,
  configRef,
  createSession,
  createTemplate,
  deploymentRef,
  everythingDeployment,
  githubSetup,
  ISO,
  listSessionProviders,
} from "../sessions/session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const ev = fixture(() => everythingDeployment(t));

const templateProviders = async (templateId: string) =>
  (
    await unwrap(
      t.client.GET("/session-templates/{session_template_id}/providers", {
        params: { path: { session_template_id: templateId } },
      }),
    )
  ).items;

describe("session templates", () => {
  it("creates an empty template, and one with providers from entries and from another template", async () => {
    const empty = await createTemplate(t.client, { name: "Empty", description: "Nothing yet", metadata: { a: 1 } });
    expect(empty).toEqual({
      object: "session.template",
      id: expect.stringMatching(/^set_[0-9a-z]{26}$/),
      name: "Empty",
      description: "Nothing yet",
      metadata: { a: 1 },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(await templateProviders(empty.id)).toEqual([]);

    const base = await createTemplate(t.client, {
      name: "Base",
      providers: {
        provider_deployment: deploymentRef(gh.deployment.id),
        provider_config: configRef(gh.config.id),
        provider_auth_config: authConfigRef(gh.authConfig.id),
        tool_filters: { tool_keys: ["get_me"] },
      },
    });
    const [baseProvider] = await templateProviders(base.id);
    expect(baseProvider).toMatchObject({
      object: "session.template.provider",
      session_template_id: base.id,
      provider_id: gh.providerId,
      provider_deployment_id: gh.deployment.id,
      provider_deployment_name: "GitHub",
      provider_config_id: gh.config.id,
      provider_config_name: "GitHub config",
      provider_auth_config_id: gh.authConfig.id,
      provider_auth_config_name: "GitHub connection",
      tool_filters: { tool_keys: ["get_me"] },
    });

    const combined = await createTemplate(t.client, {
      name: "Combined",
      providers: [{ provider_deployment: deploymentRef(ev.deployment.id) }, { session_template_id: base.id }],
    });
    const providers = await templateProviders(combined.id);
    expect(providers.map((p) => [p.provider_deployment_id, p.provider_config_id, p.tool_filters])).toEqual([
      [ev.deployment.id, null, null],
      [gh.deployment.id, gh.config.id, { tool_keys: ["get_me"] }],
    ]);
    expect(providers[1]?.id).not.toBe(baseProvider?.id);

    // A session from the combined template gets both providers.
    const session = await createSession(t.client, { providers: { session_template_id: combined.id } });
    expect((await listSessionProviders(t.client, session.id)).map((p) => p.session_template_id)).toEqual([
      combined.id,
      combined.id,
    ]);
  });

  it("gets, lists with pagination and updates templates", async () => {
    const tenant = await t.createTenant("templates");
    const ids: string[] = [];
    for (const name of ["One", "Two", "Three"]) ids.push((await createTemplate(tenant.client, { name })).id);
    const page = await unwrap(tenant.client.GET("/session-templates", { params: { query: { limit: 2 } } }));
    expect(page.items.map((x) => x.id)).toEqual(ids.slice(0, 2));
    const rest = await unwrap(
      tenant.client.GET("/session-templates", { params: { query: { cursor: page.pagination.next_cursor ?? "" } } }),
    );
    expect(rest.items.map((x) => x.id)).toEqual(ids.slice(2));
    const desc = await unwrap(tenant.client.GET("/session-templates", { params: { query: { order: "desc" } } }));
    expect(desc.items.map((x) => x.id)).toEqual([...ids].reverse());

    const path = { session_template_id: ids[0] ?? "" };
    const updated = await unwrap(
      tenant.client.PATCH("/session-templates/{session_template_id}", {
        params: { path },
        body: { name: "Uno", description: "First", metadata: { n: 1 } },
      }),
    );
    expect(updated).toMatchObject({ name: "Uno", description: "First", metadata: { n: 1 } });
    const cleared = await unwrap(
      tenant.client.PATCH("/session-templates/{session_template_id}", {
        params: { path },
        body: { description: null, metadata: null },
      }),
    );
    expect(cleared).toMatchObject({ name: "Uno", description: null, metadata: null });
    expect(await unwrap(tenant.client.GET("/session-templates/{session_template_id}", { params: { path } }))).toEqual(
      cleared,
    );
  });

  it("does not change sessions already created when the template changes", async () => {
    const template = await createTemplate(t.client, {
      name: "Changing",
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    const session = await createSession(t.client, { providers: { session_template_id: template.id } });
    const [tp] = await templateProviders(template.id);
    await unwrap(
      t.client.DELETE("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path: { session_template_id: template.id, session_template_provider_id: tp?.id ?? "" } },
      }),
    );
    expect((await listSessionProviders(t.client, session.id)).map((p) => p.status)).toEqual(["active"]);
  });
});
