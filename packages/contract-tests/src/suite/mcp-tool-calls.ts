import { isDeepStrictEqual } from "node:util";
import {
  Client,
  type ClientOptions,
  StreamableHTTPClientTransport,
  specTypeSchemas,
} from "@modelcontextprotocol/client";
// The server tests' 2026-07-28 upstream (the MCP SDK v2's createMcpHandler, its `confirm` tool asks through an
// input_required round and checks its requestState comes back), imported from its file as bench/ does: it belongs
// to the server's tests, which @toolplane/server does not export. It runs in this process, as the server does.
import { startModernUpstream } from "../../../../apps/server/test/support/upstream-modern.ts";
import type { SuiteContext } from "../context.ts";
import { catalogProviderId, remoteCatalogProvider } from "../seed.ts";
import { deploy } from "./fixtures.ts";
import { deploymentRef } from "./sessions.ts";

/** The 2026-07-28 upstream's catalog slug: its tools' keys in a session of several providers are `<slug>_<name>`. */
const MODERN_SLUG = "contract-modern";
const CONFIRM_KEY = `${MODERN_SLUG}_confirm`;
/** A tool of the built-in `everything` (MCP 2025-11-25) that runs as a task when asked to: four stages of a second. */
const TASK_TOOL_KEY = "everything_simulate-research-query";

/**
 * Stops the suite, saying what differs, when a record read through the API is not what the MCP exchange made
 * (as expectAbsent does for tenancy). Each field is `[name, actual, expected]`.
 */
function expectRecord(record: string, fields: [field: string, actual: unknown, expected: unknown][]) {
  const wrong = fields.filter(([, actual, expected]) => !isDeepStrictEqual(actual, expected));
  if (wrong.length === 0) return;
  const said = wrong.map(
    ([field, actual, expected]) => `${field} is ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`,
  );
  throw new Error(`${record}: ${said.join("; ")}`);
}

/**
 * An MCP client of the session's `connection_url` (the gateway itself: Prism proxies only the REST API) with the
 * session's secret: `2026-07-28` pinned (it never falls back to initialize), or `2025` (initialize, MCP 2025-11-25).
 */
async function connect(
  session: { connection_url: string | null; secret: string | null },
  era: "2026-07-28" | "2025",
  options: ClientOptions = {},
) {
  if (!session.connection_url) throw new Error("the new session has no connection_url");
  const client = new Client(
    { name: `contract-tests-${era}`, version: "1.0.0" },
    era === "2025" ? options : { ...options, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(session.connection_url), {
      requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
    }),
  );
  return client;
}

/**
 * Tool calls made by MCP clients on a session's endpoint, whose records no call of the API makes: a task-augmented
 * call (MCP tasks, 2025-11-25) and a 2026-07-28 upstream's `input_required` round with the retry that answers it.
 * Their outputs have no `content` (the created task; the round's `inputRequests`), the task's record follows it
 * (`task`), and the retry names the round (`answers_call_id`).
 *
 * The calls are made at once, so that the task works at its upstream (four seconds) while the suite checks the API's
 * calls; `checkRecords` then reads the records through the API, so Prism and the in-process validator judge them
 * against the spec, compares them with what the clients saw, and fetches the task's outcome (tasks/result) to see
 * its record follow. `close` stops the clients and the upstream, whatever happened.
 */
