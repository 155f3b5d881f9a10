import {
  type ClientCapabilities,
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  type ServerCapabilities,
} from "@modelcontextprotocol/server";
import { UpstreamFailure } from "../runtimes/pool.ts";
import { withoutMetaKey } from "./meta.ts";

type Params = Record<string, unknown>;

/**
 * Tasks across eras, both ways: a 2026-07-28 client that declares the Tasks extension (`io.modelcontextprotocol/tasks`,
 * SEP-2663; ext-tasks specification/draft/tasks.md) gets the tasks of a 2025-11-25 upstream's core tasks (MCP
 * 2025-11-25 basic/utilities/tasks) in the extension's shapes, and a 2025 client gets the extension's tasks of a
 * 2026-07-28 upstream as core tasks. What stays the same: the statuses (but for a tool error, see coreTask), the
 * task id.
 */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** Whether a request's capabilities declare the Tasks extension (tasks.md "Capability Negotiation": per request). */
export function declaresTasksExtension(capabilities: ClientCapabilities | undefined): boolean {
  const extensions = (capabilities as { extensions?: Params } | undefined)?.extensions;
  return extensions?.[TASKS_EXTENSION] !== undefined;
}

/**
 * The extensions an upstream offers a 2026-07-28 client through the gateway: its own, and the Tasks extension for
 * a 2025 upstream whose tool calls can be tasks (`tasks.requests.tools.call`), which the gateway translates.
 */
export function extensionsOffered(capabilities: ServerCapabilities, modern: boolean): Params | undefined {
  const { extensions, tasks } = capabilities as { extensions?: Params; tasks?: ServerCapabilities["tasks"] };
  if (modern || !tasks?.requests?.tools?.call) return extensions;
  return { ...extensions, [TASKS_EXTENSION]: {} };
}

/**
 * Whether a 2025 client's core tasks (a task-augmented tools/call, tasks/get, tasks/result, tasks/cancel) of this
 * upstream go through the Tasks extension: a 2026-07-28 upstream that offers it.
 */
export function coreTasksViaExtension({ capabilities, modern }: { capabilities: ServerCapabilities; modern: boolean }) {
  return modern && (capabilities as { extensions?: Params }).extensions?.[TASKS_EXTENSION] !== undefined;
}

/**
 * The core `tasks` capability an upstream offers a 2025 client through the gateway: its own, and for a 2026-07-28
 * upstream with the Tasks extension, task-augmented tools/call and tasks/cancel. Not tasks/list, which the
 * extension does not have.
 */
export function tasksOffered(described: { capabilities: ServerCapabilities; modern: boolean }): Params | undefined {
  if (!coreTasksViaExtension(described)) return described.capabilities.tasks as Params | undefined;
  return { cancel: {}, requests: { tools: { call: {} } } };
}

/**
 * A client's capabilities with the Tasks extension declared: how the gateway asks a 2026-07-28 upstream on a 2025
 * client's behalf (the extension is declared per request, and its server answers tasks only to a declaring one).
 */
export function declaringTasksExtension(capabilities: ClientCapabilities | undefined): ClientCapabilities {
  const extensions = (capabilities as { extensions?: Params } | undefined)?.extensions;
  return { ...capabilities, extensions: { ...extensions, [TASKS_EXTENSION]: {} } } as ClientCapabilities;
}

/**
 * A 2026-07-28 upstream's tool as a 2025 client sees it: one the client may call as a task (`execution.taskSupport`
 * "optional"), since with the extension the server decides per call whether it makes a task, and never requires
 * one of a declaring client. A tool that says otherwise itself keeps its word.
 */
export function coreTaskTool(tool: Params): Params {
  const execution = tool.execution as Params | undefined;
  if (execution?.taskSupport !== undefined) return tool;
  return { ...tool, execution: { ...execution, taskSupport: "optional" } };
}

/**
 * Whether a 2025 upstream's tool runs as a task for such a client: only when its listing says it must
 * (`execution.taskSupport` "required"), which a plain call cannot run. An "optional" one is called plainly: a 2025
 * task hands its requests (elicitation, sampling) to the client only on its tasks/result stream, which the
 * extension has no place for, so a task that asks would wait for ever; called plainly, its requests become
 * `input_required` rounds as any call's do.
 */
export function runsAsTask(tool: Params): boolean {
  return (tool.execution as Params | undefined)?.taskSupport === "required";
}

/**
 * A 2025 task as the extension's Task: the same members, but its `ttl` and `pollInterval` (milliseconds) are
 * named `ttlMs` and `pollIntervalMs`.
 */
export function extensionTask(task: Params): Params {
  const { ttl, pollInterval, ...rest } = task;
  return {
    ...rest,
    ...(ttl !== undefined ? { ttlMs: ttl } : {}),
    ...(pollInterval !== undefined ? { pollIntervalMs: pollInterval } : {}),
  };
}

