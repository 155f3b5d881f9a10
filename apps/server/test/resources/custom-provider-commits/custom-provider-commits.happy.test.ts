import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  closedPortUrl,
  createRemote,
  environments,
  firstVersion,
  getCustomProvider,
  type McpUpstream,
  promote,
  REMOTE_TOOLS,
  startMcpUpstream,
  startRunner,
  waitForDeployment,
} from "../../custom-providers/support.ts";
import { type StartedTestServer, startTestServer } from "../../support/server.ts";

// No runner runs until a test starts one: versions stay queued, so commits on them stay pending.
let t: StartedTestServer;
let upstream: McpUpstream;
beforeAll(async () => {
  t = await startTestServer();
  upstream = await startMcpUpstream({ tools: REMOTE_TOOLS });
});
afterAll(async () => {
  await upstream.close();
  await t.close();
});

const getCommit = (cpId: string, id: string) =>
  unwrap(
    t.client.GET("/custom-providers/{custom_provider_id}/commits/{custom_provider_commit_id}", {
      params: { path: { custom_provider_id: cpId, custom_provider_commit_id: id } },
    }),
  );

describe("custom provider commits", () => {
  it("a merge of a version still queued stays pending and is applied when the deployment succeeds", async () => {
    const cp = await createRemote(t, upstream.url, "Pending merge");
    const envs = await environments(t, cp.id);
    const commit = await promote(t, cp.id, envs.development, envs.production, "Ship v1 early");
    expect(commit).toMatchObject({ status: "pending", applied_at: null, previous_custom_provider_version: null });
    expect((await getCustomProvider(t, cp.id)).provider.current_version).toBeNull();

    const runner = await startRunner(t);
    try {
      await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    } finally {
      await runner.stop();
    }
    const applied = await getCommit(cp.id, commit.id);
    expect(applied.status).toBe("applied");
    expect(applied.applied_at).not.toBeNull();
    expect((await getCustomProvider(t, cp.id)).provider.current_version?.version).toBe("v1");
    // The pending commit filled production, so no system commit was needed.
    const commits = await unwrap(
      t.client.GET("/custom-providers/{custom_provider_id}/commits", {
        params: { path: { custom_provider_id: cp.id }, query: { custom_provider_environment_ids: [envs.production] } },
      }),
    );
    expect(commits.items.map((c) => c.id)).toEqual([commit.id]);
  });

  it("a pending merge fails when the deployment fails, and the environment keeps its version", async () => {
    const cp = await createRemote(t, await closedPortUrl(), "Doomed merge");
    const envs = await environments(t, cp.id);
    const commit = await promote(t, cp.id, envs.development, envs.production);
    const runner = await startRunner(t);
    try {
      await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    } finally {
      await runner.stop();
    }
    const failed = await getCommit(cp.id, commit.id);
    expect(failed).toMatchObject({ status: "failed", applied_at: null, error: { code: "deployment_failed" } });
    expect(failed.error?.message).toContain("v1");
    const cpAfter = await getCustomProvider(t, cp.id);
    expect(cpAfter.environments.find((e) => e.name === "production")?.current_custom_provider_version_id).toBeNull();
  });

  it("successive rollbacks go back through the environment's history", async () => {
    const cp = await createRemote(t, upstream.url, "History");
    const runner = await startRunner(t);
    try {
      const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
      const add = async () => {
        const v = await unwrap(
          t.client.POST("/custom-providers/{custom_provider_id}/versions", {
            params: { path: { custom_provider_id: cp.id } },
            body: { from: { type: "remote", remote_url: upstream.url } },
          }),
        );
        return waitForDeployment(t, cp.id, v.id);
      };
      const v2 = await add();
      const v3 = await add();
      const envs = await environments(t, cp.id);
      // development went v1 → v2 → v3; roll it back twice.
      const rollback = () =>
        unwrap(
          t.client.POST("/custom-providers/{custom_provider_id}/commits", {
            params: { path: { custom_provider_id: cp.id } },
            body: {
              message: "Undo",
              action: { type: "rollback", to_environment_id: envs.development, from_environment_id: envs.production },
            },
          }),
        );
      const first = await rollback();
      expect(first).toMatchObject({
        target_custom_provider_version: { id: v2.id },
        previous_custom_provider_version: { id: v3.id },
        from_environment: { name: "production" },
      });
      const second = await rollback();
      expect(second.target_custom_provider_version.id).toBe(v1.id);
      const third = await t.client.POST("/custom-providers/{custom_provider_id}/commits", {
        params: { path: { custom_provider_id: cp.id } },
        body: { message: "Too far", action: { type: "rollback", to_environment_id: envs.development } },
      });
      expect(third.response.status).toBe(409);
      expect(third.error?.message).toContain("no earlier version");

      const list = await unwrap(
        t.client.GET("/custom-providers/{custom_provider_id}/commits", {
          params: {
            path: { custom_provider_id: cp.id },
            query: { custom_provider_version_ids: [v1.id], order: "desc" },
          },
        }),
      );
      expect(list.items.map((c) => c.id)).toContain(second.id);
      expect(list.items.every((c) => c.target_custom_provider_version.id === v1.id)).toBe(true);
      const byId = await unwrap(
        t.client.GET("/custom-providers/{custom_provider_id}/commits", {
          params: { path: { custom_provider_id: cp.id }, query: { ids: [first.id] } },
        }),
      );
      expect(byId.items.map((c) => c.id)).toEqual([first.id]);
    } finally {
      await runner.stop();
    }
  });
});
