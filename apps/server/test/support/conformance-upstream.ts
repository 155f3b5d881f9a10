import { randomUUID } from "node:crypto";
import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { type EventStore, StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  type GetPromptResult,
  isInitializeRequest,
  type JSONRPCMessage,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ReadResourceResult,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  type Tool,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

/**
 * The upstream the MCP conformance suite's 2025-11-25 run (`@modelcontextprotocol/conformance`,
 * `server --requirements 2025-11-25`) is run against, directly and through a session. The suite's reference server
 * (its examples/servers/typescript/everything-server.ts) is not in its npm package, so this is that server rewritten
 * on the SDK v1's low-level `Server` (the scenarios are 2025 ones: `initialize`, `Mcp-Session-Id`, SSE resumability):
 * every tool, resource and prompt the scenarios call, with the contents their checks look for. The tools, resources
 * and prompts the 2026-07-28 run calls too are exported for its fixture (conformance-upstream-2026.ts).
 */
export interface ConformanceUpstream {
  /** The Streamable HTTP endpoint on 127.0.0.1 (DNS rebinding protection on, as the suite requires). */
  url: string;
  close(): Promise<void>;
}

// A 1×1 red PNG and a minimal WAV: the suite checks only that image/audio content carries base64 data.
const IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

const text = (s: string) => ({ type: "text" as const, text: s });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const noArgs = { type: "object" as const, properties: {} };
const stringArg = (name: string, description: string) => ({
  type: "object" as const,
  properties: { [name]: { type: "string", description } },
  required: [name],
});

/**
 * The tools both eras' fixtures offer with the same answers (see {@link contentResult}): the suite's tools-call-*
 * and json-schema-2020-12 scenarios call them at every revision.
 */
export const contentTools = [
  { name: "test_simple_text", description: "Tests simple text content response", inputSchema: noArgs },
  { name: "test_image_content", description: "Tests image content response", inputSchema: noArgs },
  { name: "test_audio_content", description: "Tests audio content response", inputSchema: noArgs },
  { name: "test_embedded_resource", description: "Tests embedded resource content response", inputSchema: noArgs },
  { name: "test_multiple_content_types", description: "Tests text, image and resource content", inputSchema: noArgs },
  { name: "test_tool_with_progress", description: "Reports progress notifications", inputSchema: noArgs },
  { name: "test_error_handling", description: "Tests error response handling", inputSchema: noArgs },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features (SEP-1613)",
    // The suite checks that these 2020-12 keywords reach the client unchanged: $schema, $defs and
    // additionalProperties (SEP-1613), composition, conditionals and $anchor (SEP-2106, checked from 0.2).
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          $anchor: "addressDef",
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: {
        name: { type: "string" },
        address: { $ref: "#/$defs/address" },
        contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" },
        email: { type: "string" },
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
      // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword, in a schema nothing awaits.
      then: { required: ["phone"] },
      else: { required: ["email"] },
      additionalProperties: false,
    },
  },
] satisfies Tool[];

const tools: Tool[] = [
  ...contentTools,
  { name: "test_tool_with_logging", description: "Emits log messages during execution", inputSchema: noArgs },
  { name: "test_reconnection", description: "Closes its SSE stream mid-call (SEP-1699)", inputSchema: noArgs },
  {
    name: "test_sampling",
    description: "Asks the client for an LLM completion",
    inputSchema: stringArg("prompt", "The prompt"),
  },
  {
    name: "test_elicitation",
    description: "Asks the user for input",
    inputSchema: stringArg("message", "The message to show the user"),
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Elicitation with defaults (SEP-1034)",
    inputSchema: noArgs,
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Elicitation with enum variants (SEP-1330)",
    inputSchema: noArgs,
  },
];

/**
 * The answer of a {@link contentTools} tool other than test_tool_with_progress (whose notifications each era sends
 * its own way), or undefined for any other name.
 */
