import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import {
  CLIENT_CAPABILITIES_META_KEY,
  type JSONRPCRequest,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type Result,
  Server,
  type ServerContext,
  type ServerEvent,
  type ServerEventBus,
  type StandardSchemaV1,
  SUBSCRIPTION_ID_META_KEY,
  type Tool,
} from "@modelcontextprotocol/server";
import type { Request, Response } from "express";

/**
 * The Tasks extension (SEP-2663) as a 2026-07-28 server offers it, for the upstream fixtures. Neither the SDK v2 nor
 * @modelcontextprotocol/ext-tasks 0.2.2 serves it (the package's receiver is the 2025-11-25 one, for requests a
 * server sends its client): this follows specification/draft/tasks.md of modelcontextprotocol/ext-tasks.
 */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

type Params = Record<string, unknown>;
type Status = "working" | "input_required" | "completed" | "failed" | "cancelled";
interface StoredTask {
  taskId: string;
  status: Status;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  /** The status-specific member of the DetailedTask (`result`, `error` or `inputRequests`). */
  detail: Params;
  /** Runs when the client answers the task's input requests (`tasks/update`). */
  answered?: (responses: Params) => void;
  /** Stops the task's work when it is cancelled. */
  work: AbortController;
}

/** What a task's work can do while it runs: see its cancellation, and ask the client questions. */
export interface RunningTask {
  signal: AbortSignal;
  /**
   * Parks the task in `input_required` with these requests until the client has answered all of them (tasks.md
   * "Task Update Requests": each tasks/update may answer a subset; answered keys leave `inputRequests`, unknown or
   * already answered ones are ignored); resolves with the answers by key.
   */
  ask: (inputRequests: Params) => Promise<Params>;
}

export interface TasksUpstream {
  /** The task requests it was sent (method and params, task ids as it named them), in order. */
  requests: { method: string; params: Params }[];
  /** The task ids of each `subscriptions/listen` stream that named some, in order. */
  listens: string[][];
}

/** Params of the extension's methods, checked by the handlers themselves (as the spec's errors require). */
const anyParams: StandardSchemaV1<Params, Params> = {
  "~standard": { version: 1, vendor: "toolplane-tests", validate: (value) => ({ value: value as Params }) },
};

/** Whether a request's envelope declares the extension in its per-request capabilities (tasks.md "Capability Negotiation"). */
const declared = (envelope: Params | undefined) => {
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Params } | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
};
export const declaresTasks = (ctx: ServerContext) => declared(ctx.mcpReq.envelope as Params | undefined);
export const missingTasksCapability = (what: string) =>
  new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    `Missing required client capability: ${what} needs the Tasks extension`,
  );

/**
 * A Server whose tools/call may answer with a CreateTaskResult as the handler built it: the SDK checks every tool
 * result against CallToolResult and gives one without `content` an empty one, which a CreateTaskResult (tasks.md
 * "Task Creation": `Result & Task`) does not have.
 */
export class TasksServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    if (method !== "tools/call") return super._wrapHandler(method, handler);
    const created = new WeakMap<AbortSignal, Result>();
    const wrapped = super._wrapHandler(method, async (request, ctx) => {
      const result = await handler(request, ctx);
      if (result.resultType === "task") created.set(ctx.mcpReq.signal, result);
      return result;
    });
    return async (request, ctx) => {
      const result = await wrapped(request, ctx);
      return created.get(ctx.mcpReq.signal) ?? result;
    };
  }
}

/**
 * The extension's methods over a store of tasks, for a fixture's tools to create tasks in: `start` makes a task (its
 * caller checks that the request declared the extension) and runs its work, which ends the task `completed` with the
 * result it returns, or `failed` with the JSON-RPC error it throws (tasks.md "Task Status"); `tasks/cancel` ends it
 * `cancelled` and aborts the work.
 */
