import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogProvider, type LoadedProvider, seedProviderVersion } from "../../support/catalog-fixtures.ts";
import { seedCatalogProvider } from "../../support/seed.ts";
import { startTestServer, type Tenant, type TestServer } from "../../support/server.ts";

let t: TestServer;
let everything: LoadedProvider;
let github: LoadedProvider;
beforeAll(async () => {
  t = await startTestServer();
  everything = await catalogProvider(t.db, "everything");
  github = await catalogProvider(t.db, "github");
});
afterAll(() => t.close());

const json = (method: string, body: unknown) => ({
  method,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

const UNKNOWN = "pde_00000000000000000000000000";

async function deploy(client: Tenant["client"], name: string, providerId: string, extra: Record<string, unknown> = {}) {
  return unwrap(client.POST("/provider-deployments", { body: { name, provider_id: providerId, ...extra } as never }));
}

async function createConfig(client: Tenant["client"], deploymentId: string, name: string) {
  return unwrap(
    client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, config: { type: "inline", data: {} } },
    }),
  );
}

async function allRows() {
  return {
    deployments: await t.db.selectFrom("provider_deployments").selectAll().orderBy("id").execute(),
    configs: await t.db.selectFrom("provider_configs").selectAll().orderBy("id").execute(),
  };
}