export function contentResult(name: string, args: Record<string, unknown>): CallToolResult | undefined {
  switch (name) {
    case "test_simple_text":
      return { content: [text("This is a simple text response for testing.")] };
    case "test_image_content":
      return { content: [{ type: "image", data: IMAGE, mimeType: "image/png" }] };
    case "test_audio_content":
      return { content: [{ type: "audio", data: AUDIO, mimeType: "audio/wav" }] };
    case "test_embedded_resource":
      return {
        content: [
          {
            type: "resource",
            resource: {
              uri: "test://embedded-resource",
              mimeType: "text/plain",
              text: "This is an embedded resource content.",
            },
          },
        ],
      };
    case "test_multiple_content_types":
      return {
        content: [
          text("Multiple content types test:"),
          { type: "image", data: IMAGE, mimeType: "image/png" },
          {
            type: "resource",
            resource: {
              uri: "test://mixed-content-resource",
              mimeType: "application/json",
              text: JSON.stringify({ test: "data", value: 123 }),
            },
          },
        ],
      };
    case "test_error_handling":
      return { isError: true, content: [text("This tool intentionally returns an error for testing")] };
    case "json_schema_2020_12_tool":
      return { content: [text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`)] };
    default:
      return undefined;
  }
}

/** test_tool_with_progress: three progress notifications 50 ms apart, then the token it reported against. */
export async function reportProgress(
  progressToken: string | number,
  notify: (params: {
    progressToken: string | number;
    progress: number;
    total: number;
    message: string;
  }) => Promise<void>,
): Promise<CallToolResult> {
  for (const progress of [0, 50, 100]) {
    if (progress > 0) await sleep(50);
    await notify({ progressToken, progress, total: 100, message: `Completed step ${progress} of 100` });
  }
  return { content: [text(String(progressToken))] };
}

const elicitations: Record<string, { message: string; requestedSchema: Record<string, unknown> }> = {
  test_elicitation_sep1034_defaults: {
    message: "Please review and update the form fields with defaults",
    requestedSchema: {
      type: "object",
      properties: {
        name: { type: "string", description: "User name", default: "John Doe" },
        age: { type: "integer", description: "User age", default: 30 },
        score: { type: "number", description: "User score", default: 95.5 },
        status: {
          type: "string",
          description: "User status",
          enum: ["active", "inactive", "pending"],
          default: "active",
        },
        verified: { type: "boolean", description: "Verification status", default: true },
      },
      required: [],
    },
  },
  test_elicitation_sep1330_enums: {
    message: "Please select options from the enum fields",
    requestedSchema: {
      type: "object",
      properties: {
        untitledSingle: { type: "string", description: "Select one option", enum: ["option1", "option2", "option3"] },
        titledSingle: {
          type: "string",
          description: "Select one option with titles",
          oneOf: [
            { const: "value1", title: "First Option" },
            { const: "value2", title: "Second Option" },
            { const: "value3", title: "Third Option" },
          ],
        },
        legacyEnum: {
          type: "string",
          description: "Select one option (legacy)",
          enum: ["opt1", "opt2", "opt3"],
          enumNames: ["Option One", "Option Two", "Option Three"],
        },
        untitledMulti: {
          type: "array",
          description: "Select multiple options",
          minItems: 1,
          maxItems: 3,
          items: { type: "string", enum: ["option1", "option2", "option3"] },
        },
        titledMulti: {
          type: "array",
          description: "Select multiple options with titles",
          minItems: 1,
          maxItems: 3,
          items: {
            anyOf: [
              { const: "value1", title: "First Choice" },
              { const: "value2", title: "Second Choice" },
              { const: "value3", title: "Third Choice" },
            ],
          },
        },
      },
      required: [],
    },
  },
};

const staticResources = {
  "test://static-text": {
    name: "static-text",
    mimeType: "text/plain",
    text: "This is the content of the static text resource.",
  },
  "test://static-binary": { name: "static-binary", mimeType: "image/png", blob: IMAGE },
  "test://watched-resource": { name: "watched-resource", mimeType: "text/plain", text: "Watched resource content" },
} as const;
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;
export const resources = Object.entries(staticResources).map(([uri, r]) => ({
  uri,
  name: r.name,
  mimeType: r.mimeType,
}));
export const resourceTemplates = [
  { uriTemplate: "test://template/{id}/data", name: "template", mimeType: "application/json" },
];

/** The contents of a resource (static or of the template), or undefined for a URI that names none. */
export function readResource(uri: string): ReadResourceResult | undefined {
  const id = TEMPLATE.exec(uri)?.[1];
  if (id !== undefined) {
    const data = { id, templateTest: true, data: `Data for ID: ${id}` };
    return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(data) }] };
  }
  const resource = staticResources[uri as keyof typeof staticResources];
  if (!resource) return undefined;
  const { name: _name, ...content } = resource;
  return { contents: [{ uri, ...content }] };
}

export const prompts = [
  { name: "test_simple_prompt", description: "A simple prompt without arguments" },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with required arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt that includes an embedded resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
  },
  { name: "test_prompt_with_image", description: "A prompt that includes image content" },
];

/** The messages of a prompt, or undefined for a name that names none. */
export function promptResult(name: string, args: Record<string, string>): GetPromptResult | undefined {
  switch (name) {
    case "test_simple_prompt":
      return { messages: [{ role: "user", content: text("This is a simple prompt for testing.") }] };
    case "test_prompt_with_arguments":
      return {
        messages: [{ role: "user", content: text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`) }],
      };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          {
            role: "user",
            content: {
              type: "resource",
              resource: {
                uri: args.resourceUri ?? "",
                mimeType: "text/plain",
                text: "Embedded resource content for testing.",
              },
            },
          },
          { role: "user", content: text("Please process the embedded resource above.") },
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [
          { role: "user", content: { type: "image", data: IMAGE, mimeType: "image/png" } },
          { role: "user", content: text("Please analyze the image above.") },
        ],
      };
    default:
      return undefined;
  }
}