export function taskEngine() {
  const tasks = new Map<string, StoredTask>();
  const state: TasksUpstream = { requests: [], listens: [] };
  /** The open listen streams' task followers: each is told of every move of every task. */
  const followers = new Set<(task: StoredTask) => void>();
  const now = () => new Date().toISOString();
  const move = (task: StoredTask, status: Status, detail: Params = {}) => {
    if (["completed", "failed", "cancelled"].includes(task.status)) return; // terminal states never change
    Object.assign(task, { status, detail, lastUpdatedAt: now() });
    for (const follow of followers) follow(task);
  };
  const view = ({ detail, answered: _answered, work: _work, ...task }: StoredTask) => ({ ...task, ...detail });
  const owned = (params: Params, ctx: ServerContext, method: string) => {
    state.requests.push({ method, params });
    // tasks.md "Error Handling": -32021 for non-declaring clients, -32602 for an unknown task.
    if (!declaresTasks(ctx)) throw missingTasksCapability(method);
    const task = tasks.get(String(params.taskId));
    if (!task) throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Failed to retrieve task: Task not found");
    return task;
  };

  /** Creates a task running `work` and answers its CreateTaskResult (the task is known to tasks/get at once). */
  const start = (work: (task: RunningTask) => Promise<Params>): Params => {
    const createdAt = now();
    const task: StoredTask = {
      taskId: randomUUID(),
      status: "working",
      createdAt,
      lastUpdatedAt: createdAt,
      ttlMs: 60_000,
      pollIntervalMs: 20,
      detail: {},
      work: new AbortController(),
    };
    tasks.set(task.taskId, task);
    const ask = (inputRequests: Params) =>
      new Promise<Params>((resolve) => {
        const pending = { ...inputRequests };
        const answers: Params = {};
        move(task, "input_required", { inputRequests: { ...pending } });
        task.answered = (responses) => {
          for (const [key, response] of Object.entries(responses)) {
            if (!(key in pending)) continue;
            answers[key] = response;
            delete pending[key];
          }
          if (Object.keys(pending).length > 0) return move(task, "input_required", { inputRequests: { ...pending } });
          task.answered = undefined;
          move(task, "working");
          resolve(answers);
        };
      });
    work({ signal: task.work.signal, ask }).then(
      (result) => move(task, "completed", { result }),
      (error: unknown) => {
        if (task.work.signal.aborted) return;
        const { code, message } = error instanceof ProtocolError ? error : { code: -32603, message: String(error) };
        move(task, "failed", { error: { code, message } });
      },
    );
    const { detail: _none, answered: _unset, work: _work, ...created } = task;
    return { resultType: "task", ...created };
  };

  const install = (server: Server) => {
    // tasks/get and tasks/cancel are 2025 methods the 2026-07-28 era dropped: the SDK serves them there only with
    // schemas of their own (its isExtensionReusedRequestMethod).
    server.setRequestHandler("tasks/get", { params: anyParams }, async (params, ctx) =>
      view(owned(params, ctx, "tasks/get")),
    );
    server.setRequestHandler("tasks/update", { params: anyParams }, async (params, ctx) => {
      // The SDK lifts the MRTR member `inputResponses` out of params into the request's context.
      const responses = (ctx.mcpReq.inputResponses ?? {}) as Params;
      const task = owned({ ...params, inputResponses: responses }, ctx, "tasks/update");
      if (task.status === "input_required") task.answered?.(responses);
      return {};
    });
    server.setRequestHandler("tasks/cancel", { params: anyParams }, async (params, ctx) => {
      const task = owned(params, ctx, "tasks/cancel");
      move(task, "cancelled");
      task.work.abort();
      return {};
    });
  };
  /**
   * tasks.md "Task Status Notifications": a `subscriptions/listen` request that names `taskIds` (the SDK's listen
   * router knows only the core filter, so the fixture serves such a stream itself, the core members included from
   * `bus`). Its acknowledgement names the known tasks it agreed to, and each status change of one is a
   * `notifications/tasks` carrying the DetailedTask, as tasks/get would return it then. A client that did not declare
   * the extension gets -32021.
   */
  const listen = (req: Request, res: Response, bus: ServerEventBus) => {
    const { id, params } = req.body as { id: string | number; params: { notifications: Params; _meta?: Params } };
    if (!declared(params._meta)) {
      const error = missingTasksCapability("subscriptions/listen");
      res
        .status(400)
        .json({ jsonrpc: "2.0", id, error: { code: error.code, message: error.message, data: error.data } });
      return;
    }
    const { taskIds: asked, ...core } = params.notifications;
    const taskIds = (asked as string[]).filter((taskId) => tasks.has(taskId));
    state.listens.push(taskIds);
    const stamp = { [SUBSCRIPTION_ID_META_KEY]: id };
    const send = (method: string, sent: Params) =>
      res.write(
        `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method, params: { ...sent, _meta: stamp } })}\n\n`,
      );
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    send("notifications/subscriptions/acknowledged", { notifications: { ...core, taskIds } });
    const follow = (task: StoredTask) => {
      if (taskIds.includes(task.taskId)) send("notifications/tasks", view(task));
    };
    followers.add(follow);
    const unsubscribe = bus.subscribe((event: ServerEvent) => {
      const [member, method] = CORE_EVENTS[event.kind];
      const uris = core.resourceSubscriptions as string[] | undefined;
      if (event.kind === "resource_updated" ? uris?.includes(event.uri) : core[member] === true) {
        send(method, event.kind === "resource_updated" ? { uri: event.uri } : {});
      }
    });
    res.on("close", () => {
      followers.delete(follow);
      unsubscribe();
    });
  };
  /** Whether a request is a listen request the fixture serves itself (see `listen`). */
  const listens = (body: unknown) => {
    const request = body as { method?: string; params?: { notifications?: Params } } | undefined;
    return request?.method === "subscriptions/listen" && Array.isArray(request.params?.notifications?.taskIds);
  };
  return { start, install, listen, listens, state };
}

