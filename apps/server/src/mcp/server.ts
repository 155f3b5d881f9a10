import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { Gateway } from "./gateway.ts";
import type { GatewaySession } from "./gateway-session.ts";

const sharedValidator = new AjvJsonSchemaValidator();

/**
 * The MCP server a client of the session talks to. `session` is read per request (the legacy SSE transport keeps
 * one server for a long-lived connection and must notice a deleted session).
 *
 * A call the upstream answers is passed through as is. A call that got no answer (timeout, upstream down or
 * crashed) is a tool result with `isError` true and the reason as text, so a model sees it; a JSON-RPC error of
 * the upstream is passed on as that error; an unknown key is an InvalidParams error.
 */
export function sessionMcpServer(
  gateway: Gateway,
  session: () => Promise<GatewaySession>,
  connectionId: string | null,
): Server {
  const server = new Server(
    { name: "toolplane-gateway", version: "0.1.0" },
    {
      capabilities: { tools: {} },
      instructions: "Tools of every provider of this Toolplane session.",
      // A server is built per stateless request; its default would build a new Ajv (with formats) each time.
      jsonSchemaValidator: sharedValidator,
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const { tools } = await gateway.tools(await session());
    return { tools: tools.map(({ key, tool }) => ({ ...tool, name: key })) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: input } = request.params;
    const outcome = await gateway.call(await session(), name, input, { transport: "mcp", connectionId });
    if (!outcome) throw new McpError(ErrorCode.InvalidParams, `Tool ${name} is not offered by this session.`);
    if (outcome.result) return outcome.result;
    const failure = outcome.failure;
    if (failure?.code === "upstream_error") {
      throw new McpError(failure.rpcCode ?? ErrorCode.InternalError, failure.message);
    }
    return {
      content: [{ type: "text", text: failure?.message ?? "The tool call failed." }],
      isError: true,
    };
  });
  return server;
}
