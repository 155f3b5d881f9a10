import { createHash } from "node:crypto";
import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/lib/ids.ts";
import { gatewaySessionLoader } from "../../../src/resources/sessions/gateway-view.ts";
import { loadTestProvider } from "../../support/catalog-fixtures.ts";
import { createInlineConfig, deploy } from "../../support/deployment-fixtures.ts";
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
} from "./session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const ev = fixture(() => everythingDeployment(t));

describe("sessions: create", () => {
  it("creates an active session from a list of entries and returns its secret once", async () => {
    const session = await createSession(t.client, {
      name: "Support agent",
      description: "Tools for support",
      metadata: { team: "support" },
      providers: [
        {
          provider_deployment: deploymentRef(gh.deployment.id),
          provider_config: configRef(gh.config.id),
          provider_auth_config: authConfigRef(gh.authConfig.id),
          tool_filters: { tool_keys: ["list_issues"] },
        },
        { provider_deployment: deploymentRef(ev.deployment.id) },
      ],
    });
    expect(session).toEqual({
      object: "session",
      id: expect.stringMatching(/^ses_[0-9a-z]{26}$/),
      name: "Support agent",
      description: "Tools for support",
      status: "active",
      connection_status: "disconnected",
      usage: { tool_calls: 0, messages: 0 },
      metadata: { team: "support" },
      connection_url: `http://127.0.0.1/mcp/${session.id}`,
      secret: expect.stringMatching(/^tpss_[A-Za-z0-9_-]{32}$/),
      provider_deployments: [
        {
          object: "session.provider_deployment#preview",
          id: expect.stringMatching(/^spv_/),
          name: null,
          provider_id: gh.providerId,
          provider_deployment_id: gh.deployment.id,
        },
        {
          object: "session.provider_deployment#preview",
          id: expect.stringMatching(/^spv_/),
          name: null,
          provider_id: ev.providerId,
          provider_deployment_id: ev.deployment.id,
        },
      ],
      consumer_id: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const providers = await listSessionProviders(t.client, session.id);
    expect(providers.map((p) => p.id)).toEqual(session.provider_deployments.map((p) => p.id));
    expect(providers[0]).toMatchObject({
      object: "session.provider",
      status: "active",
      session_id: session.id,
      provider_deployment_id: gh.deployment.id,
      provider_config_id: gh.config.id,
      provider_auth_config_id: gh.authConfig.id,
      session_template_id: null,
      tool_filters: { tool_keys: ["list_issues"] },
    });
    expect(providers[1]).toMatchObject({ provider_config_id: null, provider_auth_config_id: null, tool_filters: null });

    const got = await unwrap(t.client.GET("/sessions/{session_id}", { params: { path: { session_id: session.id } } }));
    expect(got).toEqual({ ...session, secret: null });
  });

  it("takes a single entry object as well as a list", async () => {
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    expect(session.name).toBeNull();
    expect(session.metadata).toBeNull();
    expect(session.provider_deployments).toHaveLength(1);
    expect(session.provider_deployments[0]?.provider_deployment_id).toBe(ev.deployment.id);
  });

  it("instantiates a template's providers with their config, auth config, filters and names, in entry order", async () => {
    const template = await createTemplate(t.client, {
      name: "GitHub template",
      providers: [
        {
          provider_deployment: deploymentRef(gh.deployment.id),
          provider_config: configRef(gh.config.id),
          provider_auth_config: authConfigRef(gh.authConfig.id),
          tool_filters: { tool_keys: ["get_me"] },
        },
      ],
    });
    const [tp] = (
      await unwrap(
        t.client.GET("/session-templates/{session_template_id}/providers", {
          params: { path: { session_template_id: template.id } },
        }),
      )
    ).items;
    await unwrap(
      t.client.PATCH("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path: { session_template_id: template.id, session_template_provider_id: tp?.id ?? "" } },
        body: { name: "GitHub (template)", metadata: { from: "template" } },
      }),
    );
    const session = await createSession(t.client, {
      providers: [{ provider_deployment: deploymentRef(ev.deployment.id) }, { session_template_id: template.id }],
    });
    const providers = await listSessionProviders(t.client, session.id);
    expect(providers).toHaveLength(2);
    expect(providers[0]).toMatchObject({ provider_deployment_id: ev.deployment.id, session_template_id: null });
    expect(providers[1]).toMatchObject({
      name: "GitHub (template)",
      metadata: { from: "template" },
      provider_id: gh.providerId,
      provider_deployment_id: gh.deployment.id,
      provider_config_id: gh.config.id,
      provider_auth_config_id: gh.authConfig.id,
      session_template_id: template.id,
      tool_filters: { tool_keys: ["get_me"] },
    });
    expect(session.provider_deployments[1]?.name).toBe("GitHub (template)");
  });
});

describe("sessions: list", () => {
  it("pages oldest first by default, newest first with order=desc, with cursors", async () => {
    const tenant = await t.createTenant("pager");
    const { deployment } = await everythingDeployment(t, tenant.client);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await createSession(tenant.client, { providers: { provider_deployment: deploymentRef(deployment.id) } })).id,
      );
    }
    const first = await unwrap(tenant.client.GET("/sessions", { params: { query: { limit: 2 } } }));
    expect(first.items.map((s) => s.id)).toEqual(ids.slice(0, 2));
    expect(first.items.every((s) => s.secret === null)).toBe(true);
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true });
    const second = await unwrap(
      tenant.client.GET("/sessions", { params: { query: { limit: 2, cursor: first.pagination.next_cursor ?? "" } } }),
    );
    expect(second.items.map((s) => s.id)).toEqual(ids.slice(2, 4));
    expect(second.pagination).toMatchObject({ has_more_before: true, has_more_after: true });
    const after = await unwrap(tenant.client.GET("/sessions", { params: { query: { after: ids[3] } } }));
    expect(after.items.map((s) => s.id)).toEqual([ids[4]]);
    const desc = await unwrap(tenant.client.GET("/sessions", { params: { query: { order: "desc", limit: 3 } } }));
    expect(desc.items.map((s) => s.id)).toEqual(ids.slice(2).reverse());
  });

  it("filters by status, provider and deployment in every form a multi-value filter takes", async () => {
    const tenant = await t.createTenant("filters");
    const a = await everythingDeployment(t, tenant.client, "A");
    const b = await githubSetup(t, tenant.client, "B");
    const onlyA = await createSession(tenant.client, {
      providers: { provider_deployment: deploymentRef(a.deployment.id) },
    });
    const both = await createSession(tenant.client, {
      providers: [
        { provider_deployment: deploymentRef(a.deployment.id) },
        { provider_deployment: deploymentRef(b.deployment.id) },
      ],
    });
    const onlyB = await createSession(tenant.client, {
      providers: { provider_deployment: deploymentRef(b.deployment.id) },
    });
    const ended = await createSession(tenant.client, {
      providers: { provider_deployment: deploymentRef(b.deployment.id) },
    });
    await unwrap(tenant.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: ended.id } } }));
    // A removed provider no longer counts for the provider filters.
    const bOfBoth = both.provider_deployments[1]?.id ?? "";
    await unwrap(
      tenant.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: { session_id: both.id, session_provider_id: bOfBoth } },
      }),
    );

    const ids = async (query: string) => {
      const res = await fetch(`${t.url}/sessions?${query}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
      expect(res.status, query).toBe(200);
      return ((await res.json()) as { items: { id: string }[] }).items.map((s) => s.id);
    };
    const active = [onlyA.id, both.id, onlyB.id];
    expect(await ids("status=active")).toEqual(active);
    expect(await ids("status=deleted")).toEqual([ended.id]);
    for (const form of [
      "status=active&status=deleted",
      "status[]=active&status[]=deleted",
      "status[0]=active&status[1]=deleted",
    ]) {
      expect(await ids(form), form).toEqual([...active, ended.id]);
    }
    expect(await ids(`provider_deployment_id=${a.deployment.id}`)).toEqual([onlyA.id, both.id]);
    expect(await ids(`provider_deployment_id=${b.deployment.id}`)).toEqual([onlyB.id, ended.id]);
    for (const form of [
      `provider_deployment_id=${a.deployment.id}&provider_deployment_id=${b.deployment.id}`,
      `provider_deployment_id[]=${a.deployment.id}&provider_deployment_id[]=${b.deployment.id}`,
      `provider_deployment_id[0]=${a.deployment.id}&provider_deployment_id[1]=${b.deployment.id}`,
    ]) {
      expect(await ids(form), form).toEqual([onlyA.id, both.id, onlyB.id, ended.id]);
    }
    expect(await ids(`provider_id=${b.providerId}`)).toEqual([onlyB.id, ended.id]);
    for (const form of [
      `provider_id=${a.providerId}&provider_id=${b.providerId}`,
      `provider_id[]=${a.providerId}&provider_id[]=${b.providerId}`,
      `provider_id[0]=${a.providerId}&provider_id[1]=${b.providerId}`,
    ]) {
      expect(await ids(form), form).toEqual([onlyA.id, both.id, onlyB.id, ended.id]);
    }
    expect(await ids(`provider_id=${b.providerId}&status=active`)).toEqual([onlyB.id]);
  });
});

describe("sessions: update and delete", () => {
  it("changes and clears the labels", async () => {
    const session = await createSession(t.client, {
      name: "Before",
      description: "Old",
      metadata: { a: 1 },
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    const path = { session_id: session.id };
    const renamed = await unwrap(
      t.client.PATCH("/sessions/{session_id}", { params: { path }, body: { name: "After" } }),
    );
    expect(renamed).toMatchObject({ name: "After", description: "Old", metadata: { a: 1 }, secret: null });
    const cleared = await unwrap(
      t.client.PATCH("/sessions/{session_id}", {
        params: { path },
        body: { name: null, description: null, metadata: null },
      }),
    );
    expect(cleared).toMatchObject({ name: null, description: null, metadata: null, status: "active" });
    expect(cleared.provider_deployments).toEqual(session.provider_deployments);
  });

  it("counts the session's tool calls and fails those still waiting when it ends", async () => {
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    const providerId = session.provider_deployments[0]?.id ?? "";
    // Rows as the gateway records them: one call answered, one still waiting for its upstream.
    const call = (id: string, status: "succeeded" | "waiting_for_response") => ({
      id,
      instance_id: t.tenant.instanceId,
      session_id: session.id,
      session_provider_id: providerId,
      provider_id: ev.providerId,
      provider_deployment_id: ev.deployment.id,
      tool_key: "echo",
      status,
      transport: "mcp" as const,
      message_id: newId("smg"),
    });
    const waiting = newId("tcl");
    await t.db
      .insertInto("tool_calls")
      .values([call(newId("tcl"), "succeeded"), call(waiting, "waiting_for_response")])
      .execute();
    const path = { session_id: session.id };
    expect((await unwrap(t.client.GET("/sessions/{session_id}", { params: { path } }))).usage).toEqual({
      tool_calls: 2,
      messages: 0,
    });
    await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path } }));
    const failed = await t.db.selectFrom("tool_calls").selectAll().where("id", "=", waiting).executeTakeFirstOrThrow();
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: "provider_removed", message: expect.any(String) },
    });
    expect(failed.completed_at).toBeInstanceOf(Date);
  });

  it("ends the session: status deleted, no connection_url, still readable", async () => {
    const session = await createSession(t.client, {
      providers: { provider_deployment: deploymentRef(ev.deployment.id) },
    });
    const path = { session_id: session.id };
    const deleted = await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path } }));
    expect(deleted).toMatchObject({ id: session.id, status: "deleted", connection_url: null, secret: null });
    expect(await unwrap(t.client.GET("/sessions/{session_id}", { params: { path } }))).toEqual(deleted);
    expect((await listSessionProviders(t.client, session.id)).map((p) => p.status)).toEqual(["active"]);
  });
});

describe("sessions: the gateway's view", () => {
  it("loads providers with the resolved version's runtime, decrypted config, auth config and filters", async () => {
    const versioned = await loadTestProvider(t.db, "session-view", {
      versions: [
        { version: "1.0.0", config_schema: { type: "object", properties: { region: { type: "string" } } } },
        { version: "2.0.0", config_schema: { type: "object", properties: { region: { type: "string" } } } },
      ],
    });
    const locked = await deploy(t.client, versioned.providerId, "Locked", {
      locked_provider_version_id: versioned.versions["1.0.0"],
    });
    const lockedConfig = await createInlineConfig(t.client, locked.id, "EU", { region: "eu" });
    // Without a config of its own, a provider gets its deployment's default config.
    const current = await deploy(t.client, versioned.providerId, "Current", {
      config: { type: "reference", provider_config_id: lockedConfig.id },
    });
    const session = await createSession(t.client, {
      providers: [
        {
          provider_deployment: deploymentRef(locked.id),
          provider_config: configRef(lockedConfig.id),
          tool_filters: { tool_keys: ["echo"] },
        },
        { provider_deployment: deploymentRef(current.id) },
        {
          provider_deployment: deploymentRef(gh.deployment.id),
          provider_auth_config: authConfigRef(gh.authConfig.id),
        },
        { provider_deployment: deploymentRef(ev.deployment.id) },
      ],
    });
    const [, , , removed] = session.provider_deployments;
    await unwrap(
      t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: { session_id: session.id, session_provider_id: removed?.id ?? "" } },
      }),
    );

    const load = gatewaySessionLoader(t.db, t.secrets);
    const view = await load(session.id);
    const secretHash = createHash("sha256")
      .update(session.secret ?? "")
      .digest("hex");
    expect(view).toMatchObject({ id: session.id, instanceId: t.tenant.instanceId, status: "active", secretHash });
    const runtime = { type: "stdio", command: "node", args: ["server.js", "stdio"] };
    expect(view?.providers).toEqual([
      {
        sessionProviderId: session.provider_deployments[0]?.id,
        providerId: versioned.providerId,
        providerSlug: "session-view",
        providerDeploymentId: locked.id,
        providerVersionId: versioned.versions["1.0.0"],
        runtime,
        config: { region: "eu" },
        providerAuthConfigId: null,
        toolKeys: ["echo"],
      },
      {
        sessionProviderId: session.provider_deployments[1]?.id,
        providerId: versioned.providerId,
        providerSlug: "session-view",
        providerDeploymentId: current.id,
        providerVersionId: versioned.versions["2.0.0"],
        runtime,
        config: { region: "eu" },
        providerAuthConfigId: null,
        toolKeys: null,
      },
      expect.objectContaining({
        sessionProviderId: session.provider_deployments[2]?.id,
        providerSlug: "github",
        providerAuthConfigId: gh.authConfig.id,
        config: null,
        toolKeys: null,
      }),
    ]);

    await unwrap(t.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: session.id } } }));
    expect((await load(session.id))?.status).toBe("deleted");
    expect(await load("ses_01jqz7m3c8v4r2k9x5n6t0w1ye")).toBeNull();
  });
});
