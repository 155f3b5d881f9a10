import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import {
  createRemote,
  environments,
  firstVersion,
  getCustomProvider,
  promote,
  REMOTE_TOOLS,
  useRemoteProviderSetup,
  waitForDeployment,
} from "../../custom-providers/support.ts";

const { t, upstream } = useRemoteProviderSetup();

describe("custom providers", () => {
  it("creates a remote custom provider with its catalog provider, environments and a queued v1", async () => {
    const cp = await createRemote(t, upstream.url, "Weather Co", {
      description: "Forecasts",
      metadata: { team: "platform" },
    });
    expect(cp).toMatchObject({
      object: "custom_provider",
      status: "active",
      type: "remote",
      name: "Weather Co",
      description: "Forecasts",
      metadata: { team: "platform" },
      provider: {
        object: "provider",
        name: "Weather Co",
        description: "Forecasts",
        slug: "weather-co",
        publisher: { object: "provider.publisher", name: "first" },
        current_version: null,
      },
    });
    expect(cp.id).toMatch(/^cpr_/);
    expect(cp.environments.map((e) => e.name)).toEqual(["development", "production"]);
    const v1 = await firstVersion(t, cp.id);
    expect(v1).toMatchObject({ index: 1, identifier: "v1", custom_provider_id: cp.id, provider_id: cp.provider.id });
    expect(["queued", "deploying", "deployment_succeeded"]).toContain(v1.status);
    // The system commit put v1 into development at once.
    expect(v1.deployment.commit).toMatchObject({ type: "merge_version_into_environment" });
    expect(v1.environments.map((e) => e.environment.name)).toContain("development");

    const listing = await t.db
      .selectFrom("provider_listings")
      .selectAll()
      .where("provider_id", "=", cp.provider.id)
      .executeTakeFirst();
    expect(listing?.instance_id).toBe(t.tenant.instanceId);
  });

  it("deploys v1, records its tools and makes it the provider's current version", async () => {
    const cp = await createRemote(t, upstream.url, "Deployed");
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.status).toBe("deployment_succeeded");
    expect(v1.deployment).toMatchObject({
      status: "deployment_succeeded",
      error: null,
      trigger: "custom_provider_created",
    });
    const pv = await t.db
      .selectFrom("provider_versions")
      .selectAll()
      .where("id", "=", v1.provider_version_id)
      .executeTakeFirstOrThrow();
    expect(pv.status).toBe("released");
    expect(pv.tools.map((tool) => tool.name)).toEqual(REMOTE_TOOLS);
    expect(pv.runtime).toMatchObject({ type: "remote", url: upstream.url, protocol: "streamable_http" });

    const after = await getCustomProvider(t, cp.id);
    expect(after.provider.current_version).toMatchObject({
      id: v1.provider_version_id,
      version: "v1",
      status: "released",
    });
    const production = after.environments.find((e) => e.name === "production");
    expect(production).toMatchObject({
      current_custom_provider_version_id: v1.id,
      current_provider_version_id: v1.provider_version_id,
    });
    const commits = await unwrap(
      t.client.GET("/custom-providers/{custom_provider_id}/commits", {
        params: { path: { custom_provider_id: cp.id } },
      }),
    );
    expect(commits.items.map((c) => [c.trigger, c.status, c.to_environment.name])).toEqual([
      ["system", "applied", "development"],
      ["system", "applied", "production"],
    ]);
  });

  it("promotes and rolls back; an unpinned provider deployment follows production", async () => {
    const cp = await createRemote(t, upstream.url, "Promoted");
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    const deployment = await unwrap(
      t.client.POST("/provider-deployments", { body: { name: "Uses promoted", provider_id: cp.provider.id } }),
    );
    // The version an unpinned deployment resolves to, as the deployments list filter sees it.
    const resolved = async () => {
      const versions = (
        await unwrap(
          t.client.GET("/custom-providers/{custom_provider_id}/versions", {
            params: { path: { custom_provider_id: cp.id } },
          }),
        )
      ).items.map((v) => v.provider_version_id);
      const hits = await Promise.all(
        versions.map(async (id) => {
          const page = await unwrap(
            t.client.GET("/provider-deployments", { params: { query: { provider_version_id: [id] } } }),
          );
          return page.items.some((d) => d.id === deployment.id) ? id : null;
        }),
      );
      return hits.filter(Boolean);
    };
    expect(await resolved()).toEqual([v1.provider_version_id]);

    const created = await unwrap(
      t.client.POST("/custom-providers/{custom_provider_id}/versions", {
        params: { path: { custom_provider_id: cp.id } },
        body: { from: { type: "remote", remote_url: upstream.url } },
      }),
    );
    expect(created).toMatchObject({ index: 2, identifier: "v2", status: "queued" });
    expect(created.deployment.trigger).toBe("version_created");
    const v2 = await waitForDeployment(t, cp.id, created.id);
    expect(v2.status).toBe("deployment_succeeded");
    expect(v2.environments.map((e) => e.environment.name)).toEqual(["development"]);
    // Production keeps v1 until a commit moves it.
    expect(await resolved()).toEqual([v1.provider_version_id]);

    const envs = await environments(t, cp.id);
    const promoted = await promote(t, cp.id, envs.development, envs.production, "Ship v2");
    expect(promoted).toMatchObject({
      object: "custom_provider.commit",
      status: "applied",
      trigger: "manual",
      type: "merge_version_into_environment",
      message: "Ship v2",
      error: null,
      from_environment: { id: envs.development, name: "development" },
      to_environment: { id: envs.production, name: "production", current_custom_provider_version_id: v2.id },
      target_custom_provider_version: { id: v2.id },
      previous_custom_provider_version: { id: v1.id },
      custom_provider_deployment_id: v2.deployment.id,
    });
    expect(promoted.applied_at).not.toBeNull();
    expect(await resolved()).toEqual([v2.provider_version_id]);
    expect((await getCustomProvider(t, cp.id)).provider.current_version?.version).toBe("v2");

    const rollback = await unwrap(
      t.client.POST("/custom-providers/{custom_provider_id}/commits", {
        params: { path: { custom_provider_id: cp.id } },
        body: { message: "Back to v1", action: { type: "rollback", to_environment_id: envs.production } },
      }),
    );
    expect(rollback).toMatchObject({
      status: "applied",
      type: "rollback",
      from_environment: null,
      target_custom_provider_version: { id: v1.id },
      previous_custom_provider_version: { id: v2.id },
    });
    expect(await resolved()).toEqual([v1.provider_version_id]);

    // A pinned deployment is unaffected by commits.
    const pinned = await unwrap(
      t.client.POST("/provider-deployments", {
        body: { name: "Pinned", provider_id: cp.provider.id, locked_provider_version_id: v2.provider_version_id },
      }),
    );
    expect(pinned.locked_version?.id).toBe(v2.provider_version_id);

    const got = await unwrap(
      t.client.GET("/custom-providers/{custom_provider_id}/commits/{custom_provider_commit_id}", {
        params: { path: { custom_provider_id: cp.id, custom_provider_commit_id: rollback.id } },
      }),
    );
    expect(got).toEqual(rollback);
  });

  it("lists with search, status, type and ids filters and pages", async () => {
    const a = await createRemote(t, upstream.url, "Filter Alpha", { description: "needle inside" });
    const b = await createRemote(t, upstream.url, "Filter Beta");
    await unwrap(
      t.client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: { custom_provider_id: b.id } },
        body: { status: "archived" },
      }),
    );
    const list = (query: Record<string, unknown>) =>
      unwrap(t.client.GET("/custom-providers", { params: { query } })).then((p) => p.items.map((i) => i.id));
    expect(await list({ search: "NEEDLE" })).toEqual([a.id]);
    expect(await list({ search: "filter", status: ["archived"] })).toEqual([b.id]);
    expect(await list({ ids: [a.id, b.id], type: ["remote"] })).toEqual([a.id, b.id]);
    expect(await list({ ids: [a.id, b.id], type: ["function", "container"] })).toEqual([]);
    const page = await unwrap(
      t.client.GET("/custom-providers", { params: { query: { ids: [a.id, b.id], limit: 1 } } }),
    );
    expect(page.items.map((i) => i.id)).toEqual([a.id]);
    expect(page.pagination.has_more_after).toBe(true);
  });

  it("updates name, description and metadata on the catalog provider too, and archives and reactivates", async () => {
    const cp = await createRemote(t, upstream.url, "Renamable", { metadata: { a: 1 } });
    const updated = await unwrap(
      t.client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: { custom_provider_id: cp.id } },
        body: { name: "Renamed", description: "Now described", metadata: null, status: "archived" },
      }),
    );
    expect(updated).toMatchObject({
      name: "Renamed",
      description: "Now described",
      metadata: null,
      status: "archived",
      provider: { name: "Renamed", description: "Now described", slug: cp.provider.slug },
    });
    const refused = await t.client.POST("/custom-providers/{custom_provider_id}/versions", {
      params: { path: { custom_provider_id: cp.id } },
      body: { from: { type: "remote", remote_url: upstream.url } },
    });
    expect(refused.response.status).toBe(409);
    const active = await unwrap(
      t.client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: { custom_provider_id: cp.id } },
        body: { status: "active" },
      }),
    );
    expect(active.status).toBe("active");
    const again = await t.client.POST("/custom-providers/{custom_provider_id}/versions", {
      params: { path: { custom_provider_id: cp.id } },
      body: { from: { type: "remote", remote_url: upstream.url } },
    });
    expect(again.response.status).toBe(201);
  });

  it("makes slugs unique and shares one publisher per instance", async () => {
    const one = await createRemote(t, upstream.url, "Same Name");
    const two = await createRemote(t, upstream.url, "Same Name");
    expect(one.provider.slug).toBe("same-name");
    expect(two.provider.slug).toBe("same-name-2");
    expect(two.provider.publisher.id).toBe(one.provider.publisher.id);
  });
});
