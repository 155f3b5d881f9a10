import { describe, expect, it } from "vitest";
import {
  activeAuthConfig,
  catalogGithub,
  cfg,
  expectAuthConfigItemsHidden,
  pendingAuthConfig,
  secret,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { expectUnauthorizedEverywhere, json, snapshotTables } from "../../support/security.ts";

// Every log line is kept, so the tests can look for imported tokens in them.
const t = useTestServer({ logLevel: "trace" });
const github = fixture(() => catalogGithub(t.db));

/** What an import could change: the auth configs (their encrypted data) and the import records. */
const rows = () => snapshotTables(t.db, ["provider_auth_configs", "provider_auth_imports"]);

describe("provider auth imports: security", () => {
  it("refuses every operation without a valid key with 401, before reading the body, and writes nothing", async () => {
    const { deployment, config, imported: made } = await activeAuthConfig(t.client, github);
    const base = `${cfg(deployment.id, config.id)}/imports`;
    await expectUnauthorizedEverywhere(
      t,
      [
        [base, { method: "GET" }],
        [base, json("POST", { note: "Sneaky", value: tokenSet() })],
        [base, json("POST", "{not json")],
        [`${base}/${made.id}`, { method: "GET" }],
        [`${base}/schema`, { method: "GET" }],
        [`${base}/schema?provider_auth_method_id=${github.tokenMethodId}`, { method: "GET" }],
        [`${cfg("pde_00000000000000000000000000", "pac_00000000000000000000000000")}/imports`, { method: "GET" }],
      ],
      rows,
    );
  });

  it("keeps tenants apart: another instance's deployment, auth config and imports are 404 everywhere", async () => {
    const other = await t.createTenant("other");
    const theirs = await activeAuthConfig(other.client, github, "Their import");
    const mine = await activeAuthConfig(t.client, github);
    const hidden = ["Their", theirs.tokens.access_token, theirs.tokens.refresh_token];
    await expectAuthConfigItemsHidden(t, {
      collection: "imports",
      itemEntity: "provider.auth_import",
      mine: { deploymentId: mine.deployment.id, configId: mine.config.id },
      theirs: { owner: other, deploymentId: theirs.deployment.id, configId: theirs.config.id, item: theirs.imported },
      create: () => json("POST", { note: "Planted", value: tokenSet() }),
      more: ["schema"],
      hidden,
      unchanged: rows,
    });
  });

  it("creates imports in the caller's instance only", async () => {
    const tenant = await t.createTenant("importer");
    const { imported: made } = await activeAuthConfig(tenant.client, github);
    const row = await t.db
      .selectFrom("provider_auth_imports")
      .select("instance_id")
      .where("id", "=", made.id)
      .executeTakeFirstOrThrow();
    expect(row.instance_id).toBe(tenant.instanceId);
  });

  it("never returns or logs an imported value: not from the imports, the auth config, or errors", async () => {
    const { deployment, config } = await pendingAuthConfig(t.client, github);
    const tokens = tokenSet();
    const pat = secret("ghp");
    const leaks = [tokens.access_token, tokens.refresh_token, pat];
    const base = cfg(deployment.id, config.id);
    const bodies: string[] = [];
    const call = async (path: string, init: RequestInit, status: number) => {
      const res = await t.fetch(path, init);
      const text = await res.text();
      expect(res.status, `${init.method ?? "GET"} ${path}: ${text}`).toBe(status);
      bodies.push(text);
      return JSON.parse(text) as { id: string };
    };
    const first = await call(`${base}/imports`, json("POST", { note: "OAuth", value: tokens }), 201);
    const second = await call(
      `${base}/imports`,
      json("POST", { note: "PAT", value: { token: pat }, providerAuthMethodId: github.tokenMethodId }),
      201,
    );
    await call(`${base}/imports`, { method: "GET" }, 200);
    await call(`${base}/imports/${first.id}`, { method: "GET" }, 200);
    await call(`${base}/imports/${second.id}`, { method: "GET" }, 200);
    await call(`${base}/imports/schema`, { method: "GET" }, 200);
    await call(base, { method: "GET" }, 200);
    await call(`/provider-deployments/${deployment.id}/auth-configs`, { method: "GET" }, 200);
    // Refused imports that carry the values do not echo them.
    await call(`${base}/imports`, json("POST", { note: "", value: tokens }), 400);
    await call(`${base}/imports`, json("POST", { note: "x", value: { ...tokens, access_token: 5, extra: pat } }), 400);
    await call(`${base}/imports`, json("POST", { note: "x", value: { token: pat, more: pat } }), 400);
    await call(
      `${cfg(deployment.id, "pac_00000000000000000000000000")}/imports`,
      json("POST", { note: "x", value: tokens }),
      404,
    );
    for (const text of bodies) for (const leak of leaks) expect(text).not.toContain(leak);

    const logs = t.logs();
    expect(logs).toContain('"statusCode":201');
    for (const leak of leaks) expect(logs).not.toContain(leak);
  });
});
