import { describe, expect, it } from "vitest";
import { deploymentWithApp, useOAuthSetup } from "../../oauth/support.ts";
import { catalogEverything } from "../../support/auth-fixtures.ts";

const { t, provider } = useOAuthSetup();

const post = (body: unknown) =>
  t.fetch("/provider-oauth/token-imports", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("provider OAuth token imports: bad requests", () => {
  it("both or neither of server_deployment_id and connection_id is a 400 that says so", async () => {
    const app = await deploymentWithApp(t.client, provider.providerId);
    const both = await post({ access_token: "a", server_deployment_id: app.deploymentId, connection_id: "pac_x" });
    expect(both.status).toBe(400);
    expect(await both.json()).toMatchObject({
      code: "bad_request",
      message: "Give either server_deployment_id or connection_id, not both: they are mutually exclusive.",
    });
    const neither = await post({ access_token: "a" });
    expect(neither.status).toBe(400);
    expect(((await neither.json()) as { message: string }).message).toContain("exactly one of server_deployment_id");
    const count = await t.db
      .selectFrom("provider_oauth_token_imports")
      .select(t.db.fn.countAll<string>().as("n"))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });

  it("validates the body, and rejects a provider without an OAuth method and a token-method connection", async () => {
    expect((await post({ server_deployment_id: "pde_x" })).status).toBe(400);
    expect((await post({ access_token: "", server_deployment_id: "pde_x" })).status).toBe(400);
    expect((await post({ access_token: "a", server_deployment_id: "pde_x", expires_at: "soon" })).status).toBe(400);
    const everything = await t.client.POST("/provider-deployments", {
      body: { name: "no oauth", provider_id: await catalogEverything(t.db) },
    });
    const noOAuth = await post({ access_token: "a", server_deployment_id: everything.data?.id });
    expect(noOAuth.status).toBe(400);
    expect(await noOAuth.json()).toMatchObject({ errors: [{ path: ["server_deployment_id"] }] });

    const app = await deploymentWithApp(t.client, provider.providerId);
    const session = await t.client.POST("/provider-deployments/{provider_deployment_id}/setup-sessions", {
      params: { path: { provider_deployment_id: app.deploymentId } },
      body: { providerAuthMethodId: provider.tokenMethodId, redirectUrl: "https://app.example.test/x" },
    });
    const submit = await fetch(session.data?.url ?? "", {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ api_key: "a-long-enough-key" }),
    });
    const tokenConnection = new URL(submit.headers.get("location") ?? "").searchParams.get("provider_auth_config_id");
    const wrongKind = await post({ access_token: "a", connection_id: tokenConnection });
    expect(wrongKind.status).toBe(400);
    expect(await wrongKind.json()).toMatchObject({ errors: [{ path: ["connection_id"] }] });
  });

  it("unknown deployments, connections and imports are 404", async () => {
    expect((await post({ access_token: "a", server_deployment_id: "pde_nope" })).status).toBe(404);
    expect((await post({ access_token: "a", connection_id: "pac_nope" })).status).toBe(404);
    expect((await t.fetch("/provider-oauth/token-imports/poti_nope")).status).toBe(404);
    const patch = await t.fetch("/provider-oauth/token-imports/poti_nope", {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ note: "x" }),
    });
    expect(patch.status).toBe(404);
  });
});
