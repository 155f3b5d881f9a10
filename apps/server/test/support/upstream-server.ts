import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListRootsResultSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type RequestId,
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
  /** With `asking`: the ids of the requests it saw cancelled while it waited on them. */
  cancelled: RequestId[];
  close(): Promise<void>;
}

const text = (s: string) => ({ content: [{ type: "text" as const, text: s }] });

/**
 * Our own upstream MCP server on 127.0.0.1 (stateful Streamable HTTP), with tools that exercise the gateway:
 * `echo` (collides with server-everything's), `whoami` (returns the Authorization header it received), `slow`
 * (answers after `ms`), `crash` (drops every connection mid-call), `fail` (a JSON-RPC error), `loose` and `malformed` (results with
 * members MCP does not define, and an invalid one) and a long name; and logging. `listDelayMs` makes its tools/list
 * that slow, `setLevelDelayMs` its logging/setLevel. `asking` adds requests that put questions to the client while
 * they run, as 2025 servers do (server→client requests on the request's SSE stream): see askingHandlers.
 */
export async function startTestUpstream(
  options: { listDelayMs?: number; setLevelDelayMs?: number; asking?: boolean } = {},
): Promise<TestUpstream> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const state = {
    authorizations: [] as (string | undefined)[],
    initializations: 0,
    logLevels: [] as string[],
    cancelled: [] as RequestId[],
  };
  const app = express();
  app.use(express.json());

  const mcpServer = () => {
    const server = new Server(
      { name: "test-upstream", version: "1.0.0" },
      {
        capabilities: {
          tools: {},
          logging: {},
          ...(options.asking ? { prompts: {}, resources: {}, completions: {} } : {}),
        },
      },
    );
    if (options.asking) askingHandlers(server, state.cancelled);
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
          ...(options.asking ? [ASK_TOOL] : []),
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
        case "ask":
          return ask(extra, state.cancelled);
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
        // A request's server→client requests go on its SSE stream; a JSON response has none.
        enableJsonResponse: !options.asking,
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
    cancelled: state.cancelled,
    forgetSessions: () => transports.clear(),
    close: async () => {
      await Promise.all([...transports.values()].map((t) => t.close()));
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}

/** What a request handler of the SDK v1 server gets besides the request. */
type Extra = Parameters<Parameters<Server["setRequestHandler"]>[1]>[1];

const ASK_TOOL = {
  name: "ask",
  description: "Asks the client for a name (elicitation), then answers with it.",
  inputSchema: { type: "object" },
};
const NAME_SCHEMA = { type: "object" as const, properties: { name: { type: "string" as const } }, required: ["name"] };

/** The name the client gives when asked (elicitation), or what it did instead. */
async function askName(extra: Extra, message: string): Promise<string> {
  const answer = await extra.sendRequest(
    { method: "elicitation/create", params: { message, requestedSchema: NAME_SCHEMA } },
    ElicitResultSchema,
  );
  return answer.action === "accept" ? String(answer.content?.name) : answer.action;
}

/** Resolves when the request is cancelled, recording it. */
function untilCancelled(extra: Extra, cancelled: RequestId[]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      cancelled.push(extra.requestId);
      resolve();
    };
    if (extra.signal.aborted) done();
    else extra.signal.addEventListener("abort", done, { once: true });
  });
}

/** The `ask` tool: the client's name, asked by elicitation (a question never answered waits until cancelled). */
async function ask(extra: Extra, cancelled: RequestId[]) {
  const name = await Promise.race([
    askName(extra, "Who is asking?"),
    untilCancelled(extra, cancelled).then(() => null),
  ]);
  return text(name === null ? "cancelled while asking" : `asked ${name}`);
}

/**
 * Requests besides tools/call that put questions to the client while they run: prompts/get `sign-off` asks a name
 * (elicitation) then a closing line (sampling); resources/read `ask://roots` lists the client's roots; and
 * completion/complete asks a name, which MCP 2026-07-28 does not let a completion carry.
 */
function askingHandlers(server: Server, cancelled: RequestId[]): void {
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: [{ name: "sign-off", description: "Signs off as the client's user.", arguments: [{ name: "style" }] }],
  }));
  server.setRequestHandler(GetPromptRequestSchema, async (request, extra) => {
    const name = await Promise.race([
      askName(extra, "Sign off as?"),
      untilCancelled(extra, cancelled).then(() => null),
    ]);
    if (name === null) return { messages: [] };
    const closing = await extra.sendRequest(
      {
        method: "sampling/createMessage",
        params: {
          messages: [{ role: "user", content: { type: "text", text: `A ${request.params.arguments?.style} closing` } }],
          maxTokens: 20,
        },
      },
      CreateMessageResultSchema,
    );
    const line = closing.content.type === "text" ? closing.content.text : "?";
    return { messages: [{ role: "user", content: { type: "text", text: `${line}, ${name}` } }] };
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: [{ uri: "ask://roots", name: "roots", mimeType: "text/plain" }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { roots } = await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema);
    const listed = roots.map((root) => root.uri).join(" ");
    return { contents: [{ uri: request.params.uri, mimeType: "text/plain", text: `roots: ${listed}` }] };
  });
  server.setRequestHandler(CompleteRequestSchema, async (_request, extra) => ({
    completion: { values: [await askName(extra, "Complete for whom?")] },
  }));
}