/**
 * The fixture's tool `report` and the extension's methods. `report` (`topic`; `ask`: asks the client for a name
 * first; `fail`: ends in a JSON-RPC error; `requireTask`: refuses a client without the extension; `misbehave`:
 * makes a task for a client without the extension too, as MCP forbids; `ms`: how long it works, 50 by default)
 * answers a request that declared the extension with a CreateTaskResult, and any other with its result at once (or,
 * with `requireTask`, the -32021 error). A completed report links `memo://report/<topic>`.
 */
export function tasksExtension() {
  const engine = taskEngine();
  const reportResult = (topic: string, by?: string) => ({
    content: [
      { type: "resource_link", uri: `memo://report/${topic}`, name: `report on ${topic}` },
      { type: "text", text: by ? `Report on ${topic} for ${by}` : `Report on ${topic}` },
    ],
    isError: false,
  });
  const tool: Tool = {
    name: "report",
    description: "Writes a report, as a task for a client that supports tasks.",
    inputSchema: { type: "object", properties: { topic: { type: "string" } } },
  };
  const call = (args: Params, ctx: ServerContext): Params => {
    const topic = String(args.topic ?? "nothing");
    if (!declaresTasks(ctx) && !args.misbehave) {
      if (args.requireTask) throw missingTasksCapability("report");
      return reportResult(topic);
    }
    return engine.start(async (task) => {
      await sleep(Number(args.ms ?? 50), undefined, { signal: task.signal });
      if (args.fail) throw new ProtocolError(ProtocolErrorCode.InternalError, "The archive is offline");
      if (!args.ask) return reportResult(topic);
      const { name } = await task.ask({
        name: {
          method: "elicitation/create",
          params: {
            mode: "form",
            message: "Who is the report for?",
            requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
          },
        },
      });
      return reportResult(topic, (name as { content?: { name?: string } } | undefined)?.content?.name);
    });
  };
  return { ...engine, tool, call };
}

/** The core filter member and notification of each change event. */
const CORE_EVENTS: Record<ServerEvent["kind"], [string, string]> = {
  tools_list_changed: ["toolsListChanged", "notifications/tools/list_changed"],
  prompts_list_changed: ["promptsListChanged", "notifications/prompts/list_changed"],
  resources_list_changed: ["resourcesListChanged", "notifications/resources/list_changed"],
  resource_updated: ["resourceSubscriptions", "notifications/resources/updated"],
};
