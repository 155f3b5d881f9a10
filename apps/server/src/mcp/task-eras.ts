import type { ClientCapabilities, ServerCapabilities } from "@modelcontextprotocol/server";
import { UpstreamFailure } from "../runtimes/pool.ts";

type Params = Record<string, unknown>;

/**
 * Tasks across eras: a 2026-07-28 client that declares the Tasks extension (`io.modelcontextprotocol/tasks`,
 * SEP-2663; ext-tasks specification/draft/tasks.md) gets the tasks of a 2025-11-25 upstream's core tasks (MCP
 * 2025-11-25 basic/utilities/tasks) in the extension's shapes. What stays the same: the statuses, the task id.
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
