import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import express from "express";

export interface QuickTaskUpstream {
  /** The MCP endpoint (MCP 2025-11-25, stateless Streamable HTTP with SSE responses). */
  url: string;
  close(): Promise<void>;
}

/**
 * A 2025-11-25 upstream with tasks whose one tool, `quick` (task-augmented calls only), finishes its task before it
 * answers the call: it announces the task `completed` (`notifications/tasks/status`, on the call's stream) and then
 * answers with the task as created, `working`. What a fast task looks like to the gateway: the status arrives before
 * the call that created the task is recorded.
 */
export async function startQuickTaskUpstream(): Promise<QuickTaskUpstream> {
  const mcpServer = () => {
    const server = new Server(
      { name: "quick-task-upstream", version: "1.0.0" },
      { capabilities: { tools: {}, tasks: { requests: { tools: { call: {} } } } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        {
          name: "quick",
          description: "A task that is done before the call is answered.",
          inputSchema: { type: "object" },
          execution: { taskSupport: "required" },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (_request, extra) => {
      const now = new Date().toISOString();
      const task = { taskId: randomUUID(), createdAt: now, lastUpdatedAt: now, ttl: 60_000 };
      await extra.sendNotification({
        method: "notifications/tasks/status",
        params: { ...task, status: "completed" },
      });
      return { task: { ...task, status: "working" } };
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
  const httpServer = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => httpServer.once("listening", resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
