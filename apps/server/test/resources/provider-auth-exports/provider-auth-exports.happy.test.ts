import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { exportAad } from "../../../src/resources/provider-auth-configs/credential-data.ts";
import {
  activeAuthConfig,
  catalogGithub,
  cfg,
  exportFrom,
  getAuthConfig,
  ISO,
  importInto,
  pendingAuthConfig,
  secret,
  tokenSet,
} from "../../support/auth-fixtures.ts";
import { fixture, useTestServer } from "../../support/fixture.ts";

const t = useTestServer();
const github = fixture(() => catalogGithub(t.db));

const exportsPath = (deploymentId: string, configId: string) => ({
  path: { provider_deployment_id: deploymentId, provider_auth_config_id: configId },
});

const activeConfig = () => activeAuthConfig(t.client, github);

async function listExports(deploymentId: string, configId: string, query: Record<string, unknown> = {}) {
  return unwrap(
    t.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/exports", {
      params: { ...exportsPath(deploymentId, configId), query },
    }),
  );
}

async function getExport(deploymentId: string, configId: string, exportId: string) {
  return unwrap(
    t.client.GET(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/exports/{provider_auth_export_id}",
      { params: { path: { ...exportsPath(deploymentId, configId).path, provider_auth_export_id: exportId } } },
    ),
  );
}

describe("provider auth exports: happy paths", () => {
  it("exports an OAuth auth config's tokens with the note and metadata, and get shows the same", async () => {
    const { deployment, config, tokens } = await activeConfig();
    const before = await getAuthConfig(t.client, deployment.id, config.id);
    const created = await exportFrom(t.client, deployment.id, config.id, "Moving to staging", { ticket: "OPS-1" });
    expect(created).toEqual({
      object: "provider.auth_export",
      id: expect.stringMatching(/^pace_[0-9a-z]{26}$/),
      note: "Moving to staging",
      metadata: { ticket: "OPS-1" },
      provider_auth_config_id: config.id,
      value: { type: "oauth", ...tokens },
      created_at: expect.stringMatching(ISO),
    });
    expect(await getExport(deployment.id, config.id, created.id)).toEqual(created);
    // Exporting reads the auth config; it does not change it.
    expect(await getAuthConfig(t.client, deployment.id, config.id)).toEqual(before);
  });

  it("records metadata as null when none is given", async () => {
    const { deployment, config } = await activeConfig();
    const created = await exportFrom(t.client, deployment.id, config.id, "No metadata");
    expect(created.metadata).toBeNull();
    expect(await getExport(deployment.id, config.id, created.id)).toMatchObject({
      note: "No metadata",
      metadata: null,
    });
  });

  it("exports the members of a token auth config as a manual value", async () => {
    const { deployment, config } = await pendingAuthConfig(t.client, github);
    const pat = secret("ghp");
    await importInto(
      t.client,
      deployment.id,
      config.id,
      { token: pat },
      { providerAuthMethodId: github.tokenMethodId },
    );
    const created = await exportFrom(t.client, deployment.id, config.id);
    expect(created.value).toEqual({ type: "manual", token: pat });
    // An export is a valid import value as it is.
    const other = await pendingAuthConfig(t.client, github);
    await importInto(t.client, other.deployment.id, other.config.id, created.value, {
      providerAuthMethodId: github.tokenMethodId,
    });
    expect((await exportFrom(t.client, other.deployment.id, other.config.id)).value).toEqual(created.value);
  });

  it("keeps what was exported: a later import does not change an earlier export", async () => {
    const { deployment, config, tokens } = await activeConfig();
    const first = await exportFrom(t.client, deployment.id, config.id, "first");
    const newer = tokenSet({ refresh_token: null, scope: null, expires_at: null });
    await importInto(t.client, deployment.id, config.id, newer);
    const second = await exportFrom(t.client, deployment.id, config.id, "second");
    expect(second.value).toEqual({ type: "oauth", ...newer });
    expect(await getExport(deployment.id, config.id, first.id)).toEqual(first);
    expect(first.value).toEqual({ type: "oauth", ...tokens });
  });

  it("lists an auth config's exports with their values, oldest first, in pages, in either order", async () => {
    const { deployment, config } = await activeConfig();
    const made = [];
    for (const note of ["a", "b", "c"]) made.push(await exportFrom(t.client, deployment.id, config.id, note));
    // Another auth config's exports are not listed here.
    const other = await activeConfig();
    await exportFrom(t.client, other.deployment.id, other.config.id);

    const all = await listExports(deployment.id, config.id);
    expect(all.items).toEqual(made);
    expect(all.pagination).toMatchObject({ has_more_before: false, has_more_after: false });
    const desc = await listExports(deployment.id, config.id, { order: "desc" });
    expect(desc.items).toEqual([...made].reverse());

    const paged = [];
    for await (const e of t.client.paginate(
      "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/exports",
      { params: { ...exportsPath(deployment.id, config.id), query: { limit: 1 } } },
    )) {
      paged.push(e);
    }
    expect(paged).toEqual(made);
    const after = await listExports(deployment.id, config.id, { after: made[0]?.id });
    expect(after.items.map((e) => e.id)).toEqual(made.slice(1).map((e) => e.id));
  });

  it("lists nothing for an auth config that was never exported", async () => {
    const { deployment, config } = await activeConfig();
    expect(await listExports(deployment.id, config.id)).toEqual({
      items: [],
      pagination: { has_more_before: false, has_more_after: false, next_cursor: null, previous_cursor: null },
    });
  });

  it("stores each export's value encrypted, bound to the export's own id", async () => {
    const { deployment, config, tokens } = await activeConfig();
    const created = await exportFrom(t.client, deployment.id, config.id);
    const row = await t.db
      .selectFrom("provider_auth_exports")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ instance_id: t.tenant.instanceId, provider_auth_config_id: config.id });
    const stored = JSON.stringify(row);
    for (const token of [tokens.access_token, tokens.refresh_token]) expect(stored).not.toContain(token);
    expect(t.secrets.decryptJson(row.value_ciphertext, exportAad(created.id))).toEqual(created.value);
    expect(() => t.secrets.decryptJson(row.value_ciphertext, exportAad(`${created.id}x`))).toThrow();
  });

  it("answers the raw routes with JSON", async () => {
    const { deployment, config } = await activeConfig();
    const res = await t.fetch(`${cfg(deployment.id, config.id)}/exports`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ note: "raw" }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const created = (await res.json()) as { id: string };
    const got = await t.fetch(`${cfg(deployment.id, config.id)}/exports/${created.id}`);
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(created);
  });
});
