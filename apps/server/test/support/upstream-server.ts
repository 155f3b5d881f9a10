import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  SetLevelRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import express from "express";

/** A tool name longer than 60 characters with characters a tool key cannot hold. */
export const LONG_TOOL_NAME = "report.generate/quarterly.summary.with.every.department.and.region.included";

export interface TestUpstream {
  /** The MCP endpoint (Streamable HTTP). */
  url: string;
  /** The Authorization header of every MCP request received, in order. */
  authorizations: (string | undefined)[];
  /** How many MCP sessions clients initialised. */
  initializations: number;
  /** The levels of the logging/setLevel requests received, in order. */
  logLevels: string[];
  /** Forgets every MCP session, as a restarted server would: requests with an old session id get a 404. */
  forgetSessions(): void;
  close(): Promise<void>;
}

const text = (s: string) => ({ content: [{ type: "text" as const, text: s }] });

/**
 * Our own upstream MCP server on 127.0.0.1 (stateful Streamable HTTP), with tools that exercise the gateway:
 * `echo` (collides with server-everything's), `whoami` (returns the Authorization header it received), `slow`
 * (answers after `ms`), `crash` (drops every connection mid-call), `fail` (a JSON-RPC error), `loose` and `malformed` (results with
 * members MCP does not define, and an invalid one) and a long name; and logging. `listDelayMs` makes its tools/list
 * that slow, `setLevelDelayMs` its logging/setLevel.
 */
export async function startTestUpstream(
  options: { listDelayMs?: number; setLevelDelayMs?: number } = {},
): Promise<TestUpstream> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const state = { authorizations: [] as (string | undefined)[], initializations: 0, logLevels: [] as string[] };
  const app = express();
  app.use(express.json());

  const mcpServer = () => {
    const server = new Server(
      { name: "test-upstream", version: "1.0.0" },
      { capabilities: { tools: {}, logging: {} } },
    );
    server.setRequestHandler(SetLevelRequestSchema, async (request) => {
      await new Promise((resolve) => setTimeout(resolve, options.setLevelDelayMs ?? 0));
      state.logLevels.push(request.params.level);
      return {};
    });
    server.setRequestHandler(ListToolsRequestSchema, async () => {
      await new Promise((resolve) => setTimeout(resolve, options.listDelayMs ?? 0));
      return {
        tools: [
          {
            name: "echo",
            description: "Echoes the message, marked as ours.",
            inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
          },
          { name: "whoami", description: "The Authorization header received.", inputSchema: { type: "object" } },
          {
            name: "slow",
            description: "Answers after ms milliseconds.",
            inputSchema: { type: "object", properties: { ms: { type: "number" } } },
          },
          { name: "crash", description: "Drops every connection.", inputSchema: { type: "object" } },
          { name: "fail", description: "Answers with a JSON-RPC error.", inputSchema: { type: "object" } },
          { name: LONG_TOOL_NAME, description: "A long name.", inputSchema: { type: "object" } },
          { name: "loose", description: "A result with members MCP does not define.", inputSchema: { type: "object" } },
          { name: "malformed", description: "A text block without text.", inputSchema: { type: "object" } },
        ],
      };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = request.params.arguments ?? {};
      switch (request.params.name) {
        case "echo":
          return text(`upstream: ${String(args.message)}`);
        case "whoami":
          return text(String(extra.requestInfo?.headers.authorization ?? "none"));
        case "slow":
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Number(args.ms ?? 0));
            extra.signal.addEventListener("abort", () => {
              clearTimeout(timer);
              resolve();
            });
          });
          return text("slept");
        case "crash":
          httpServer.closeAllConnections();
          return new Promise<never>(() => undefined);
        case "fail":
          throw new McpError(ErrorCode.InvalidParams, "fail always fails");
        // Results an SDK server of ours would not send, as other servers might: what a client gets from them.
        case "loose":
          return { content: [{ type: "text", text: "loose", color: "red" }], extra: { kept: true } };
        case "malformed":
          return { content: [{ type: "text" }] } as never;
        default:
          return text(`called ${request.params.name}`);
      }
    });
    return server;
  };

  app.post("/mcp", async (req, res) => {
    state.authorizations.push(req.headers.authorization);
    const sessionId = req.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId !== undefined || !isInitializeRequest(req.body)) {
        res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
        return;
      }
      state.initializations++;
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        enableJsonResponse: true,
        onsessioninitialized: (id) => {
          transports.set(id, created);
        },
      });
      transport = created;
      await mcpServer().connect(transport);
    }
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
    get authorizations() {
      return state.authorizations;
    },
    get initializations() {
      return state.initializations;
    },
    logLevels: state.logLevels,
    forgetSessions: () => transports.clear(),
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close()));
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