export async function startMcpToolCalls(ctx: SuiteContext) {
  const { client } = ctx;
  const upstream = await startModernUpstream();
  const clients: Client[] = [];
  const close = async () => {
    await Promise.all(clients.map((c) => c.close()));
    await upstream.close();
  };
  try {
    const modernProviderId = await remoteCatalogProvider(ctx, MODERN_SLUG, upstream.url);
    const modernDeployment = await deploy(ctx, client, modernProviderId, "2026-07-28 upstream, MCP calls");
    const everything = await deploy(ctx, client, await catalogProviderId(ctx, "everything"), "everything, MCP calls");
    const session = await ctx.ok(
      "createSession",
      201,
      client.POST("/sessions", {
        body: {
          providers: [
            { provider_deployment: deploymentRef(modernDeployment.id) },
            { provider_deployment: deploymentRef(everything.id) },
          ],
        },
      }),
      { label: "201 session of a 2026-07-28 upstream and everything (MCP calls)" },
    );
    const legacy = await connect(session, "2025");
    clients.push(legacy);
    const modern = await connect(session, "2026-07-28", { capabilities: { elicitation: {} } });
    clients.push(modern);
    // The user's answer to the upstream's question: the SDK retries the call with it and the round's requestState.
    modern.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { ok: true } }));

    // Tasks (MCP 2025-11-25) are offered to clients of that era: the gateway's 2026-07-28 capabilities have none.
    const created = await legacy.request(
      { method: "tools/call", params: { name: TASK_TOOL_KEY, arguments: { topic: "contracts" }, task: {} } },
      specTypeSchemas.CreateTaskResult,
    );
    const { taskId } = created.task;
    const seen = await legacy.request({ method: "tasks/get", params: { taskId } }, specTypeSchemas.GetTaskResult);
    await modern.callTool({ name: CONFIRM_KEY, arguments: {} });

    const checkRecords = async () => {
      const session_id = session.id;
      const page = await ctx.ok(
        "listSessionToolCalls",
        200,
        client.GET("/sessions/{session_id}/tool-calls", { params: { path: { session_id }, query: { order: "asc" } } }),
        { label: "200 calls over MCP: a task after tasks/get, an input_required round and its retry" },
      );
      const [taskCall, round, retry] = page.items;
      if (!taskCall || !round || !retry) throw new Error(`the session lists ${page.items.length} calls, expected 3`);
      // The session shows an upstream's task as `<slug>+<id>` (one of several providers); the record has the id.
      const upstreamTaskId = taskId.slice("everything+".length);
      // The record says what the session's last task request saw (tasks/get), or a later status the upstream
      // announced since (notifications/tasks/status); only tasks/result brings the outcome.
      const taskStatus = taskCall.task?.status;
      expectRecord("the task-augmented call, after tasks/get", [
        ["tool_key", taskCall.tool_key, TASK_TOOL_KEY],
        ["status", taskCall.status, "succeeded"],
        ["output.task.taskId", (taskCall.output?.task as { taskId?: unknown } | undefined)?.taskId, upstreamTaskId],
        ["output.content", taskCall.output?.content, undefined],
        ["task.id", taskCall.task?.id, upstreamTaskId],
        ["task.status (tasks/get's, or completed since)", [seen.status, "completed"].includes(taskStatus ?? ""), true],
        ["task.result", taskCall.task?.result, null],
      ]);

      const roundRecord = await ctx.ok(
        "getToolCall",
        200,
        client.GET("/tool-calls/{tool_call_id}", { params: { path: { tool_call_id: round.id } } }),
        { label: "200 input_required round (MCP 2026-07-28)" },
      );
      expectRecord("the input_required round", [
        ["tool_key", roundRecord.tool_key, CONFIRM_KEY],
        ["status", roundRecord.status, "succeeded"],
        ["output.resultType", roundRecord.output?.resultType, "input_required"],
        ["output.content", roundRecord.output?.content, undefined],
        ["answers_call_id", roundRecord.answers_call_id, null],
      ]);
      const retryRecord = await ctx.ok(
        "getSessionToolCall",
        200,
        client.GET("/sessions/{session_id}/tool-calls/{tool_call_id}", {
          params: { path: { session_id, tool_call_id: retry.id } },
        }),
        { label: "200 retry answering an input_required round (MCP 2026-07-28)" },
      );
      // The fixture answers "confirmed" only when the retry brought back the requestState its round gave out.
      expectRecord("the retry that answers the round", [
        ["tool_key", retryRecord.tool_key, CONFIRM_KEY],
        ["answers_call_id", retryRecord.answers_call_id, round.id],
        ["output.content", retryRecord.output?.content, [{ type: "text", text: "confirmed" }]],
      ]);

      const outcome = await legacy.request(
        { method: "tasks/result", params: { taskId } },
        specTypeSchemas.CallToolResult,
      );
      const finished = await ctx.ok(
        "getToolCall",
        200,
        client.GET("/tool-calls/{tool_call_id}", { params: { path: { tool_call_id: taskCall.id } } }),
        { label: "200 task-augmented call after tasks/result (MCP)" },
      );
      expectRecord("the task-augmented call, after tasks/result", [
        ["task.status", finished.task?.status, "completed"],
        ["task.result.content", finished.task?.result?.content, outcome.content],
      ]);
    };
    return { checkRecords, close };
  } catch (err) {
    await close();
    throw err;
  }
}
