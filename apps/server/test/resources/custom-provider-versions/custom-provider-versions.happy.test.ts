import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import {
  closedPortUrl,
  createRemote,
  firstVersion,
  useRemoteProviderSetup,
  waitForDeployment,
} from "../../custom-providers/support.ts";

const { t, upstream } = useRemoteProviderSetup();

describe("custom provider versions", () => {
  it("creates numbered versions with their own provider versions, config schema and transformer", async () => {
    const cp = await createRemote(t, upstream.url, "Versioned");
    const v2 = await unwrap(
      t.client.POST("/custom-providers/{custom_provider_id}/versions", {
        params: { path: { custom_provider_id: cp.id } },
        body: {
          from: { type: "remote", remote_url: upstream.url, protocol: "streamable_http" },
          config: {
            schema: { type: "object", properties: { region: { type: "string" } }, required: ["region"] },
            transformer: '{"query":{"region":"{{config.region}}"}}',
          },
        },
      }),
    );
    expect(v2).toMatchObject({
      object: "custom_provider.version",
      index: 2,
      identifier: "v2",
      status: "queued",
      custom_provider_id: cp.id,
      provider_id: cp.provider.id,
      actor: null,
      deployment: {
        object: "custom_provider.deployment",
        trigger: "version_created",
        custom_provider_version_id: v2.id,
      },
    });
    expect(v2.id).toMatch(/^cpv_/);
    expect(v2.deployment.id).toMatch(/^cpd_/);
    expect(v2.deployment.commit?.message).toBe("Merge version v2 into development");
    expect(v2.environments.map((e) => e.environment.name)).toEqual(["development"]);
    const pv = await t.db
      .selectFrom("provider_versions")
      .selectAll()
      .where("id", "=", v2.provider_version_id)
      .executeTakeFirstOrThrow();
    expect(pv).toMatchObject({ provider_id: cp.provider.id, version: "v2" });
    expect(pv.config_schema).toMatchObject({ required: ["region"] });
    expect(pv.runtime.transformer).toEqual({ query: { region: "{{config.region}}" } });

    const done = await waitForDeployment(t, cp.id, v2.id);
    expect(done.status).toBe("deployment_succeeded");
    const got = await unwrap(
      t.client.GET("/custom-providers/{custom_provider_id}/versions/{custom_provider_version_id}", {
        params: { path: { custom_provider_id: cp.id, custom_provider_version_id: v2.id } },
      }),
    );
    expect(got).toEqual(done);
  });

  it("lists versions with status and ids filters", async () => {
    const cp = await createRemote(t, upstream.url, "Listed");
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    const bad = await unwrap(
      t.client.POST("/custom-providers/{custom_provider_id}/versions", {
        params: { path: { custom_provider_id: cp.id } },
        body: { from: { type: "remote", remote_url: await closedPortUrl() } },
      }),
    );
    await waitForDeployment(t, cp.id, bad.id);
    const list = (query: Record<string, unknown>) =>
      unwrap(
        t.client.GET("/custom-providers/{custom_provider_id}/versions", {
          params: { path: { custom_provider_id: cp.id }, query },
        }),
      ).then((p) => p.items.map((v) => v.id));
    expect(await list({})).toEqual([v1.id, bad.id]);
    expect(await list({ status: ["deployment_failed"] })).toEqual([bad.id]);
    expect(await list({ status: ["deployment_succeeded", "queued"] })).toEqual([v1.id]);
    expect(await list({ ids: [bad.id] })).toEqual([bad.id]);
    expect(await list({ order: "desc", limit: 1 })).toEqual([bad.id]);
  });
});
