/**
 * The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663; ext-tasks specification/draft/tasks.md) through a
 * session: a 2026-07-28 client that declares it gets from the gateway what it would get from a 2026-07-28 upstream
 * that offers it, and the call's record follows the task. Clients are raw JSON-RPC over HTTP: the SDK v2 client
 * (2.4.0) refuses a `resultType` of `task`.
 */
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  type Notification,
  type SubscriptionFilter,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateTaskResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import { type EverythingHttp, startEverythingHttp } from "../support/upstream-everything.ts";
import {
  BROKEN_TASK_ERROR,
  type LegacyTasksUpstream,
  startLegacyTasksUpstream,
} from "../support/upstream-legacy-tasks.ts";
import { type ModernUpstream, startModernUpstream } from "../support/upstream-modern.ts";
import { TASKS_EXTENSION } from "../support/upstream-tasks.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  latestToolCall,
  mcpHeaders,
  postModern,
  remoteProvider,
} from "./gateway-fixtures.ts";

type Params = Record<string, unknown>;
interface Answer {
  status: number;
  result?: Params;
  error?: { code: number; message: string; data?: Params };
}

let t: StartedTestServer;
let tasksUpstream: ModernUpstream;
let plain: ModernUpstream;
/** Two providers (task ids and URIs are prefixed): `tasks` offers the extension, `plain` does not. */
let session: CreatedSession;
/** The deployment of `plain`, for a session of its own with a 2025 upstream. */
let plainDeployment: string;

beforeAll(async () => {
  [t, tasksUpstream, plain] = await Promise.all([
    startTestServer(),
    startModernUpstream({ extensions: { [TASKS_EXTENSION]: {} } }),
    startModernUpstream(),
  ]);
  const deployments = await Promise.all(
    Object.entries({ tasks: tasksUpstream.url, plain: plain.url }).map(async ([slug, url]) => {
      const provider = await remoteProvider(t.db, slug, url);
      return (await deployProvider(t.client, provider.providerId, slug)).id;
    }),
  );
  plainDeployment = deployments[1] ?? "";
  session = await createSession(
    t.client,
    deployments.map((id) => ({ provider_deployment: deploymentRef(id) })),
  );
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([tasksUpstream?.close(), plain?.close(), t?.close()]);
});

const DECLARING = { extensions: { [TASKS_EXTENSION]: {} } };

/**
 * A 2026-07-28 request with its standard headers (tasks.md "Streamable HTTP: Routing Headers": `Mcp-Name` is the
 * task id) and envelope, declaring `capabilities`; its response as JSON or the last message of its SSE stream.
 */
async function request(
  method: string,
  params: Params,
  capabilities: Params = DECLARING,
  to: CreatedSession = session,
): Promise<Answer> {
  const name = method === "tools/call" ? params.name : params.taskId;
  const response = await postModern(t, to, method, params, {
    capabilities,
    ...(typeof name === "string" ? { name } : {}),
  });
  const text = await response.text();
  const json = response.headers.get("content-type")?.includes("text/event-stream")
    ? (
        text
          .split("\n")
          .filter((line) => line.startsWith("data: "))
          .at(-1) ?? ""
      ).slice("data: ".length)
    : text;
  return { status: response.status, ...(JSON.parse(json) as Omit<Answer, "status">) };
}

/** tasks/get until the task leaves `working`, as a client polls (tasks.md "Task Polling"). */
async function pollWhileWorking(taskId: string, to: CreatedSession = session): Promise<Params> {
  for (;;) {
    const { result, error } = await request("tasks/get", { taskId }, DECLARING, to);
    if (!result) throw new Error(`tasks/get failed: ${JSON.stringify(error)}`);
    if (result.status !== "working") return result;
    await new Promise((resolve) => setTimeout(resolve, Number(result.pollIntervalMs ?? 20)));
  }
}

const recordedTask = async (of: CreatedSession = session) => (await latestToolCall(t, of.id))?.task;
const upstreamIdOf = (taskId: unknown) => String(taskId).slice("tasks+".length);

/** Both ways the gateway serves a 2026-07-28 tools/call: its fast lane, and the SDK's server and client. */
const LANES = [
  ["the fast lane", "1"],
  ["the SDK's server and client", "0"],
] as const;

/** The enclosing describe's calls take the lane `fastCalls` names (TOOLPLANE_MCP_FAST_CALLS, read per request). */
function servedThrough(fastCalls: string) {
  beforeAll(() => {
    process.env.TOOLPLANE_MCP_FAST_CALLS = fastCalls;
  });
  afterAll(() => {
    delete process.env.TOOLPLANE_MCP_FAST_CALLS;
  });
}

