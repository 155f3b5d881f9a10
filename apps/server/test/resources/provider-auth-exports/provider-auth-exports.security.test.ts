import { describe, expect, it } from "vitest";
import {
  activeAuthConfig,
  catalogGithub,
  cfg,
  expectAuthConfigItemsHidden,
  exportFrom,
} from "../../support/auth-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";
import { expectUnauthorizedEverywhere, json, snapshotTables } from "../../support/security.ts";
import type { Tenant } from "../../support/server.ts";

// Every log line is kept, so the tests can look for exported tokens in them.
const t = useTestServer({ logLevel: "trace" });
const github = fixture(() => catalogGithub(t.db));

const rows = () => snapshotTables(t.db, ["provider_auth_exports", "provider_auth_configs"]);

/** An auth config of the tenant holding an imported OAuth token set, and one export of it. */
async function exported(tenant: Tenant = t.tenant, note = "Exported by a test") {
  const active = await activeAuthConfig(tenant.client, github);
  const made = await exportFrom(tenant.client, active.deployment.id, active.config.id, note, { owner: note });
  return { ...active, export: made };
}

describe("provider auth exports: security", () => {
  it("refuses every operation without a valid key with 401, before reading the body, and writes nothing", async () => {
    const { deployment, config, export: made } = await exported();
    const base = `${cfg(deployment.id, config.id)}/exports`;
    await expectUnauthorizedEverywhere(
      t,
      [
        [base, { method: "GET" }],
        [`${base}?order=desc`, { method: "GET" }],
        [base, json("POST", { note: "Sneaky" })],
        [base, json("POST", "{not json")],
        [`${base}/${made.id}`, { method: "GET" }],
        [`${cfg("pde_00000000000000000000000000", "pac_00000000000000000000000000")}/exports`, { method: "GET" }],
      ],
      rows,
    );
  });

  it("keeps tenants apart: another instance's deployment, auth config and exports are 404 everywhere", async () => {
    const other = await t.createTenant("other");
    const theirs = await exported(other, "Their export");
    const mine = await exported();
    const hidden = ["Their", theirs.tokens.access_token, theirs.tokens.refresh_token];
    await expectAuthConfigItemsHidden(t, {
      collection: "exports",
      itemEntity: "provider.auth_export",
      mine: { deploymentId: mine.deployment.id, configId: mine.config.id },
      theirs: { owner: other, deploymentId: theirs.deployment.id, configId: theirs.config.id, item: theirs.export },
      create: () => json("POST", { note: "Stolen" }),
      hidden,
      unchanged: rows,
    });
  });

  it("creates exports in the caller's instance only", async () => {
    const tenant = await t.createTenant("exporter");
    const { export: made } = await exported(tenant);
    const row = await t.db
      .selectFrom("provider_auth_exports")
      .select("instance_id")
      .where("id", "=", made.id)
      .executeTakeFirstOrThrow();
    expect(row.instance_id).toBe(tenant.instanceId);
  });

  it("returns the tokens only from the export operations, and never logs them", async () => {
    const { deployment, config, tokens, export: made } = await exported();
    const secrets = [tokens.access_token, tokens.refresh_token];
    const exportsBase = `${cfg(deployment.id, config.id)}/exports`;
    // The export operations are where the value leaves, by design.
    for (const path of [exportsBase, `${exportsBase}/${made.id}`]) {
      const text = await (await t.fetch(path)).text();
      for (const token of secrets) expect(text, path).toContain(token);
    }
    // Nothing else says them: not the auth config, the deployment's auth configs, or the imports.
    for (const path of [
      cfg(deployment.id, config.id),
      `/provider-deployments/${deployment.id}/auth-configs`,
      `${cfg(deployment.id, config.id)}/imports`,
    ]) {
      const res = await t.fetch(path);
      expect(res.status, path).toBe(200);
      const text = await res.text();
      for (const token of secrets) expect(text, path).not.toContain(token);
    }
    const logs = t.logs();
    expect(logs).toContain(made.id.slice(0, 5));
    expect(logs).toContain('"statusCode":201');
    for (const token of secrets) expect(logs).not.toContain(token);
  });
});
