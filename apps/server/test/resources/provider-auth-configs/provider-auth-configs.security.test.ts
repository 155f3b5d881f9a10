import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import {
  catalogGithub,
  createAuthConfig,
  createCredentials,
  importInto,
  secret,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { deploy, underDeployment } from "../../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import {
  crudOperations,
  expectCrossTenantNotFound,
  expectUnauthorizedEverywhere,
  itemOperations,
  json,
  snapshotTables,
} from "../../support/security.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

const { collection, item } = underDeployment("auth-configs");
const snapshot = () => snapshotTables(t.db, ["provider_auth_configs", "provider_auth_imports"]);

describe("provider auth configs: security", () => {
  it("refuses every operation without a valid key with 401, before reading the body, and writes nothing", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const credentials = await createCredentials(t.client, deployment.id);
    const config = await createAuthConfig(t.client, deployment.id, github.oauthMethodId, credentials.id);
    const create = {
      name: "Sneaky",
      provider_auth_method_id: github.oauthMethodId,
      credentials: { type: "reference", provider_auth_credentials_id: credentials.id },
    };
    await expectUnauthorizedEverywhere(
      t,
      [
        ...crudOperations(collection(deployment.id), item(deployment.id, config.id), create, { name: "Hijacked" }),
        [`${collection(deployment.id)}?provider_auth_method_id=${github.oauthMethodId}`, { method: "GET" }],
        [collection(deployment.id), json("POST", "{not json")],
        [item("pde_00000000000000000000000000", "pac_00000000000000000000000000"), { method: "GET" }],
      ],
      snapshot,
    );
  });

  it("keeps tenants apart: another instance's deployment, auth configs and credentials are 404 everywhere", async () => {
    const other = await t.createTenant("other");
    const theirDeployment = await deploy(other.client, github.providerId, "Theirs");
    const theirCredentials = await createCredentials(other.client, theirDeployment.id, { name: "Their app" });
    const theirs = await createAuthConfig(other.client, theirDeployment.id, github.oauthMethodId, theirCredentials.id, {
      name: "Their connection",
    });
    await importInto(other.client, theirDeployment.id, theirs.id, tokenSet());
    const theirView = await unwrap(
      other.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}", {
        params: { path: { provider_deployment_id: theirDeployment.id, provider_auth_config_id: theirs.id } },
      }),
    );

    const mine = await deploy(t.client, github.providerId, "Mine");
    const myCredentials = await createCredentials(t.client, mine.id);
    const myConfig = await createAuthConfig(t.client, mine.id, github.oauthMethodId, myCredentials.id);

    const create = (credentialsId: string) => ({
      name: "Planted",
      provider_auth_method_id: github.oauthMethodId,
      credentials: { type: "reference", provider_auth_credentials_id: credentialsId },
    });
    // Their deployment in every path.
    await expectCrossTenantNotFound(t, {
      entity: "provider.deployment",
      hidden: ["Their"],
      unchanged: snapshot,
      attempts: [
        ...crudOperations(
          collection(theirDeployment.id),
          item(theirDeployment.id, theirs.id),
          create(theirCredentials.id),
          {
            name: "Taken over",
            metadata: { owned: true },
          },
        ),
        [`${collection(theirDeployment.id)}?provider_auth_credentials_id=${theirCredentials.id}`, { method: "GET" }],
        [collection(theirDeployment.id), json("POST", create(myCredentials.id))],
      ],
    });
    // Their auth config under my deployment.
    await expectCrossTenantNotFound(t, {
      entity: "provider.auth_config",
      hidden: ["Their"],
      unchanged: snapshot,
      attempts: itemOperations(item(mine.id, theirs.id), { name: "Taken over" }),
    });
    // Their credentials named in my create.
    await expectCrossTenantNotFound(t, {
      entity: "provider.auth_credentials",
      unchanged: snapshot,
      attempts: [[collection(mine.id), json("POST", create(theirCredentials.id))]],
    });

    // My lists never show theirs, whatever the filter.
    const list = async (query: string) => {
      const res = await t.fetch(`${collection(mine.id)}?${query}`);
      expect(res.status, query).toBe(200);
      return ((await res.json()) as { items: { id: string }[] }).items.map((c) => c.id);
    };
    expect(await list("")).toEqual([myConfig.id]);
    expect(await list(`provider_auth_credentials_id=${theirCredentials.id}`)).toEqual([]);
    expect(await list(`provider_auth_method_id=${github.oauthMethodId}`)).toEqual([myConfig.id]);
    expect(await list(`after=${theirs.id}&order=desc`)).not.toContain(theirs.id);

    // Theirs is untouched and still theirs.
    expect(
      await unwrap(
        other.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}", {
          params: { path: { provider_deployment_id: theirDeployment.id, provider_auth_config_id: theirs.id } },
        }),
      ),
    ).toEqual(theirView);
  });

  it("creates auth configs in the caller's instance only", async () => {
    const tenant = await t.createTenant("creator");
    const deployment = await deploy(tenant.client, github.providerId);
    const credentials = await createCredentials(tenant.client, deployment.id);
    const created = await createAuthConfig(tenant.client, deployment.id, github.oauthMethodId, credentials.id);
    const row = await t.db
      .selectFrom("provider_auth_configs")
      .select(["instance_id", "provider_deployment_id"])
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ instance_id: tenant.instanceId, provider_deployment_id: deployment.id });
  });

  it("never returns the credential data or the client secret from any auth config operation", async () => {
    const deployment = await deploy(t.client, github.providerId);
    const clientSecret = secret("client-secret");
    const credentials = await createCredentials(t.client, deployment.id, { clientSecret });
    const tokens = tokenSet();
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
        json("POST", {
          name: "Conn",
          provider_auth_method_id: github.oauthMethodId,
          credentials: { type: "reference", provider_auth_credentials_id: credentials.id },
        }),
        201,
      ),
    ) as { id: string };
    await importInto(t.client, deployment.id, created.id, tokens);
    await call(collection(deployment.id), { method: "GET" }, 200);
    await call(`${collection(deployment.id)}?provider_auth_credentials_id=${credentials.id}`, { method: "GET" }, 200);
    await call(item(deployment.id, created.id), { method: "GET" }, 200);
    await call(item(deployment.id, created.id), json("PATCH", { name: "Renamed" }), 200);
    await call(item(deployment.id, created.id), json("PATCH", { credential_data: tokens }), 400);
    await call(item(deployment.id, created.id), { method: "DELETE" }, 200);
    await call(item(deployment.id, created.id), { method: "GET" }, 404);
    for (const text of bodies) {
      for (const leak of [clientSecret, tokens.access_token, tokens.refresh_token]) expect(text).not.toContain(leak);
    }
  });
});