describe.each(LANES)("a task-augmented tools/call through %s", (_lane, fastCalls) => {
  servedThrough(fastCalls);

  // tasks.md "Task Creation": the server MAY answer a declaring client's tools/call with a CreateTaskResult
  // (`resultType: "task"`, `Result & Task`); "Task Polling": tasks/get answers the DetailedTask, `resultType`
  // `complete`, with the final `result` inline once completed.
  it("relays the CreateTaskResult, and tasks/get of its session-wide id until the result", async () => {
    const created = await request("tools/call", { name: "tasks_report", arguments: { topic: "proxies" } });
    expect(created.status).toBe(200);
    const task = created.result ?? {};
    expect(task).toMatchObject({ resultType: "task", status: "working", ttlMs: 60_000, pollIntervalMs: 20 });
    expect(String(task.taskId)).toMatch(/^tasks\+/);
    expect(task).not.toHaveProperty("content"); // a CreateTaskResult is no CallToolResult
    // The declaration reached the upstream, which created the task; the record names it.
    const upstreamId = upstreamIdOf(task.taskId);
    expect(await recordedTask()).toMatchObject({ id: upstreamId, status: "working", result: null, error: null });

    const done = await pollWhileWorking(String(task.taskId));
    expect(done).toMatchObject({ resultType: "complete", taskId: task.taskId, status: "completed" });
    // The inline result's URIs are the session's, as the call's own result would have them.
    expect((done.result as { content: Params[] }).content[0]).toMatchObject({
      type: "resource_link",
      uri: "tasks+memo://report/proxies",
    });
    // The upstream was asked about its own id, and the record holds the task's outcome as the upstream gave it.
    expect(tasksUpstream.tasks.requests.at(-1)).toMatchObject({ method: "tasks/get", params: { taskId: upstreamId } });
    const recorded = await recordedTask();
    expect(recorded).toMatchObject({ id: upstreamId, status: "completed", error: null });
    expect(JSON.stringify(recorded?.result)).toContain("memo://report/proxies");
  });

  // tasks.md "Task Update Requests": an `input_required` task lists `inputRequests`; tasks/update brings the
  // `inputResponses` and is acknowledged with an empty result (`resultType` `complete`).
  it("relays inputRequests and routes tasks/update with the client's inputResponses", async () => {
    const created = await request("tools/call", { name: "tasks_report", arguments: { topic: "maps", ask: true } });
    const taskId = String(created.result?.taskId);
    const asking = await pollWhileWorking(taskId);
    expect(asking).toMatchObject({
      status: "input_required",
      inputRequests: { name: { method: "elicitation/create" } },
    });
    expect((await recordedTask())?.status).toBe("input_required");
    const inputResponses = { name: { action: "accept", content: { name: "Ada" } } };
    const updated = await request("tasks/update", { taskId, inputResponses });
    expect(updated.result).toMatchObject({ resultType: "complete" });
    // The last tasks/update (the gateway's own follower may have asked tasks/get since).
    expect(tasksUpstream.tasks.requests.filter((r) => r.method === "tasks/update").at(-1)).toEqual({
      method: "tasks/update",
      params: expect.objectContaining({ taskId: upstreamIdOf(taskId), inputResponses }),
    });
    const done = await request("tasks/get", { taskId });
    expect(done.result).toMatchObject({ status: "completed" });
    expect(JSON.stringify(done.result?.result)).toContain("Report on maps for Ada");
    expect(await recordedTask()).toMatchObject({ status: "completed" });
  });

  // tasks.md "Task Status": `failed` carries the JSON-RPC `error` the request ended with.
  it("records a failed task's JSON-RPC error", async () => {
    const created = await request("tools/call", { name: "tasks_report", arguments: { topic: "x", fail: true } });
    const failed = await pollWhileWorking(String(created.result?.taskId));
    expect(failed).toMatchObject({ status: "failed", error: { code: -32603, message: "The archive is offline" } });
    expect(await recordedTask()).toMatchObject({
      status: "failed",
      result: null,
      error: { code: -32603, message: "The archive is offline" },
    });
  });

  // tasks.md "Task Cancellation": tasks/cancel is acknowledged with an empty result; a terminal status stays.
  it("routes tasks/cancel, and the record keeps the terminal status", async () => {
    const created = await request("tools/call", { name: "tasks_report", arguments: { topic: "y", ms: 60_000 } });
    const taskId = String(created.result?.taskId);
    expect((await request("tasks/cancel", { taskId })).result).toMatchObject({ resultType: "complete" });
    expect(tasksUpstream.tasks.requests.map((r) => r.method)).toContain("tasks/cancel");
    expect((await request("tasks/get", { taskId })).result).toMatchObject({ status: "cancelled" });
    expect(await recordedTask()).toMatchObject({ status: "cancelled" });
  });

  // tasks.md "Task Polling" leaves following a task to its requestor; the gateway follows it too, for the record.
  it("records how a task ended that no client polled or listened to", async () => {
    const created = await request("tools/call", { name: "tasks_report", arguments: { topic: "unwatched", ms: 200 } });
    const upstreamId = upstreamIdOf(created.result?.taskId);
    expect(await recordedTask()).toMatchObject({ id: upstreamId, status: "working" });
    await expect.poll(async () => (await recordedTask())?.status, { timeout: 15_000, interval: 200 }).toBe("completed");
    expect(JSON.stringify((await recordedTask())?.result)).toContain("memo://report/unwatched");
    expect(tasksUpstream.tasks.requests).toContainEqual({
      method: "tasks/get",
      params: expect.objectContaining({ taskId: upstreamId }),
    });
  });
});

