import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Task,
} from "@modelcontextprotocol/sdk/types.js";
import express from "express";
import { listenOnLoopback } from "./loopback.ts";

export interface LegacyTasksUpstream {
  /** The MCP endpoint (MCP 2025-11-25, stateless Streamable HTTP with SSE responses). */
  url: string;
  close(): Promise<void>;
}

/** The JSON-RPC error the task of `breaks` ends with, as its tasks/result answers it. */
export const BROKEN_TASK_ERROR = { code: ErrorCode.InternalError, message: "The kiln cracked", data: { kiln: 3 } };

/** A task of the fixture and how it ends: its tool's result, or the JSON-RPC error of the call. */
interface StoredTask {
  task: Task;
  outcome?: { result: CallToolResult } | { error: typeof BROKEN_TASK_ERROR };
}

/**
 * A 2025-11-25 upstream with core tasks (MCP 2025-11-25 basic/utilities/tasks), written with the SDK v1's low-level
 * server so that each task ends as a test needs; its tools run only as tasks (`execution.taskSupport` "required"):
 * - `quick` finishes its task before it answers the call: it announces the task `completed`
 *   (`notifications/tasks/status`, on the call's stream) and then answers with the task as created, `working`. What
 *   a fast task looks like to the gateway: the status arrives before the call that created the task is recorded;
 * - `breaks` ends its task `failed` with a JSON-RPC error (BROKEN_TASK_ERROR), which tasks/result answers ("Result
 *   Retrieval": exactly what the underlying request would have returned);
 * - `regrets` ends its task `failed` with a tool result that has `isError` (2025 ends such a task `failed`), which
 *   tasks/result answers.
 * `breaks` and `regrets` end their task 50 ms after the call; tasks/get and tasks/result serve every task.
 */
export async function startLegacyTasksUpstream(): Promise<LegacyTasksUpstream> {
  const tasks = new Map<string, StoredTask>();
  const owned = (taskId: string) => {
    const stored = tasks.get(taskId);
    if (!stored) throw new McpError(ErrorCode.InvalidParams, "Failed to retrieve task: Task not found");
    return stored;
  };
  const end = (stored: StoredTask, outcome: NonNullable<StoredTask["outcome"]>) => {
    Object.assign(stored, { outcome });
    Object.assign(stored.task, { status: "failed", lastUpdatedAt: new Date().toISOString() });
  };
  const mcpServer = () => {
    const server = new Server(
      { name: "legacy-tasks-upstream", version: "1.0.0" },
      { capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } } },
    );
    const taskTool = (name: string, description: string) => ({
      name,
      description,
      inputSchema: { type: "object" as const },
      execution: { taskSupport: "required" as const },
    });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        taskTool("quick", "A task that is done before the call is answered."),
        taskTool("breaks", "A task that fails with a JSON-RPC error."),
        taskTool("regrets", "A task whose tool result is an error."),
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const now = new Date().toISOString();
      const task: Task = {
        taskId: randomUUID(),
        status: "working",
        createdAt: now,
        lastUpdatedAt: now,
        ttl: 60_000,
        pollInterval: 20,
      };
      const stored: StoredTask = { task };
      tasks.set(task.taskId, stored);
      if (request.params.name === "quick") {
        Object.assign(task, { status: "completed" });
        stored.outcome = { result: { content: [{ type: "text", text: "quick" }] } };
        await extra.sendNotification({ method: "notifications/tasks/status", params: { ...task } });
        return { task: { ...task, status: "working" } };
      }
      setTimeout(() => {
        if (request.params.name === "breaks") return end(stored, { error: BROKEN_TASK_ERROR });
        end(stored, { result: { content: [{ type: "text", text: "The glaze ran" }], isError: true } });
      }, 50);
      return { task: { ...task } };
    });
    server.setRequestHandler(GetTaskRequestSchema, async (request) => ({ ...owned(request.params.taskId).task }));
    // The tests ask for a task's outcome only once it ended; a 2025 receiver would block until then.
    server.setRequestHandler(GetTaskPayloadRequestSchema, async (request) => {
      const { outcome } = owned(request.params.taskId);
      if (!outcome)
        throw new McpError(ErrorCode.InvalidRequest, "The fixture answers tasks/result once the task ended");
      if ("error" in outcome) throw new McpError(outcome.error.code, outcome.error.message, outcome.error.data);
      const related = { "io.modelcontextprotocol/related-task": { taskId: request.params.taskId } };
      return { ...outcome.result, _meta: related };
    });
    return server;
  };
  const app = express();
  app.use(express.json());
  app.post("/mcp", async (req, res) => {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await mcpServer().connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.all("/mcp", (_req, res) => {
    res.status(405).end();
  });
  const { base, close } = await listenOnLoopback(app);
  return { url: `${base}/mcp`, close };
}
