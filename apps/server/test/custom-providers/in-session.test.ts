import { unwrap } from "@toolplane/client";
import { beforeAll, describe, expect, it } from "vitest";
import { connectMcp, createSession, deploymentRef, deployProvider } from "../mcp/gateway-fixtures.ts";
import { fixture } from "../support/fixture.ts";
import {
  createRemote,
  environments,
  firstVersion,
  getCustomProvider,
  promote,
  startMcpUpstream,
  useRemoteProviderSetup,
  waitForDeployment,
} from "./support.ts";

// The whole life of a remote custom provider as a user sees it through a session: v1 deployed and in production,
// v2 (another upstream, other tools) promoted, then rolled back. The session's deployment is unpinned, so its
// tools follow production on the next request.
const { t, upstream } = useRemoteProviderSetup();
const upstreamV2 = fixture(
  () => startMcpUpstream({ tools: ["forecast_v2", "alerts_v2"] }),
  (u) => u.close(),
);

describe("a custom provider used in a session", () => {
  let cpId: string;
  let envs: { development: string; production: string };
  beforeAll(async () => {
    const cp = await createRemote(t, upstream.url, "Session Weather");
    cpId = cp.id;
    envs = await environments(t, cp.id);
    await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
  });

  const toolNames = async (session: Awaited<ReturnType<typeof createSession>>) => {
    const client = await connectMcp(t, session);
    try {
      return (await client.listTools()).tools.map((tool) => tool.name).sort();
    } finally {
      await client.close();
    }
  };

  it("serves v1, then the promoted v2, then v1 again after a rollback, and routes calls to each upstream", async () => {
    const cp = await getCustomProvider(t, cpId);
    expect(cp.provider.current_version?.version).toBe("v1");
    const deployment = await deployProvider(t.client, cp.provider.id, "Weather in a session");
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
    const v1Tools = await toolNames(session);
    expect(v1Tools.length).toBeGreaterThan(0);
    expect(v1Tools).not.toContain("forecast_v2");

    const client = await connectMcp(t, session);
    const [firstTool] = v1Tools;
    const called = await client.callTool({ name: firstTool ?? "", arguments: {} });
    expect(called.content).toEqual([
      expect.objectContaining({ type: "text", text: expect.stringContaining("called") }),
    ]);
    await client.close();

    const v2 = await unwrap(
      t.client.POST("/custom-providers/{custom_provider_id}/versions", {
        params: { path: { custom_provider_id: cpId } },
        body: { from: { type: "remote", remote_url: upstreamV2.url } },
      }),
    );
    expect((await waitForDeployment(t, cpId, v2.id)).status).toBe("deployment_succeeded");
    await promote(t, cpId, envs.development, envs.production, "Ship v2");
    expect((await getCustomProvider(t, cpId)).provider.current_version?.version).toBe("v2");
    expect(await toolNames(session)).toEqual(["alerts_v2", "forecast_v2"]);
    const v2Client = await connectMcp(t, session);
    const v2Call = await v2Client.callTool({ name: "forecast_v2", arguments: {} });
    expect(v2Call.content).toEqual([{ type: "text", text: "forecast_v2 called" }]);
    await v2Client.close();

    const rollback = await unwrap(
      t.client.POST("/custom-providers/{custom_provider_id}/commits", {
        params: { path: { custom_provider_id: cpId } },
        body: {
          message: "Back to v1",
          action: { type: "rollback", to_environment_id: envs.production },
        },
      }),
    );
    expect(rollback.status).toBe("applied");
    expect((await getCustomProvider(t, cpId)).provider.current_version?.version).toBe("v1");
    expect(await toolNames(session)).toEqual(v1Tools);
  });
});