/** A 2026-07-28 client of the SDK v2 that declares the extension, and the task notifications it hears. */
async function listeningClient(): Promise<{ client: ModernClient; heard: Params[] }> {
  const client = new ModernClient(
    { name: "listening-client", version: "1.0.0" },
    { capabilities: DECLARING, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const heard: Params[] = [];
  client.fallbackNotificationHandler = async (notification: Notification) => {
    if (notification.method === "notifications/tasks") heard.push(notification.params ?? {});
  };
  await client.connect(
    new ModernTransport(endpointOf(t, session), {
      requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
    }),
  );
  return { client, heard };
}

/** The Tasks extension's member of a listen filter, which the SDK's SubscriptionFilter does not name. */
const followTasks = (taskIds: string[]) => ({ taskIds }) as SubscriptionFilter;

describe("task status notifications on subscriptions/listen", () => {
  // The gateway follows no task here: what the record says came from the notifications.
  beforeAll(() => {
    process.env.TOOLPLANE_TASK_FOLLOW_MS = "0";
  });
  afterAll(() => {
    delete process.env.TOOLPLANE_TASK_FOLLOW_MS;
  });

  // tasks.md "Task Status Notifications": a client names task ids on subscriptions/listen; the server's acknowledgement
  // names those it agreed to, and each status change is a `notifications/tasks` carrying the DetailedTask (as tasks/get
  // would return it, the result of a completed task included), on the stream (stamped with its subscription id).
  it("acknowledges the task ids and relays the upstream's notifications/tasks, session-wide", async () => {
    // Still working once the stream is open (see the next test).
    const created = await request("tools/call", { name: "tasks_report", arguments: { topic: "streams", ms: 3_000 } });
    const taskId = String(created.result?.taskId);
    const abort = new AbortController();
    const response = await fetch(endpointOf(t, session), {
      method: "POST",
      signal: abort.signal,
      headers: {
        ...mcpHeaders(session.secret),
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "listen-1",
        method: "subscriptions/listen",
        params: {
          notifications: { taskIds: [taskId, "tasks+unknown-task", "nobody+t1"] },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { name: "raw-tasks-client", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": DECLARING,
          },
        },
      }),
    });
    expect(response.status).toBe(200);
    const events: Params[] = [];
    const reading = (async () => {
      const decoder = new TextDecoder();
      let pending = "";
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        pending += decoder.decode(chunk, { stream: true });
        for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
          const data = pending
            .slice(0, end)
            .split("\n")
            .find((line) => line.startsWith("data: "));
          pending = pending.slice(end + 2);
          if (data) events.push(JSON.parse(data.slice("data: ".length)));
        }
      }
    })().catch(() => undefined);
    try {
      await expect.poll(() => events.length, { timeout: 10_000 }).toBeGreaterThan(0);
      // The tasks of providers that can announce them (not of a provider the session lacks), and no core member the
      // client did not ask for.
      const [ack] = events;
      expect(ack).toMatchObject({ method: "notifications/subscriptions/acknowledged" });
      expect((ack?.params as Params | undefined)?.notifications).toEqual({ taskIds: [taskId, "tasks+unknown-task"] });
      const completed = () =>
        events.find((e) => e.method === "notifications/tasks" && (e.params as Params).status === "completed");
      await expect.poll(completed, { timeout: 10_000, interval: 50 }).toBeDefined();
      const params = completed()?.params as Params;
      expect(params).toMatchObject({ taskId, _meta: { "io.modelcontextprotocol/subscriptionId": "listen-1" } });
      expect((params.result as { content: Params[] }).content[0]).toMatchObject({ uri: "tasks+memo://report/streams" });
      expect(events.some((e) => e.method === "notifications/tools/list_changed")).toBe(false);
      // The upstream's stream named the task as it knows it; the record has the outcome without any tasks/get.
      expect(tasksUpstream.tasks.listens.flat()).toContain(upstreamIdOf(taskId));
      expect(tasksUpstream.tasks.requests.some((r) => r.params.taskId === upstreamIdOf(taskId))).toBe(false);
      const recorded = await recordedTask();
      expect(recorded).toMatchObject({ id: upstreamIdOf(taskId), status: "completed", error: null });
      expect(JSON.stringify(recorded?.result)).toContain("memo://report/streams");
    } finally {
      abort.abort();
      await reading;
    }
  });

  // Two clients following one task share the upstream connection and its listen stream: each hears every status,
  // and the upstream announces each once (so the record is written once per announcement, not once per client).
  it("relays to every listening client of the SDK v2, one upstream stream naming the task", async () => {
    // Long enough to be still working once both streams are open: a task that ended before a stream named it is
    // announced to no one (the fixture announces moves, not states), which on a loaded machine failed this test.
    const created = await request("tools/call", { name: "tasks_report", arguments: { topic: "fans", ms: 4_000 } });
    const taskId = String(created.result?.taskId);
    const listeners = await Promise.all([listeningClient(), listeningClient()]);
    try {
      const subscriptions = await Promise.all(listeners.map(({ client }) => client.listen(followTasks([taskId]))));
      for (const { heard } of listeners) {
        await expect
          .poll(() => heard.map((task) => task.status), { timeout: 20_000, interval: 50 })
          .toContain("completed");
        expect(heard.at(-1)).toMatchObject({ taskId, status: "completed" });
      }
      expect(tasksUpstream.tasks.listens.filter((ids) => ids.includes(upstreamIdOf(taskId)))).toHaveLength(1);
      expect(await recordedTask()).toMatchObject({ status: "completed" });
      await Promise.all(subscriptions.map((subscription) => subscription.close()));
    } finally {
      await Promise.all(listeners.map(({ client }) => client.close()));
    }
  });

  // tasks.md "Task Status Notifications": a client that asks for them without declaring the extension MUST get -32021.
  it("refuses task ids to a client that did not declare the extension", async () => {
    const refused = await request("subscriptions/listen", { notifications: { taskIds: ["tasks+t1"] } }, {});
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
  });
});

