import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../../src/runtimes/pool.ts";
import {
  type CreatedSession,
  connectMcp,
  createSession,
  deploymentRef,
  deployProvider,
  firstText,
  remoteProvider,
} from "../../mcp/gateway-fixtures.ts";
import { createAuthConfig, createCredentials, ISO, importInto, tokenSet } from "../../support/auth-fixtures.ts";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { createInlineConfig, expectCreated } from "../../support/deployment-fixtures.ts";
import type { StartedTestServer } from "../../support/server.ts";
import { startTestServer } from "../../support/server.ts";
import { startTestUpstream, type TestUpstream } from "../../support/upstream-server.ts";

type ToolCall = { id: string; session_provider_id: string | null } & Record<string, unknown>;

let t: StartedTestServer;
let ours: TestUpstream;
let session: CreatedSession;
let other: CreatedSession;
const ids = {
  everythingProvider: "",
  everythingDeployment: "",
  oursDeployment: "",
  template: "",
  config: "",
  authConfig: "",
};
let calls: { apiEverything: ToolCall; apiOurs: ToolCall; mcpSum: ToolCall; otherSession: ToolCall };

const post = async (sessionId: string, body: Record<string, unknown>): Promise<ToolCall> =>
  (await expectCreated(
    t.client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: sessionId } },
      body: body as never,
    }),
  )) as ToolCall;

/** The ids of a raw list request (every Union form goes through the query string as written). */
async function listIds(path: string): Promise<string[]> {
  const res = await t.fetch(path);
  const body = (await res.json()) as { items: { id: string }[] };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.items.map((i) => i.id);
}

beforeAll(async () => {
  [t, ours] = await Promise.all([startTestServer(), startTestUpstream()]);
  const everything = await catalogProvider(t.db, "everything");
  ids.everythingProvider = everything.providerId;
  ids.everythingDeployment = (await deployProvider(t.client, everything.providerId, "Everything")).id;
  ids.config = (await createInlineConfig(t.client, ids.everythingDeployment, "Empty config", {})).id;
  const oursProvider = await remoteProvider(t.db, "ours", ours.url, { oauth: true });
  ids.oursDeployment = (await deployProvider(t.client, oursProvider.providerId, "Ours")).id;
  const method = await t.db
    .selectFrom("provider_auth_methods")
    .select("id")
    .where("provider_id", "=", oursProvider.providerId)
    .executeTakeFirstOrThrow();
  const credentials = await createCredentials(t.client, ids.oursDeployment);
  ids.authConfig = (await createAuthConfig(t.client, ids.oursDeployment, method.id, credentials.id)).id;
  await importInto(t.client, ids.oursDeployment, ids.authConfig, tokenSet());
  const template = await expectCreated(
    t.client.POST("/session-templates", {
      body: {
        name: "Everything template",
        providers: [
          {
            provider_deployment: deploymentRef(ids.everythingDeployment),
            provider_config: { type: "reference", provider_config_id: ids.config },
          },
        ],
      } as never,
    }),
  );
  ids.template = (template as { id: string }).id;
  session = await createSession(t.client, [
    { session_template_id: ids.template },
    {
      provider_deployment: deploymentRef(ids.oursDeployment),
      provider_auth_config: { type: "reference", provider_auth_config_id: ids.authConfig },
    },
  ]);
  other = await createSession(t.client, [{ provider_deployment: deploymentRef(ids.everythingDeployment) }]);

  const apiEverything = await post(session.id, {
    tool_id: "everything_echo",
    input: { message: "hello" },
    metadata: { ticket: "4711" },
  });
  const apiOurs = await post(session.id, { tool_id: "ours_echo", input: { message: "hi" } });
  const client = await connectMcp(t, session);
  expect(firstText(await client.callTool({ name: "everything_get-sum", arguments: { a: 1, b: 2 } }))).toContain("3");
  await client.close();
  const listed = await t.client.GET("/sessions/{session_id}/tool-calls", {
    params: { path: { session_id: session.id }, query: { tool_id: ["everything_get-sum"] } },
  });
  const mcpSum = listed.data?.items[0] as ToolCall;
  const otherSession = await post(other.id, { tool_id: "echo", input: { message: "elsewhere" } });
  calls = { apiEverything, apiOurs, mcpSum, otherSession };
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([ours?.close(), t?.close()]);
});

describe("POST /sessions/:session_id/tool-calls", () => {
  it("calls the tool, waits for the result and returns the recorded call", async () => {
    expect(calls.apiEverything).toEqual({
      object: "session.tool_call",
      id: expect.stringMatching(/^tcl_/),
      tool_key: "everything_echo",
      type: "tool_call",
      status: "succeeded",
      source: "client",
      transport: "tool_call",
      session_id: session.id,
      consumer_id: null,
      message_id: expect.stringMatching(/^smg_/),
      session_provider_id: expect.stringMatching(/^spv_/),
      connection_id: null,
      provider_run_id: expect.stringMatching(/^prn_/),
      tool: {
        name: "echo",
        description: expect.any(String),
        input_schema: expect.objectContaining({ type: "object" }),
      },
      input: { message: "hello" },
      output: { content: [{ type: "text", text: "Echo: hello" }] },
      error: null,
      metadata: { ticket: "4711" },
      task: null,
      answers_call_id: null,
      created_at: expect.stringMatching(ISO),
      completed_at: expect.stringMatching(ISO),
    });
    expect(calls.apiOurs).toMatchObject({ status: "succeeded", output: { content: [{ text: "upstream: hi" }] } });
  });

  it("counts API tool calls and MCP messages in the session's usage", async () => {
    const res = await t.client.GET("/sessions/{session_id}", { params: { path: { session_id: session.id } } });
    const usage = (res.data?.usage ?? {}) as { messages?: number };
    // Two API calls, plus the MCP client's initialize, initialized and tools/call requests.
    expect(usage.messages).toBeGreaterThanOrEqual(5);
  });
});

