import { createHash, randomBytes } from "node:crypto";
import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { UpstreamCredentials } from "../../../src/oauth/upstream-credentials.ts";
import { deploymentWithApp, useOAuthSetup } from "../../oauth/support.ts";

const { t, provider } = useOAuthSetup();

const token = () => `imported-${randomBytes(12).toString("hex")}`;
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const upstream = () => new UpstreamCredentials({ db: t.db, secrets: t.secrets });

const importToken = (body: Record<string, unknown>) =>
  unwrap(t.client.POST("/provider-oauth/token-imports", { body: { access_token: token(), ...body } }));
const getImport = (id: string) =>
  unwrap(t.client.GET("/provider-oauth/token-imports/{take_in_id}", { params: { path: { take_in_id: id } } }));
const authConfig = (deploymentId: string, id: string) =>
  unwrap(
    t.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}", {
      params: { path: { provider_deployment_id: deploymentId, provider_auth_config_id: id } },
    }),
  );

describe("provider OAuth token imports", () => {
  it("imports a token for a deployment: a new oauth_manual connection the gateway can use", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const accessToken = token();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const created = await importToken({
      access_token: accessToken,
      server_deployment_id: app.deploymentId,
      note: "from the legacy system",
      metadata: { user: "alice" },
      id_token: "header.payload.signature",
      scope: "files.read",
      token_type: "Bearer",
      expires_at: expiresAt,
    });
    expect(created).toMatchObject({
      object: "provider_oauth.import",
      status: "active",
      note: "from the legacy system",
      metadata: { user: "alice" },
      server_deployment_id: app.deploymentId,
      id_token: "header.payload.signature",
      scope: "files.read",
      token_type: "Bearer",
      identifier: sha256(accessToken),
      expires_at: expiresAt,
    });
    expect(created.id).toMatch(/^poti_/);
    expect(JSON.stringify(created)).not.toContain(accessToken);
    // id_token only in the create response.
    expect(await getImport(created.id)).toEqual({ ...created, id_token: null });

    const connection = await authConfig(app.deploymentId, created.connection_id);
    expect(connection).toMatchObject({
      type: "oauth_manual",
      status: "active",
      provider_auth_method_id: provider.oauthMethodId,
    });
    expect(await upstream().credentialFor(t.tenant.instanceId, created.connection_id)).toEqual({
      kind: "oauth",
      accessToken,
      tokenType: "Bearer",
    });
  });

  it("imports into an existing connection, revoking that connection's earlier import", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const first = await importToken({ server_deployment_id: app.deploymentId });
    const replacement = token();
    const second = await importToken({ access_token: replacement, connection_id: first.connection_id });
    expect(second).toMatchObject({
      connection_id: first.connection_id,
      server_deployment_id: app.deploymentId,
      status: "active",
      id_token: null,
    });
    expect((await getImport(first.id)).status).toBe("revoked");
    expect(await upstream().credentialFor(t.tenant.instanceId, first.connection_id)).toMatchObject({
      accessToken: replacement,
    });
    const page = await unwrap(
      t.client.GET("/provider-oauth/token-imports", { params: { query: { order: "desc", limit: 2 } } }),
    );
    expect(page.items.map((i) => i.id)).toEqual([second.id, first.id]);
  });

  it("reads as expired past expires_at; PATCH with a new token makes it active and replaces the credentials", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const past = new Date(Date.now() - 1000).toISOString();
    const created = await importToken({ server_deployment_id: app.deploymentId, expires_at: past });
    expect(created.status).toBe("expired");
    expect((await authConfig(app.deploymentId, created.connection_id)).status).toBe("expired");
    const fresh = token();
    const updated = await unwrap(
      t.client.PATCH("/provider-oauth/token-imports/{take_in_id}", {
        params: { path: { take_in_id: created.id } },
        body: { access_token: fresh, note: "renewed", id_token: "new.id.token" },
      }),
    );
    expect(updated).toMatchObject({
      status: "active",
      expires_at: null,
      note: "renewed",
      identifier: sha256(fresh),
      id_token: null,
    });
    expect((await authConfig(app.deploymentId, created.connection_id)).status).toBe("active");
    expect(await upstream().credentialFor(t.tenant.instanceId, created.connection_id)).toMatchObject({
      accessToken: fresh,
    });
    const metadataOnly = await unwrap(
      t.client.PATCH("/provider-oauth/token-imports/{take_in_id}", {
        params: { path: { take_in_id: created.id } },
        body: { metadata: { k: "v" }, note: null },
      }),
    );
    expect(metadataOnly).toMatchObject({ metadata: { k: "v" }, note: null, identifier: sha256(fresh) });
  });

  it("an auth import that replaces the connection's token revokes the token import", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const created = await importToken({ server_deployment_id: app.deploymentId });
    const res = await t.client.POST(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports",
      {
        params: { path: { provider_deployment_id: app.deploymentId, provider_auth_config_id: created.connection_id } },
        body: { note: "replaced", value: { access_token: token() } },
      },
    );
    expect(res.response.status).toBe(201);
    expect((await getImport(created.id)).status).toBe("revoked");
    const patch = await t.client.PATCH("/provider-oauth/token-imports/{take_in_id}", {
      params: { path: { take_in_id: created.id } },
      body: { note: "x" },
    });
    expect(patch.response.status).toBe(409);
  });

  it("an import whose connection was deleted is revoked and cannot be changed", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const created = await importToken({ server_deployment_id: app.deploymentId });
    await unwrap(
      t.client.DELETE("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}", {
        params: { path: { provider_deployment_id: app.deploymentId, provider_auth_config_id: created.connection_id } },
      }),
    );
    expect((await getImport(created.id)).status).toBe("revoked");
    const patch = await t.client.PATCH("/provider-oauth/token-imports/{take_in_id}", {
      params: { path: { take_in_id: created.id } },
      body: { access_token: token() },
    });
    expect(patch.response.status).toBe(409);
  });
});