describe.each(LANES)("a client without the extension, through %s", (_lane, fastCalls) => {
  servedThrough(fastCalls);

  // tasks.md "Capability Negotiation": a server MUST NOT return CreateTaskResult to a client that did not declare the
  // extension, and a client MUST treat one it cannot take as an invalid response. The gateway answers a tool error
  // that names the provider, what it did and its task, and records the call failed; no task reaches the client.
  it("gets a tool error naming the provider when the upstream makes it a task anyway", async () => {
    const answered = await request("tools/call", { name: "tasks_report", arguments: { misbehave: true } }, {});
    expect(answered.result).toMatchObject({ resultType: "complete", isError: true });
    expect(answered.result).not.toHaveProperty("taskId");
    const text = String((answered.result?.content as { text?: string }[] | undefined)?.[0]?.text);
    expect(text).toMatch(/^Provider tasks: .*answered with a task \(.+\) although the request did not declare/);
    expect(text).toContain(TASKS_EXTENSION);
    const recorded = await latestToolCall(t, session.id);
    expect(recorded).toMatchObject({ status: "failed", error: { code: "upstream_unavailable" }, task: null });
  });
});

describe("a client without the extension", () => {
  // tasks.md "Capability Negotiation": a server MUST NOT return CreateTaskResult to a client that did not include
  // the extension on its request, and answers -32021 (Missing Required Client Capability) when it cannot do
  // without one. The gateway declares upstream only what the client declared.
  it("gets the tool's result, or the upstream's -32021, never a task", async () => {
    const answered = await request("tools/call", { name: "tasks_report", arguments: { topic: "z" } }, {});
    expect(answered.result).toMatchObject({ resultType: "complete", content: [expect.anything(), expect.anything()] });
    expect(answered.result).not.toHaveProperty("taskId");
    const refused = await request("tools/call", { name: "tasks_report", arguments: { requireTask: true } }, {});
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
  });

  // tasks.md "Error Handling" (the conformance check sep-2663-tasks-methods-non-declaring): -32021 for the
  // extension's methods whatever the task id, also one that no provider of this two-provider session owns (the
  // gateway's own -32602 once) and one of the upstream without the extension.
  it("gets -32021 for tasks/get, tasks/update and tasks/cancel of any task", async () => {
    for (const taskId of ["gate-test", "plain+t1", "tasks+t1"]) {
      for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
        const refused = await request(
          method,
          { taskId, ...(method === "tasks/update" ? { inputResponses: {} } : {}) },
          {},
        );
        expect(refused.error, `${method} ${taskId}`).toMatchObject({
          code: -32021,
          data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
        });
      }
    }
  });
});

