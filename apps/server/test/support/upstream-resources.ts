import { randomUUID } from "node:crypto";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Server as SdkV1Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  isInitializeRequest,
  ListResourcesRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { createMcpHandler, Server, type ServerCapabilities } from "@modelcontextprotocol/server";
import express from "express";
import { listenOnLoopback } from "./loopback.ts";

/** The capabilities an upstream of this file offers besides its resources and prompt. */
export interface Offers {
  completions?: boolean;
  subscribe?: boolean;
  logging?: boolean;
}

export interface ResourcesUpstream {
  /** The MCP endpoint (Streamable HTTP). */
  url: string;
  /** The method of every request it received, in order. */
  methods: string[];
  /** Announces an update of `uri` to every client it has, whatever they subscribed to (as MCP lets a server). */
  update(uri: string): Promise<void>;
  close(): Promise<void>;
}

/** The resource both upstreams list: a directory, whose files are its sub-resources. */
export const PROJECT_URI = "file:///project";

const capabilitiesOf = (offers: Offers): ServerCapabilities => ({
  resources: offers.subscribe ? { subscribe: true } : {},
  prompts: {},
  ...(offers.completions ? { completions: {} } : {}),
  ...(offers.logging ? { logging: {} } : {}),
});

/** An app that records the method of every MCP request it receives (its JSON body parsed). */
function recordingApp(methods: string[]) {
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    if (typeof req.body?.method === "string") methods.push(req.body.method);
    next();
  });
  return app;
}

/**
 * An upstream of the current revision (2026-07-28), the SDK v2's createMcpHandler, offering `offers` and no more: a
 * resource (PROJECT_URI), a resource template and a prompt `review`, whose argument completes when it offers
 * completions; updates are announced on its `subscriptions/listen` streams (the SDK's: exact URIs).
 */
export async function startModernResources(offers: Offers): Promise<ResourcesUpstream> {
  const handler = createMcpHandler(() => {
    const server = new Server({ name: "resources-modern", version: "1.0.0" }, { capabilities: capabilitiesOf(offers) });
    server.setRequestHandler("resources/list", async () => ({ resources: [{ uri: PROJECT_URI, name: "project" }] }));
    server.setRequestHandler("resources/templates/list", async () => ({
      resourceTemplates: [{ uriTemplate: `${PROJECT_URI}/{path}`, name: "project file" }],
    }));
    server.setRequestHandler("resources/read", async (request) => ({
      contents: [{ uri: request.params.uri, text: `contents of ${request.params.uri}` }],
    }));
    server.setRequestHandler("prompts/list", async () => ({
      prompts: [{ name: "review", arguments: [{ name: "path", required: true }] }],
    }));
    server.setRequestHandler("prompts/get", async (request) => ({
      messages: [{ role: "user", content: { type: "text", text: `Review ${request.params.arguments?.path}.` } }],
    }));
    if (offers.completions) {
      server.setRequestHandler("completion/complete", async () => ({ completion: { values: ["src/a.ts"] } }));
    }
    return server;
  });
  const methods: string[] = [];
  const app = recordingApp(methods);
  const node = toNodeHandler(handler);
  app.all("/mcp", (req, res) => void node(req, res, req.body));
  const { base, close } = await listenOnLoopback(app);
  return {
    url: `${base}/mcp`,
    methods,
    update: async (uri) => handler.notify.resourceUpdated(uri),
    close: async () => {
      await handler.close();
      await close();
    },
  };
}

/**
 * An upstream of the 2025 revisions (the SDK v1, stateful Streamable HTTP with its GET stream) listing a resource
 * (PROJECT_URI), and taking subscriptions when it offers them; `update` announces on every session's GET stream.
 */
export async function startLegacyResources(offers: Offers): Promise<ResourcesUpstream> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const servers: SdkV1Server[] = [];
  const methods: string[] = [];
  const app = recordingApp(methods);
  const mcpServer = () => {
    const server = new SdkV1Server(
      { name: "resources-legacy", version: "1.0.0" },
      { capabilities: capabilitiesOf(offers) },
    );
    server.setRequestHandler(ListResourcesRequestSchema, async () => ({
      resources: [{ uri: PROJECT_URI, name: "project" }],
    }));
    if (offers.subscribe) {
      server.setRequestHandler(SubscribeRequestSchema, async () => ({}));
      server.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));
    }
    servers.push(server);
    return server;
  };
  app.all("/mcp", async (req, res) => {
    const sessionId = req.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (req.method !== "POST" || !isInitializeRequest(req.body)) {
        res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => {
          transports.set(id, created);
        },
      });
      transport = created;
      await mcpServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
  const { base, close } = await listenOnLoopback(app);
  return {
    url: `${base}/mcp`,
    methods,
    update: async (uri) => {
      await Promise.all(servers.map((server) => server.sendResourceUpdated({ uri }).catch(() => undefined)));
    },
    close: async () => {
      await Promise.all(servers.map((server) => server.close()));
      await close();
    },
  };
}
