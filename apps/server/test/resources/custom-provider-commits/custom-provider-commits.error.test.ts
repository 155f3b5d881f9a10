import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import {
  closedPortUrl,
  createRemote,
  environments,
  firstVersion,
  useRemoteProviderSetup,
  waitForDeployment,
} from "../../custom-providers/support.ts";

const { t, upstream } = useRemoteProviderSetup();

const commit = (cpId: string, action: Record<string, unknown>, message = "Change") =>
  t.client.POST("/custom-providers/{custom_provider_id}/commits", {
    params: { path: { custom_provider_id: cpId } },
    body: { message, action: action as never },
  });

describe("custom provider commit errors", () => {
  it("refuses to promote a version whose deployment failed (409)", async () => {
    const cp = await createRemote(t, await closedPortUrl(), "Failed promote");
    await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    const envs = await environments(t, cp.id);
    const res = await commit(cp.id, {
      type: "merge_version_into_environment",
      from_environment_id: envs.development,
      to_environment_id: envs.production,
    });
    expect(res.response.status).toBe(409);
    expect(res.error).toMatchObject({ code: "conflict" });
    expect(res.error?.message).toContain("v1 failed to deploy");
  });

  it("refuses merges from an empty environment, into one holding the version, and between the same one", async () => {
    const cp = await createRemote(t, upstream.url, "Merge rules");
    await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    const envs = await environments(t, cp.id);
    const again = await commit(cp.id, {
      type: "merge_version_into_environment",
      from_environment_id: envs.development,
      to_environment_id: envs.production,
    });
    expect(again.response.status).toBe(409);
    expect(again.error?.message).toContain("already holds version v1");

    const same = await commit(cp.id, {
      type: "merge_version_into_environment",
      from_environment_id: envs.production,
      to_environment_id: envs.production,
    });
    expect(same.response.status).toBe(400);
    expect(same.error?.errors?.[0]?.path).toEqual(["action", "from_environment_id"]);

    const fresh = await createRemote(t, upstream.url, "Empty production");
    const freshEnvs = await environments(t, fresh.id);
    const empty = await commit(fresh.id, {
      type: "merge_version_into_environment",
      from_environment_id: freshEnvs.production,
      to_environment_id: freshEnvs.development,
    });
    // Production may have been filled by the runner already; either way this is a 409.
    expect(empty.response.status).toBe(409);
  });

  it("validates the body: missing message, unknown action type, missing environment (400)", async () => {
    const cp = await createRemote(t, upstream.url, "Bodies");
    const envs = await environments(t, cp.id);
    const noMessage = await t.client.POST("/custom-providers/{custom_provider_id}/commits", {
      params: { path: { custom_provider_id: cp.id } },
      body: { action: { type: "rollback", to_environment_id: envs.production } } as never,
    });
    expect(noMessage.response.status).toBe(400);
    expect((await commit(cp.id, { type: "squash", to_environment_id: envs.production })).response.status).toBe(400);
    expect(
      (await commit(cp.id, { type: "merge_version_into_environment", to_environment_id: envs.production })).response
        .status,
    ).toBe(400);
  });

  it("404s environments that are unknown or belong to another custom provider", async () => {
    const a = await createRemote(t, upstream.url, "Env owner A");
    const b = await createRemote(t, upstream.url, "Env owner B");
    const envsA = await environments(t, a.id);
    const envsB = await environments(t, b.id);
    const foreign = await commit(a.id, {
      type: "merge_version_into_environment",
      from_environment_id: envsB.development,
      to_environment_id: envsA.production,
    });
    expect(foreign.response.status).toBe(404);
    expect(foreign.error?.entity).toBe("custom_provider.environment");
    const unknown = await commit(a.id, { type: "rollback", to_environment_id: "cpe_unknown" });
    expect(unknown.response.status).toBe(404);
  });

  it("an archived custom provider refuses commits (409)", async () => {
    const cp = await createRemote(t, upstream.url, "Archived commits");
    await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    const envs = await environments(t, cp.id);
    await unwrap(
      t.client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: { custom_provider_id: cp.id } },
        body: { status: "archived" },
      }),
    );
    const res = await commit(cp.id, { type: "rollback", to_environment_id: envs.production });
    expect(res.response.status).toBe(409);
    expect(res.error?.message).toContain("archived");
  });

  it("404s an unknown commit and an unknown custom provider", async () => {
    const cp = await createRemote(t, upstream.url, "Lookups");
    const res = await t.client.GET("/custom-providers/{custom_provider_id}/commits/{custom_provider_commit_id}", {
      params: { path: { custom_provider_id: cp.id, custom_provider_commit_id: "cpc_unknown" } },
    });
    expect(res.response.status).toBe(404);
    const list = await t.client.GET("/custom-providers/{custom_provider_id}/commits", {
      params: { path: { custom_provider_id: "cpr_unknown" } },
    });
    expect(list.response.status).toBe(404);
  });
});