describe("server/discover and unknown tasks", () => {
  // MCP 2026-07-28 server/discover; tasks.md "Capability Negotiation": the server declares the extension.
  it("declares the extension an upstream offers", async () => {
    const discovered = await request("server/discover", {});
    expect(discovered.result?.capabilities).toMatchObject({
      extensions: {
        [TASKS_EXTENSION]: {},
        "io.toolplane.test/widgets": { version: 1 },
      },
    });
  });

  // tasks.md "Error Handling": an invalid or nonexistent taskId is -32602.
  it("answers a task id of no provider of the session with invalid params", async () => {
    const unknown = await request("tasks/get", { taskId: "nobody+t1" });
    expect(unknown.error).toMatchObject({ code: -32602 });
  });
});

describe("a 2025 client's core tasks over a 2026-07-28 upstream's extension (translated)", () => {
  /** A client of MCP 2025-11-25 (SDK v1, a session of its own), closed after each test. */
  const clients: Client[] = [];
  async function legacyClient(capabilities: Params = {}) {
    const client = new Client({ name: "legacy-tasks-client", version: "1.0.0" }, { capabilities });
    await client.connect(
      new StreamableHTTPClientTransport(endpointOf(t, session), {
        requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
      }),
    );
    clients.push(client);
    return client;
  }
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });
  /** What SDK v1's callToolStream yields for a call, in order (its `task` is added for a tool that allows one). */
  async function streamed(client: Client, name: string, args: Params) {
    await client.listTools(); // what tells the SDK which tools run as tasks
    const messages: { type: string; task?: Params; result?: Params; error?: Error }[] = [];
    for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args })) {
      messages.push(message as never);
    }
    return messages;
  }

  // MCP 2025-11-25 "Capabilities", "Tool-Level Negotiation": the session offers task-augmented tools/call and
  // tasks/cancel for the extension's upstream (the extension has no tasks/list), and its tools allow a task, since
  // with the extension the server decides per call; the other 2026-07-28 upstream's tools do not.
  it("offers tasks for the extension's upstream, and its tools as optional tasks", async () => {
    const client = await legacyClient();
    expect(client.getServerCapabilities()?.tasks).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    // `extensions` is 2026-07-28's, shown at a 2025 initialize for extensions such as MCP Apps, but not the Tasks
    // extension: its wire is 2026-07-28 only, and a 2025 client has core tasks instead.
    expect(client.getServerCapabilities()?.extensions).toEqual({ "io.toolplane.test/widgets": { version: 1 } });
    const { tools } = await client.listTools();
    const execution = (name: string) => tools.find((tool) => tool.name === name)?.execution;
    expect(execution("tasks_report")).toEqual({ taskSupport: "optional" });
    expect(execution("plain_shout")).toBeUndefined();
  });

  describe.each(LANES)("through %s", (_lane, fastCalls) => {
    servedThrough(fastCalls);

    // "Creating Tasks": a CreateTaskResult (`{ task }`, `ttl` and `pollInterval`); tasks/get polls the status;
    // "Result Retrieval": tasks/result answers the result, with the related-task `_meta`.
    it("runs the call as the extension's task and answers it as a 2025 task, tasks/result the result", async () => {
      const client = await legacyClient();
      const messages = await streamed(client, "tasks_report", { topic: "eras" });
      const [created] = messages;
      expect(created).toMatchObject({
        type: "taskCreated",
        task: { status: "working", ttl: 60_000, pollInterval: 20 },
      });
      const taskId = String(created?.task?.taskId);
      expect(taskId).toMatch(/^tasks\+/);
      expect(created?.task).not.toHaveProperty("ttlMs");
      expect(messages.at(-2)).toMatchObject({ type: "taskStatus", task: { taskId, status: "completed" } });
      expect(messages.at(-2)?.task).not.toHaveProperty("result"); // 2025 gives the outcome through tasks/result only
      expect(messages.at(-1)).toMatchObject({
        type: "result",
        result: {
          content: [{ uri: "tasks+memo://report/eras" }, { text: "Report on eras" }],
          _meta: { "io.modelcontextprotocol/related-task": { taskId } },
        },
      });
      // The upstream was asked through the extension about its own id; the record follows the task.
      const upstreamId = upstreamIdOf(taskId);
      expect(tasksUpstream.tasks.requests.at(-1)).toMatchObject({
        method: "tasks/get",
        params: { taskId: upstreamId },
      });
      const recorded = await recordedTask();
      expect(recorded).toMatchObject({ id: upstreamId, status: "completed", error: null });
      expect(JSON.stringify(recorded?.result)).toContain("Report on eras");
    });

    // "Result Retrieval": tasks/result answers a failed task's JSON-RPC error, as the call would have.
    it("answers tasks/result of a failed task with its JSON-RPC error, and records it", async () => {
      const client = await legacyClient();
      const created = await client.request(
        { method: "tools/call", params: { name: "tasks_report", arguments: { fail: true }, task: {} } },
        CreateTaskResultSchema,
      );
      const error = await client.experimental.tasks.getTaskResult(created.task.taskId).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: -32603, message: expect.stringContaining("The archive is offline") });
      expect(await client.experimental.tasks.getTask(created.task.taskId)).toMatchObject({ status: "failed" });
      expect(await recordedTask()).toMatchObject({
        status: "failed",
        result: null,
        error: { code: -32603, message: "The archive is offline" },
      });
    });

    // "Input Required Status": a 2025 requestor calls tasks/result, on whose stream the receiver's requests come; the
    // gateway puts the extension's inputRequests there, and the client's answers into tasks/update.
    it("asks the client an input_required task's questions on the tasks/result stream", async () => {
      const client = await legacyClient({ elicitation: { form: {} } });
      const asked: Params[] = [];
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        asked.push(request.params);
        return { action: "accept", content: { name: "Ada" } };
      });
      const messages = await streamed(client, "tasks_report", { topic: "maps", ask: true });
      const taskId = String(messages[0]?.task?.taskId);
      expect(messages.some((m) => m.type === "taskStatus" && m.task?.status === "input_required")).toBe(true);
      expect(asked).toEqual([
        expect.objectContaining({
          message: "Who is the report for?",
          _meta: { "io.modelcontextprotocol/related-task": { taskId } },
        }),
      ]);
      expect(JSON.stringify(messages.at(-1)?.result)).toContain("Report on maps for Ada");
      expect(tasksUpstream.tasks.requests).toContainEqual({
        method: "tasks/update",
        params: expect.objectContaining({ taskId: upstreamIdOf(taskId), inputResponses: { name: expect.anything() } }),
      });
    });

    // "Task Cancellation": the cancelled task is answered; an ended task's cancellation is refused with -32602.
    it("cancels through the extension and answers the cancelled task; an ended one is refused", async () => {
      const client = await legacyClient();
      const params = { name: "tasks_report", arguments: { ms: 60_000 }, task: {} };
      const created = await client.request({ method: "tools/call", params }, CreateTaskResultSchema);
      const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
      expect(cancelled).toMatchObject({ taskId: created.task.taskId, status: "cancelled" });
      expect(tasksUpstream.tasks.requests.map((r) => r.method)).toContain("tasks/cancel");
      expect(await recordedTask()).toMatchObject({ status: "cancelled" });
      const again = await client.experimental.tasks.cancelTask(created.task.taskId).catch((e: unknown) => e);
      expect(again).toMatchObject({ code: -32602 });
    });

    // With the extension the server decides per call: one it ran at once is, for the 2025 client, a task of the
    // gateway's own that already ended, named by the call's record, its result the record's.
    it("answers a call the upstream ran at once as an ended task of the gateway's", async () => {
      const client = await legacyClient();
      const messages = await streamed(client, "tasks_shout", { text: "hello" });
      expect(messages[0]).toMatchObject({ type: "taskCreated", task: { status: "completed", ttl: null } });
      const taskId = String(messages[0]?.task?.taskId);
      const record = await latestToolCall(t, session.id);
      expect(taskId).toBe(`tasks+${record?.id}`);
      expect(messages.at(-1)).toMatchObject({ type: "result", result: { content: [{ type: "text", text: "HELLO" }] } });
      expect(record?.task).toMatchObject({ id: record?.id, status: "completed" });
      expect(JSON.stringify(record?.task?.result)).toContain("HELLO");
      const again = await client.experimental.tasks.cancelTask(taskId).catch((e: unknown) => e);
      expect(again).toMatchObject({ code: -32602 });
    });
  });
});