/**
 * The extension's Task (a DetailedTask of tasks/get, or a CreateTaskResult) as a 2025 Task: `ttlMs` and
 * `pollIntervalMs` named `ttl` and `pollInterval`, without the outcome and input requests 2025 delivers only through
 * tasks/result, and `failed` for a completed tool call whose result is a tool error (MCP 2025-11-25 "Task Status";
 * the extension keeps `failed` for JSON-RPC errors).
 */
export function coreTask(task: Params): Params {
  const {
    ttlMs,
    pollIntervalMs,
    resultType: _resultType,
    result,
    error: _error,
    inputRequests: _asked,
    ...rest
  } = task;
  const toolError = task.status === "completed" && (result as Params | undefined)?.isError === true;
  return {
    ...rest,
    ...(toolError ? { status: "failed" } : {}),
    ttl: ttlMs ?? null,
    ...(pollIntervalMs !== undefined ? { pollInterval: pollIntervalMs } : {}),
  };
}

/** The statuses a task never leaves (both eras). */
export const TERMINAL_TASK_STATUSES = new Set(["completed", "failed", "cancelled"]);

/**
 * What 2025's tasks/result answers for an ended task of the extension (MCP 2025-11-25 "Result Retrieval": what the
 * request would have returned): its inline result with the related-task `_meta` 2025 requires there, or its
 * JSON-RPC error, thrown. A cancelled task has neither: an error that says so.
 */
export function coreTaskOutcome(task: Params): Params {
  if (task.status === "completed") {
    const result = task.result as Params;
    const meta = { ...(result._meta as Params | undefined), [RELATED_TASK_META_KEY]: { taskId: task.taskId } };
    return { ...result, _meta: meta };
  }
  if (task.status === "failed") {
    const { code, message, data } = task.error as Params;
    throw new ProtocolError(
      Number(code ?? ProtocolErrorCode.InternalError),
      String(message ?? "The task failed."),
      data,
    );
  }
  throw new ProtocolError(
    ProtocolErrorCode.InvalidRequest,
    `Task ${String(task.taskId)} was cancelled: it has no result.`,
  );
}

/**
 * What a 2025 client's task-augmented call gets from a 2026-07-28 upstream with the extension: its CreateTaskResult
 * as 2025's (`{ task }`); a result the upstream answered at once (the server decides, with the extension) as a task
 * of the gateway's own, already ended and named by the call's record (`recordId`): its outcome is the record's.
 */
export function coreCreateTaskResult(result: Params, recordId: string): Params {
  if (result.resultType !== "task") {
    const now = new Date().toISOString();
    return { task: heldTask(recordId, result.isError === true ? "failed" : "completed", now, now) };
  }
  const { resultType: _task, _meta, ...task } = result;
  return { ...(_meta ? { _meta } : {}), task: coreTask(task) };
}

/** A task of the gateway's own (see coreCreateTaskResult): it ended as it was created, and lasts as its record. */
export function heldTask(taskId: string, status: string, createdAt: string, lastUpdatedAt: string): Params {
  return { taskId, status, createdAt, lastUpdatedAt, ttl: null };
}

/**
 * A 2025 CreateTaskResult (`{ task }`) as the extension's (tasks.md "Task Creation": `resultType: "task"`, the
 * task's members at the top level); a result without a task (the upstream ran the call itself) as it came.
 */
export function extensionCreateTaskResult(result: Params): Params {
  const { task, ...rest } = result;
  if (!task || typeof task !== "object") return result;
  return { ...rest, ...extensionTask(task as Params), resultType: "task" };
}

/**
 * The JSON-RPC error a 2025 task's `tasks/result` answered with, as a failed task's `error` (tasks.md "Task
 * Execution Errors"); undefined for a failure of the gateway or the connection, which says nothing of the task.
 */
export function taskErrorOf(error: unknown): Params | undefined {
  if (!(error instanceof UpstreamFailure) || error.code !== "upstream_error") return undefined;
  return {
    code: error.rpcCode ?? -32603,
    message: error.message,
    ...(error.rpcData !== undefined ? { data: error.rpcData } : {}),
  };
}

/** The statuses of a 2025 task whose tasks/result answers at once, with its outcome. */
export const LEGACY_ENDED = new Set(["completed", "failed"]);

/**
 * How a 2025 task that ended (LEGACY_ENDED) turned out, from its tasks/result (`result`), in the extension's terms
 * (tasks.md "Task Polling" carries the outcome inline): a result makes it `completed` (2025 ends a tool error's
 * task `failed`; the extension keeps `failed` for JSON-RPC errors, "Task Execution Errors"), a JSON-RPC error
 * `failed` with that `error`. Any other failure (the gateway's, the connection's) says nothing of the task: thrown.
 */
export async function legacyTaskOutcome(
  result: Promise<Params>,
): Promise<{ status: "completed"; result: Params } | { status: "failed"; error: Params }> {
  try {
    return { status: "completed", result: withoutMetaKey(await result, RELATED_TASK_META_KEY) };
  } catch (error) {
    const taskError = taskErrorOf(error);
    if (!taskError) throw error;
    return { status: "failed", error: taskError };
  }
}