/** Events by stream, for SEP-1699 resumption: a client that lost a stream replays it with Last-Event-ID. */
function memoryEventStore(): EventStore {
  const events: { id: string; streamId: string; message: JSONRPCMessage }[] = [];
  return {
    async storeEvent(streamId, message) {
      const id = `${streamId}::${String(events.length).padStart(8, "0")}`;
      events.push({ id, streamId, message });
      return id;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const streamId = lastEventId.split("::")[0] ?? "";
      for (const event of events) {
        if (event.streamId === streamId && event.id > lastEventId) await send(event.id, event.message);
      }
      return streamId;
    },
  };
}

function mcpServer(transport: () => StreamableHTTPServerTransport | undefined): Server {
  const server = new Server(
    { name: "conformance-upstream", version: "1.0.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { subscribe: true, listChanged: true },
        prompts: { listChanged: true },
        logging: {},
        completions: {},
      },
    },
  );
  const log = (data: string) =>
    server
      .sendLoggingMessage({ level: "info", logger: "conformance-upstream", data })
      .catch(() => undefined /* no client stream open: nobody to tell */);

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    switch (request.params.name) {
      case "test_tool_with_logging":
        for (const [i, data] of [
          "Tool execution started",
          "Tool processing data",
          "Tool execution completed",
        ].entries()) {
          if (i > 0) await sleep(50);
          await extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
        }
        return { content: [text("Tool with logging executed successfully")] };
      case "test_tool_with_progress":
        return reportProgress(extra._meta?.progressToken ?? 0, (params) =>
          extra.sendNotification({ method: "notifications/progress", params }),
        );
      case "test_reconnection":
        // Closes the call's SSE stream: the client must reconnect with Last-Event-ID to get the result.
        transport()?.closeSSEStream(extra.requestId);
        await sleep(100);
        return { content: [text("Reconnection test completed successfully.")] };
      case "test_sampling": {
        const result = await extra.sendRequest(
          {
            method: "sampling/createMessage",
            params: { messages: [{ role: "user", content: text(String(args.prompt)) }], maxTokens: 100 },
          },
          CreateMessageResultSchema,
        );
        const content = result.content as { text?: string };
        return { content: [text(`LLM response: ${content.text ?? "No response"}`)] };
      }
      case "test_elicitation":
      case "test_elicitation_sep1034_defaults":
      case "test_elicitation_sep1330_enums": {
        const params = elicitations[request.params.name] ?? {
          message: String(args.message),
          requestedSchema: {
            type: "object",
            properties: { response: { type: "string", description: "User's response" } },
            required: ["response"],
          },
        };
        const result = await extra.sendRequest({ method: "elicitation/create", params } as never, ElicitResultSchema);
        return {
          content: [text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`)],
        };
      }
      default: {
        const result = contentResult(request.params.name, args);
        if (!result) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
        return result;
      }
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const result = readResource(request.params.uri);
    if (!result) throw new McpError(ErrorCode.InvalidParams, `Resource not found: ${request.params.uri}`);
    return result;
  });
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    log(`Subscribed to resource: ${request.params.uri}`);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    log(`Unsubscribed from resource: ${request.params.uri}`);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const result = promptResult(request.params.name, request.params.arguments ?? {});
    if (!result) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
    return result;
  });

  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    log(`Log level set to: ${request.params.level}`);
    return {};
  });
  // The suite checks only that completion/complete answers in shape.
  server.setRequestHandler(CompleteRequestSchema, async () => ({
    completion: { values: [], total: 0, hasMore: false },
  }));
  return server;
}

/** Starts the fixture on a free 127.0.0.1 port (stateful Streamable HTTP, one MCP server per session). */
export async function startConformanceUpstream(): Promise<ConformanceUpstream> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  // createMcpExpressApp validates Host against localhost names: the suite's dns-rebinding-protection scenario.
  const app = createMcpExpressApp();

  app.post("/mcp", async (req, res) => {
    const sessionId = req.header("mcp-session-id");
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId || !isInitializeRequest(req.body)) {
        res.status(sessionId ? 404 : 400).json({
          jsonrpc: "2.0",
          error: { code: -32000, message: "Invalid or missing session ID" },
          id: null,
        });
        return;
      }
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: memoryEventStore(),
        // SEP-1699 resumability (priming event, `retry`, Last-Event-ID replay; the server-sse-polling scenario).
        retryInterval: 500,
        onsessioninitialized: (id) => void transports.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId) transports.delete(created.sessionId);
      };
      await mcpServer(() => created).connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, req.body);
  });
  const onSession = async (req: import("express").Request, res: import("express").Response) => {
    const transport = transports.get(req.header("mcp-session-id") ?? "");
    if (!transport) {
      res.status(400).send("Invalid or missing session ID");
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get("/mcp", onSession);
  app.delete("/mcp", onSession);

  const server: HttpServer = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: async () => {
      await Promise.all([...transports.values()].map((transport) => transport.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