describe("a 2025-11-25 upstream's task for a declaring 2026-07-28 client (translated)", () => {
  let everything: EverythingHttp;
  let kiln: LegacyTasksUpstream;
  /** server-everything and `kiln` (MCP 2025-11-25 core tasks) with `plain`: task ids are prefixed. */
  let legacy: CreatedSession;
  /** execution.taskSupport "required": MCP 2025-11-25 refuses a call of it that is not task-augmented. */
  const research = (topic: string, capabilities: Params = DECLARING) =>
    request("tools/call", { name: "everything_simulate-research-query", arguments: { topic } }, capabilities, legacy);
  const upstreamIdOfLegacy = (taskId: unknown) => String(taskId).slice("everything+".length);

  beforeAll(async () => {
    [everything, kiln] = await Promise.all([startEverythingHttp(), startLegacyTasksUpstream()]);
    const deployments = await Promise.all(
      Object.entries({ everything: everything.url, kiln: kiln.url }).map(async ([slug, url]) => {
        const provider = await remoteProvider(t.db, slug, url);
        return (await deployProvider(t.client, provider.providerId, slug)).id;
      }),
    );
    legacy = await createSession(
      t.client,
      [...deployments, plainDeployment].map((id) => ({ provider_deployment: deploymentRef(id) })),
    );
  });
  afterAll(async () => {
    await Promise.all([everything?.close(), kiln?.close()]);
  });

  // tasks.md "Capability Negotiation": the server declares the extension; the gateway does for what it translates.
  it("declares the extension for a 2025 upstream whose tool calls can be tasks", async () => {
    const discovered = await request("server/discover", {}, DECLARING, legacy);
    expect(discovered.result?.capabilities).toMatchObject({ extensions: { [TASKS_EXTENSION]: {} } });
  });

  describe.each(LANES)("through %s", (_lane, fastCalls) => {
    servedThrough(fastCalls);

    // tasks.md "Task Creation": the gateway, as the server, answers a CreateTaskResult (`resultType: "task"`, the
    // Task's members at the top level: `ttlMs` and `pollIntervalMs` for 2025's `ttl` and `pollInterval`);
    // "Task Polling": tasks/get answers `resultType` `complete`, with the final `result` inline once completed,
    // which the gateway fetched with 2025's tasks/result.
    it("runs the tool as a 2025 task and answers it as the extension's, tasks/get until the inline result", async () => {
      const created = await research("eras");
      expect(created.status).toBe(200);
      const task = created.result ?? {};
      expect(task).toMatchObject({ resultType: "task", status: "working", ttlMs: 300_000, pollIntervalMs: 1000 });
      expect(String(task.taskId)).toMatch(/^everything\+/);
      for (const member of ["task", "content", "ttl", "pollInterval"]) expect(task).not.toHaveProperty(member);
      const upstreamId = upstreamIdOfLegacy(task.taskId);
      expect(await recordedTask(legacy)).toMatchObject({ id: upstreamId, status: "working", result: null });

      const done = await pollWhileWorking(String(task.taskId), legacy);
      expect(done).toMatchObject({ resultType: "complete", taskId: task.taskId, status: "completed" });
      expect(done).not.toHaveProperty("error");
      expect(JSON.stringify(done.result)).toContain("Research Report: eras");
      // No 2025 related-task `_meta` (it would name the upstream's id) in the inline result.
      expect(JSON.stringify(done.result)).not.toContain(upstreamId);
      const recorded = await recordedTask(legacy);
      expect(recorded).toMatchObject({ id: upstreamId, status: "completed", error: null });
      expect(JSON.stringify(recorded?.result)).toContain("Research Report: eras");
    });

    // tasks.md "Task Execution Errors": a JSON-RPC error during execution makes the task `failed` with that `error`
    // (2025's tasks/result answers it as the call would have, MCP 2025-11-25 "Result Retrieval").
    it("answers a 2025 task that ended in a JSON-RPC error as failed with that error, and records it", async () => {
      const created = await request("tools/call", { name: "kiln_breaks" }, DECLARING, legacy);
      const taskId = String(created.result?.taskId);
      expect(taskId).toMatch(/^kiln\+/);
      const failed = await pollWhileWorking(taskId, legacy);
      const error = { code: BROKEN_TASK_ERROR.code, data: BROKEN_TASK_ERROR.data };
      expect(failed).toMatchObject({ resultType: "complete", taskId, status: "failed", error });
      expect(String((failed.error as Params).message)).toContain(BROKEN_TASK_ERROR.message);
      expect(failed).not.toHaveProperty("result");
      const recorded = await recordedTask(legacy);
      expect(recorded).toMatchObject({ id: taskId.slice("kiln+".length), status: "failed", result: null, error });
      expect(JSON.stringify(recorded?.error)).toContain(BROKEN_TASK_ERROR.message);
      // tasks.md "Error Handling": the gateway, which translates this task, refuses it to a request without the
      // extension as an upstream of the extension would (-32021).
      expect((await request("tasks/get", { taskId }, {}, legacy)).error).toMatchObject({ code: -32021 });
    });

    // tasks.md "Task Execution Errors": a tool result with `isError` is `completed`, the result inline (2025 ends
    // such a task `failed`, its tasks/result answering the result).
    it("answers a 2025 task whose tool result is an error as completed with that result", async () => {
      const created = await request("tools/call", { name: "kiln_regrets" }, DECLARING, legacy);
      const taskId = String(created.result?.taskId);
      const done = await pollWhileWorking(taskId, legacy);
      expect(done).toMatchObject({
        resultType: "complete",
        status: "completed",
        result: { content: [{ type: "text", text: "The glaze ran" }], isError: true },
      });
      expect(done).not.toHaveProperty("error");
      const recorded = await recordedTask(legacy);
      expect(recorded).toMatchObject({ status: "completed", error: null, result: { isError: true } });
    });
  });

  // tasks.md "Task Cancellation": tasks/cancel is acknowledged with an empty result; the status follows in tasks/get.
  it("maps tasks/cancel onto 2025's, acknowledged with an empty result", async () => {
    const created = await research("cancelled");
    const taskId = String(created.result?.taskId);
    const cancelled = await request("tasks/cancel", { taskId }, DECLARING, legacy);
    expect(cancelled.result).toMatchObject({ resultType: "complete" });
    for (const member of ["taskId", "status", "task"]) expect(cancelled.result).not.toHaveProperty(member);
    expect((await request("tasks/get", { taskId }, DECLARING, legacy)).result).toMatchObject({
      resultType: "complete",
      status: "cancelled",
    });
    expect(await recordedTask(legacy)).toMatchObject({ status: "cancelled" });
  });

  // MCP 2025-11-25 "Task Polling" leaves following a task to its requestor; the gateway follows it too, for the
  // record, with 2025's tasks/get and, once it ended, tasks/result for its outcome.
  it("records how a 2025 task ended that no client polled", async () => {
    const created = await request("tools/call", { name: "kiln_breaks" }, DECLARING, legacy);
    const taskId = String(created.result?.taskId).slice("kiln+".length);
    await expect
      .poll(async () => (await recordedTask(legacy))?.status, { timeout: 15_000, interval: 200 })
      .toBe("failed");
    const recorded = await recordedTask(legacy);
    expect(recorded).toMatchObject({ id: taskId, result: null, error: { code: BROKEN_TASK_ERROR.code } });
    expect(JSON.stringify(recorded?.error)).toContain(BROKEN_TASK_ERROR.message);
  });

  // tasks.md "Task Update Requests": MCP 2025-11-25 has no tasks/update (a task's requests reach the client only on
  // its tasks/result stream): refused with a JSON-RPC error that says so.
  it("refuses tasks/update of a 2025 task", async () => {
    const created = await research("updates");
    const taskId = String(created.result?.taskId);
    const updated = await request("tasks/update", { taskId, inputResponses: {} }, DECLARING, legacy);
    expect(updated.error).toMatchObject({ code: -32600, message: expect.stringContaining("2025-11-25") });
    await request("tasks/cancel", { taskId }, DECLARING, legacy);
  });

  // tasks.md "Capability Negotiation": no CreateTaskResult for a client that did not declare the extension; the
  // call goes on untranslated, and the 2025 upstream refuses a task-required tool's plain call (server-everything
  // says so in a tool error).
  it("gives a client without the extension no task: the upstream's error", async () => {
    const answered = await research("plain", {});
    expect(answered.result).toMatchObject({ resultType: "complete", isError: true });
    expect(JSON.stringify(answered.result?.content)).toContain("requires task augmentation");
    expect(answered.result).not.toHaveProperty("taskId");
  });
});
