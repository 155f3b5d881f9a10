import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { catalogGithub, createAuthConfig, createCredentials, secret } from "../../support/auth-fixtures.ts";
import { deploy, underDeployment } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  crudOperations,
  expectCrossTenantNotFound,
  expectSameAsUnknown,
  expectUnauthorizedEverywhere,
  itemOperations,
  json,
  snapshotTables,
} from "../../support/security.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

const { collection, item } = underDeployment("auth-credentials");
const snapshot = () => snapshotTables(t.db, ["provider_auth_credentials", "provider_auth_configs"]);

describe("provider auth credentials: security", () => {
  it("refuses every operation without a valid key with 401, before reading the body, and writes nothing", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const body = { name: "Sneaky", config: { type: "oauth", clientId: "c", clientSecret: "s" } };
    await expectUnauthorizedEverywhere(
      t,
      [
        ...crudOperations(collection(deployment.id), item(deployment.id, credentials.id), body, { name: "Hijacked" }),
        [collection(deployment.id), json("POST", "{not json")],
        [collection("pde_00000000000000000000000000"), { method: "GET" }],
        [item(deployment.id, "par_00000000000000000000000000"), { method: "GET" }],
      ],
      snapshot,
    );
  });

  it("keeps tenants apart: another instance's deployment and credentials are 404 everywhere, and never listed", async () => {
    const other = await t.createTenant("other");
    const theirDeployment = await deploy(other.client, github.providerId, "Theirs");
    const theirSecret = secret("their-secret");
    const theirs = await createCredentials(other.client, theirDeployment.id, {
      name: "Their OAuth app",
      clientId: "their-client-id",
      clientSecret: theirSecret,
    });
    const mine = await deploy(t.client, github.providerId, "Mine");
    const myCredentials = await createCredentials(t.client, mine.id, { name: "My OAuth app" });
    const hidden = ["Their", "their-client-id", theirSecret];
    const body = { name: "Planted", config: { type: "oauth", clientId: "planted", clientSecret: "s" } };

    // Their deployment, named in every path.
    await expectCrossTenantNotFound(t, {
      entity: "provider.deployment",
      hidden,
      unchanged: snapshot,
      attempts: [
        ...crudOperations(collection(theirDeployment.id), item(theirDeployment.id, theirs.id), body, {
          name: "Taken over",
          metadata: null,
        }),
        [`${collection(theirDeployment.id)}?id=${theirs.id}`, { method: "GET" }],
      ],
    });

    // Their credentials, named under my own deployment.
    await expectCrossTenantNotFound(t, {
      entity: "provider.auth_credentials",
      hidden,
      unchanged: snapshot,
      attempts: itemOperations(item(mine.id, theirs.id), { name: "Taken over" }),
    });
    // Indistinguishable from credentials that do not exist at all.
    const unknown = await t.client.GET(
      "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
      {
        params: {
          path: { provider_deployment_id: mine.id, provider_auth_credentials_id: "par_00000000000000000000000000" },
        },
      },
    );
    const theirsGet = await t.client.GET(
      "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
      { params: { path: { provider_deployment_id: mine.id, provider_auth_credentials_id: theirs.id } } },
    );
    expectSameAsUnknown(theirsGet, theirs.id, unknown, "par_00000000000000000000000000");

    // My list never shows them, even filtered by their id or bounded by it.
    const list = async (query: string) => {
      const res = await t.fetch(`${collection(mine.id)}?${query}`);
      expect(res.status, query).toBe(200);
      return ((await res.json()) as { items: { id: string }[] }).items.map((c) => c.id);
    };
    expect(await list("")).toEqual([myCredentials.id]);
    expect(await list(`id=${theirs.id}`)).toEqual([]);
    expect(await list(`id=${theirs.id}&id=${myCredentials.id}`)).toEqual([myCredentials.id]);
    expect(await list(`before=${theirs.id}`)).not.toContain(theirs.id);

    // Nor can my auth config use their credentials.
    await expectCrossTenantNotFound(t, {
      entity: "provider.auth_credentials",
      unchanged: snapshot,
      attempts: async () => [
        await t.client.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
          params: { path: { provider_deployment_id: mine.id } },
          body: {
            name: "Borrowing",
            provider_auth_method_id: github.oauthMethodId,
            credentials: { type: "reference", provider_auth_credentials_id: theirs.id },
          },
        }),
      ],
    });

    // Their credentials are untouched and still theirs.
    expect(
      await unwrap(
        other.client.GET(
          "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}",
          {
            params: { path: { provider_deployment_id: theirDeployment.id, provider_auth_credentials_id: theirs.id } },
          },
        ),
      ),
    ).toEqual(theirs);
    const theirList = await unwrap(
      other.client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: { provider_deployment_id: theirDeployment.id } },
      }),
    );
    expect(theirList.items.map((c) => c.id)).toEqual([theirs.id]);
  });

  it("creates credentials in the caller's instance, under the named deployment only", async () => {
    const tenant = await t.createTenant("creator");
    const deployment = await deploy(tenant.client, github.providerId);
    const created = await createCredentials(tenant.client, deployment.id);
    const row = await t.db
      .selectFrom("provider_auth_credentials")
      .select(["instance_id", "provider_deployment_id", "provider_id"])
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      instance_id: tenant.instanceId,
      provider_deployment_id: deployment.id,
      provider_id: github.providerId,
    });
  });

  it("never returns the client secret: not from create, get, list, update, delete, 409 or 404 answers", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const clientSecret = secret("never-returned");
    const bodies: string[] = [];
    const call = async (p: string, init: RequestInit, status: number) => {
      const res = await t.fetch(p, init);
      const text = await res.text();
      expect(res.status, `${init.method} ${p}: ${text}`).toBe(status);
      bodies.push(text);
      return text;
    };
    const created = JSON.parse(
      await call(
        collection(deployment.id),
        json("POST", { name: "App", config: { type: "oauth", clientId: "app", clientSecret, scopes: ["repo"] } }),
        201,
      ),
    ) as { id: string };
    await call(collection(deployment.id), { method: "GET" }, 200);
    await call(`${collection(deployment.id)}?id=${created.id}`, { method: "GET" }, 200);
    await call(item(deployment.id, created.id), { method: "GET" }, 200);
    await call(item(deployment.id, created.id), json("PATCH", { name: "Renamed", description: "d" }), 200);
    const config = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, created.id);
    await call(item(deployment.id, created.id), { method: "DELETE" }, 409);
    await call(`/provider-deployments/${deployment.id}/auth-configs/${config.id}`, { method: "GET" }, 200);
    await call(`/provider-deployments/${deployment.id}/auth-configs`, { method: "GET" }, 200);
    await call(`/provider-deployments/${deployment.id}/auth-configs/${config.id}`, { method: "DELETE" }, 200);
    await call(item(deployment.id, created.id), { method: "DELETE" }, 200);
    await call(item(deployment.id, created.id), { method: "GET" }, 404);
    // Errors about a body that carries the secret do not echo it.
    await call(
      collection(deployment.id),
      json("POST", { name: "", config: { type: "oauth", clientId: 5, clientSecret, extra: clientSecret } }),
      400,
    );
    await call(item(deployment.id, created.id), json("PATCH", { config: { clientSecret } }), 400);

    for (const text of bodies) {
      expect(text).not.toContain(clientSecret);
      expect(text).not.toMatch(/clientSecret"\s*:|client_secret"\s*:/);
    }
  });
});