describe("provider deployments: security", () => {
  it("refuses every operation without a valid key with 401, and writes nothing", async () => {
    const d = await deploy(t.client, "Guarded", everything.providerId);
    const before = await allRows();
    const operations: [string, RequestInit][] = [
      ["/provider-deployments", { method: "GET" }],
      ["/provider-deployments?status=active&provider_id=x", { method: "GET" }],
      ["/provider-deployments", json("POST", { name: "Sneaky", provider_id: everything.providerId })],
      [`/provider-deployments/${d.id}`, { method: "GET" }],
      [`/provider-deployments/${d.id}`, json("PATCH", { name: "Hijacked" })],
      [`/provider-deployments/${d.id}`, { method: "DELETE" }],
      [`/provider-deployments/${UNKNOWN}`, { method: "DELETE" }],
    ];
    const authorizations = [
      undefined,
      "Basic abc",
      "Bearer",
      "Bearer nope",
      `Bearer tp_aaaaaaaaaaaa_${"A".repeat(43)}`,
    ];
    for (const [path, init] of operations) {
      for (const authorization of authorizations) {
        const headers = new Headers(init.headers);
        if (authorization) headers.set("authorization", authorization);
        const res = await t.fetch(path, { ...init, headers, auth: false });
        const label = `${init.method} ${path} ${authorization ?? "(none)"}`;
        expect(res.status, label).toBe(401);
        expect(await res.json(), label).toMatchObject({ __typename: "error", code: "unauthorized", status: 401 });
      }
    }
    expect(await allRows()).toEqual(before);
  });

  it("authenticates before validating the body, the query or the id", async () => {
    const bad = await t.fetch("/provider-deployments", {
      auth: false,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(bad.status).toBe(401);
    expect((await t.fetch("/provider-deployments?limit=0", { auth: false })).status).toBe(401);
    expect((await t.fetch(`/provider-deployments/${UNKNOWN}`, { auth: false })).status).toBe(401);
  });

  it("keeps tenants apart: another instance's deployment is a 404 on get, patch and delete, and never listed", async () => {
    const other = await t.createTenant("other");
    const theirs = await deploy(other.client, "Theirs (secret name)", github.providerId, {
      description: "Private to the other tenant",
    });
    const mine = await deploy(t.client, "Mine", github.providerId);
    const path = { provider_deployment_id: theirs.id };
    const before = await allRows();

    const get = await t.client.GET("/provider-deployments/{provider_deployment_id}", { params: { path } });
    const patch = await t.client.PATCH("/provider-deployments/{provider_deployment_id}", {
      params: { path },
      body: { name: "Taken over", description: null, metadata: { owned: true } },
    });
    const del = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path } });
    for (const r of [get, patch, del]) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.deployment" });
      expect(JSON.stringify(r.error)).not.toContain("secret name");
    }
    // Indistinguishable from an id that does not exist at all.
    const unknown = await t.client.GET("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: UNKNOWN } },
    });
    expect(unknown.error?.message.replace(UNKNOWN, "ID")).toBe(get.error?.message.replace(theirs.id, "ID"));
    expect(await allRows()).toEqual(before);

    // Never listed, whatever the filters.
    for (const query of [
      "",
      `provider_id=${github.providerId}`,
      `provider_version_id=${github.currentVersionId}`,
      "status=active",
      "search=secret",
      `before=${theirs.id}`,
      `after=${UNKNOWN}`,
    ]) {
      const res = await t.fetch(`/provider-deployments?limit=100&${query}`);
      expect(res.status, query).toBe(200);
      const ids = ((await res.json()) as { items: { id: string }[] }).items.map((d) => d.id);
      expect(ids, query).not.toContain(theirs.id);
    }
    const paged: string[] = [];
    for await (const d of t.client.paginate("/provider-deployments", { params: { query: { limit: 1 } } }))
      paged.push(d.id);
    expect(paged).toContain(mine.id);
    expect(paged).not.toContain(theirs.id);

    const theirList = await unwrap(other.client.GET("/provider-deployments"));
    expect(theirList.items.map((d) => d.id)).toEqual([theirs.id]);
    expect(
      await unwrap(other.client.GET("/provider-deployments/{provider_deployment_id}", { params: { path } })),
    ).toEqual(theirs);
  });

  it("does not let a deployment reference another instance's config (404, even for another provider)", async () => {
    const other = await t.createTenant("config-owner");
    const theirDeployment = await deploy(other.client, "Theirs", github.providerId);
    const theirConfig = await createConfig(other.client, theirDeployment.id, "Their config");
    const before = await allRows();
    for (const providerId of [github.providerId, everything.providerId]) {
      const res = await t.client.POST("/provider-deployments", {
        body: {
          name: "Borrowing",
          provider_id: providerId,
          config: { type: "reference", provider_config_id: theirConfig.id },
        },
      });
      expect(res.response.status, providerId).toBe(404);
      expect(res.error).toMatchObject({ code: "not_found", entity: "provider.config" });
    }
    expect(await allRows()).toEqual(before);
  });

  it("keeps another instance from blocking the deletion of my deployment through my config", async () => {
    const other = await t.createTenant("blocker");
    const mine = await deploy(t.client, "Deletable", github.providerId);
    const myConfig = await createConfig(t.client, mine.id, "My config");
    const attempt = await other.client.POST("/provider-deployments", {
      body: {
        name: "Blocker",
        provider_id: github.providerId,
        config: { type: "reference", provider_config_id: myConfig.id },
      },
    });
    expect(attempt.response.status).toBe(404);
    const deleted = await t.client.DELETE("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: mine.id } },
    });
    expect(deleted.response.status).toBe(200);
  });

  it("does not deploy another instance's custom provider or pin one of its versions", async () => {
    const other = await t.createTenant("custom-owner");
    const custom = await seedCatalogProvider(t.db, "Their custom provider", other.instanceId);
    const customVersion = await seedProviderVersion(t.db, custom.providerId);
    const before = await allRows();

    const res = await t.client.POST("/provider-deployments", {
      body: { name: "Stolen", provider_id: custom.providerId },
    });
    expect(res.response.status).toBe(404);
    expect(res.error).toMatchObject({ code: "not_found", entity: "provider" });
    // Their version is unknown here, not "a version of another provider" (which would confirm that it exists).
    const pinned = await t.client.POST("/provider-deployments", {
      body: { name: "Pinned to theirs", provider_id: everything.providerId, locked_provider_version_id: customVersion },
    });
    expect(pinned.response.status).toBe(404);
    expect(pinned.error).toMatchObject({ code: "not_found", entity: "provider.version" });
    expect(await allRows()).toEqual(before);

    // Their own instance can deploy it.
    const theirs = await deploy(other.client, "Own custom", custom.providerId, {
      locked_provider_version_id: customVersion,
    });
    expect(theirs).toMatchObject({ status: "active", locked_version: { id: customVersion } });
  });

  it("creates deployments in the caller's instance only", async () => {
    const tenant = await t.createTenant("creator");
    const created = await deploy(tenant.client, "Owned", everything.providerId);
    const row = await t.db
      .selectFrom("provider_deployments")
      .select("instance_id")
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row.instance_id).toBe(tenant.instanceId);
    const res = await t.client.GET("/provider-deployments/{provider_deployment_id}", {
      params: { path: { provider_deployment_id: created.id } },
    });
    expect(res.response.status).toBe(404);
  });
});
