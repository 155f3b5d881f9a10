/**
 * A stdio upstream MCP server of ours (run as `node --import tsx upstream-stdio.ts`): `echo` answers with its
 * process id, `crash` makes the process exit in the middle of the call.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "test-stdio-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "echo", description: "Answers with this process's id.", inputSchema: { type: "object" } },
    { name: "crash", description: "Exits mid-call.", inputSchema: { type: "object" } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  if (request.params.name === "crash") process.exit(1);
  return { content: [{ type: "text", text: `pid ${process.pid}` }] };
});
await server.connect(new StdioServerTransport());
