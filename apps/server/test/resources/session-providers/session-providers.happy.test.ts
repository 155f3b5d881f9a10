import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/lib/ids.ts";
import { gatewaySessionLoader } from "../../../src/resources/sessions/gateway-view.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  authConfigRef,
  configRef,
  createSession,
  deploymentRef,
  everythingDeployment,
  githubSetup,
  ISO,
} from "../sessions/session-fixtures.ts";

const t = useTestServer();
const gh = fixture(() => githubSetup(t));
const ev = fixture(() => everythingDeployment(t));

const newSession = () =>
  createSession(t.client, { providers: { provider_deployment: deploymentRef(ev.deployment.id) } });

describe("session providers", () => {
  it("adds a provider to an active session, with config, auth config, filters and labels", async () => {
    const session = await newSession();
    const res = await t.client.POST("/sessions/{session_id}/providers", {
      params: { path: { session_id: session.id } },
      body: {
        provider_deployment: deploymentRef(gh.deployment.id),
        provider_config: configRef(gh.config.id),
        provider_auth_config: authConfigRef(gh.authConfig.id),
        tool_filters: { tool_keys: ["get_me", "list_issues"] },
        name: "GitHub",
        description: "Issues",
        metadata: { k: "v" },
      },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data).toEqual({
      object: "session.provider",
      id: expect.stringMatching(/^spv_[0-9a-z]{26}$/),
      name: "GitHub",
      description: "Issues",
      status: "active",
      metadata: { k: "v" },
      session_id: session.id,
      provider_id: gh.providerId,
      provider_deployment_id: gh.deployment.id,
      provider_config_id: gh.config.id,
      provider_auth_config_id: gh.authConfig.id,
      session_template_id: null,
      tool_filters: { tool_keys: ["get_me", "list_issues"] },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    const added = res.data;
    if (!added) throw new Error("no body");
    const got = await unwrap(
      t.client.GET("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: { session_id: session.id, session_provider_id: added.id } },
      }),
    );
    expect(got).toEqual(added);
    const after = await unwrap(
      t.client.GET("/sessions/{session_id}", { params: { path: { session_id: session.id } } }),
    );
    expect(after.provider_deployments.map((p) => p.id)).toEqual([session.provider_deployments[0]?.id, added.id]);
    // The gateway sees it on its next read.
    const view = await gatewaySessionLoader(t.db, t.secrets)(session.id);
    expect(view?.providers.map((p) => p.sessionProviderId)).toEqual([session.provider_deployments[0]?.id, added.id]);
    expect(view?.providers[1]).toMatchObject({ config: { toolsets: "repos" }, toolKeys: ["get_me", "list_issues"] });
  });

  it("allows the same deployment twice in a session", async () => {
    const session = await newSession();
    const again = await unwrap(
      t.client.POST("/sessions/{session_id}/providers", {
        params: { path: { session_id: session.id } },
        body: { provider_deployment: deploymentRef(ev.deployment.id) },
      }),
    );
    expect(again.provider_deployment_id).toBe(ev.deployment.id);
    expect(again.name).toBeNull();
  });

  it("updates and clears the labels only", async () => {
    const session = await newSession();
    const path = { session_id: session.id, session_provider_id: session.provider_deployments[0]?.id ?? "" };
    const named = await unwrap(
      t.client.PATCH("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path },
        body: { name: "Renamed", description: "Desc", metadata: { a: 1 } },
      }),
    );
    expect(named).toMatchObject({ name: "Renamed", description: "Desc", metadata: { a: 1 }, status: "active" });
    const cleared = await unwrap(
      t.client.PATCH("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path },
        body: { name: null, description: null, metadata: null },
      }),
    );
    expect(cleared).toMatchObject({ name: null, description: null, metadata: null });
    expect(cleared.provider_deployment_id).toBe(ev.deployment.id);
  });

  it("removes a provider: status removed, gone from the session and the gateway, waiting calls failed", async () => {
    const session = await createSession(t.client, {
      providers: [
        { provider_deployment: deploymentRef(ev.deployment.id) },
        { provider_deployment: deploymentRef(gh.deployment.id) },
      ],
    });
    const [keep, drop] = session.provider_deployments;
    const waiting = newId("tcl");
    await t.db
      .insertInto("tool_calls")
      .values({
        id: waiting,
        instance_id: t.tenant.instanceId,
        session_id: session.id,
        session_provider_id: drop?.id ?? "",
        provider_id: gh.providerId,
        provider_deployment_id: gh.deployment.id,
        tool_key: "get_me",
        transport: "mcp",
        message_id: newId("smg"),
      })
      .execute();
    const removed = await unwrap(
      t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: { session_id: session.id, session_provider_id: drop?.id ?? "" } },
      }),
    );
    expect(removed).toMatchObject({ id: drop?.id, status: "removed" });
    const after = await unwrap(
      t.client.GET("/sessions/{session_id}", { params: { path: { session_id: session.id } } }),
    );
    expect(after.provider_deployments.map((p) => p.id)).toEqual([keep?.id]);
    const view = await gatewaySessionLoader(t.db, t.secrets)(session.id);
    expect(view?.providers.map((p) => p.sessionProviderId)).toEqual([keep?.id]);
    const call = await t.db.selectFrom("tool_calls").selectAll().where("id", "=", waiting).executeTakeFirstOrThrow();
    expect(call).toMatchObject({ status: "failed", error: { code: "provider_removed" } });
    // Still readable.
    expect(
      await unwrap(
        t.client.GET("/sessions/{session_id}/providers/{session_provider_id}", {
          params: { path: { session_id: session.id, session_provider_id: drop?.id ?? "" } },
        }),
      ),
    ).toEqual(removed);
  });

  it("lists with pagination and filters by status and provider in every form", async () => {
    const session = await createSession(t.client, {
      providers: [
        { provider_deployment: deploymentRef(ev.deployment.id) },
        { provider_deployment: deploymentRef(gh.deployment.id) },
        { provider_deployment: deploymentRef(ev.deployment.id) },
      ],
    });
    const all = session.provider_deployments.map((p) => p.id);
    await unwrap(
      t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: { session_id: session.id, session_provider_id: all[2] ?? "" } },
      }),
    );
    const ids = async (query: string) => {
      const res = await t.fetch(`/sessions/${session.id}/providers?${query}`);
      expect(res.status, query).toBe(200);
      return ((await res.json()) as { items: { id: string }[] }).items.map((p) => p.id);
    };
    expect(await ids("")).toEqual(all);
    expect(await ids("order=desc")).toEqual([...all].reverse());
    expect(await ids("status=removed")).toEqual([all[2]]);
    expect(await ids("status=active")).toEqual([all[0], all[1]]);
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
    const page = await unwrap(
      t.client.GET("/sessions/{session_id}/providers", {
        params: { path: { session_id: session.id }, query: { limit: 2 } },
      }),
    );
    expect(page.items.map((p) => p.id)).toEqual(all.slice(0, 2));
    expect(page.pagination.has_more_after).toBe(true);
    const rest = await unwrap(
      t.client.GET("/sessions/{session_id}/providers", {
        params: { path: { session_id: session.id }, query: { cursor: page.pagination.next_cursor ?? "" } },
      }),
    );
    expect(rest.items.map((p) => p.id)).toEqual(all.slice(2));
    expect(rest.pagination).toMatchObject({ has_more_before: true, has_more_after: false });
  });
});