describe("MCP calls are recorded", () => {
  it("with transport mcp, the tool's definition and its provider", () => {
    expect(calls.mcpSum).toMatchObject({
      transport: "mcp",
      status: "succeeded",
      tool_key: "everything_get-sum",
      tool: { name: "get-sum" },
      input: { a: 1, b: 2 },
      session_provider_id: calls.apiEverything.session_provider_id,
      metadata: null,
    });
  });
});

describe("GET tool calls", () => {
  it("gets one call at the instance and at the session level", async () => {
    const byId = await t.client.GET("/tool-calls/{tool_call_id}", {
      params: { path: { tool_call_id: calls.apiOurs.id } },
    });
    expect(byId.data).toEqual(calls.apiOurs);
    const inSession = await t.client.GET("/sessions/{session_id}/tool-calls/{tool_call_id}", {
      params: { path: { session_id: session.id, tool_call_id: calls.apiOurs.id } },
    });
    expect(inSession.data).toEqual(calls.apiOurs);
  });

  it("lists a session's calls oldest first, and every session's at /tool-calls", async () => {
    const { apiEverything, apiOurs, mcpSum, otherSession } = calls;
    expect(await listIds(`/sessions/${session.id}/tool-calls`)).toEqual([apiEverything.id, apiOurs.id, mcpSum.id]);
    expect(await listIds("/tool-calls")).toEqual([apiEverything.id, apiOurs.id, mcpSum.id, otherSession.id]);
    expect(await listIds("/tool-calls?order=desc")).toEqual([otherSession.id, mcpSum.id, apiOurs.id, apiEverything.id]);
  });

  it("pages with limit and cursors", async () => {
    const first = await t.client.GET("/tool-calls", { params: { query: { limit: 2 } } });
    expect(first.data?.items.map((i) => i.id)).toEqual([calls.apiEverything.id, calls.apiOurs.id]);
    expect(first.data?.pagination).toMatchObject({ has_more_after: true, has_more_before: false });
    const next = await t.client.GET("/tool-calls", {
      params: { query: { limit: 2, cursor: first.data?.pagination.next_cursor ?? "" } },
    });
    expect(next.data?.items.map((i) => i.id)).toEqual([calls.mcpSum.id, calls.otherSession.id]);
  });

  it("filters by session provider, provider, deployment, config, auth config, template and tool", async () => {
    const { apiEverything, apiOurs, mcpSum, otherSession } = calls;
    const spv = apiOurs.session_provider_id;
    const base = `/sessions/${session.id}/tool-calls`;
    expect(await listIds(`${base}?session_provider_id=${spv}`)).toEqual([apiOurs.id]);
    expect(await listIds(`/tool-calls?provider_id=${ids.everythingProvider}`)).toEqual([
      apiEverything.id,
      mcpSum.id,
      otherSession.id,
    ]);
    expect(await listIds(`/tool-calls?provider_deployment_id=${ids.oursDeployment}`)).toEqual([apiOurs.id]);
    // The other session's provider has no config of its own, and the deployment has no default one.
    expect(await listIds(`/tool-calls?provider_config_id=${ids.config}`)).toEqual([apiEverything.id, mcpSum.id]);
    expect(await listIds(`/tool-calls?provider_auth_config_id=${ids.authConfig}`)).toEqual([apiOurs.id]);
    expect(await listIds(`/tool-calls?session_template_id=${ids.template}`)).toEqual([apiEverything.id, mcpSum.id]);
    expect(await listIds(`${base}?provider_id=${ids.everythingProvider}&tool_id=ours_echo`)).toEqual([]);
  });

  it("accepts every Union form of a filter", async () => {
    const { apiEverything, apiOurs, mcpSum } = calls;
    const base = `/sessions/${session.id}/tool-calls`;
    expect(await listIds(`${base}?tool_id=everything_get-sum`)).toEqual([mcpSum.id]);
    expect(await listIds(`${base}?tool_id=everything_echo&tool_id=ours_echo`)).toEqual([apiEverything.id, apiOurs.id]);
    expect(await listIds(`${base}?tool_id[]=ours_echo&tool_id[]=everything_get-sum`)).toEqual([apiOurs.id, mcpSum.id]);
    expect(await listIds(`${base}?tool_id[0]=everything_echo&tool_id[1]=everything_get-sum`)).toEqual([
      apiEverything.id,
      mcpSum.id,
    ]);
  });
});
