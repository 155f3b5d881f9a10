import { createMcpHandler, Server } from "@modelcontextprotocol/server";
import { serveMcpOnLoopback } from "./loopback.ts";

export interface NamesUpstream {
  /** The MCP endpoint (2026-07-28, and stateless 2025 requests), served by the SDK v2's createMcpHandler. */
  url: string;
  close(): Promise<void>;
}

/** Two tool names longer than a key, with the same first 60 characters. */
export const LONG_NAMES = [`${"x".repeat(60)}.first`, `${"x".repeat(60)}.second`];
/** Tool and prompt names that are alike once made safe (`a_b`): only the first is a name MCP allows. */
export const ALIKE_NAMES = ["a.b", "a/b", "a:b"];
/** A resource every upstream of this kind lists. */
export const SHARED_WEB_URI = "https://example.test/shared";

const text = (s: string) => ({ content: [{ type: "text" as const, text: s }] });

/**
 * An upstream whose names and URIs a gateway must keep apart (SDK v2 server, both eras): tools `files.read`, the
 * alike and long names above and `touch` (announces an update of `notes://<who>/1`), each answering
 * `<who>:<its name>`; prompts of the alike names, answering the same,
 * whose argument completes to `<who>:<the prompt's name>`; resources `https://example.test/<who>/doc`,
 * `notes://<who>/1` and SHARED_WEB_URI, templates `notes://<who>/items/{id}` and `https://example.test/<who>/{id}`,
 * each read as `<who> read <uri>`. Two of them (different `who`) list the same shared URI.
 */
export async function startNamesUpstream(who: string): Promise<NamesUpstream> {
  const names = ["files.read", ...ALIKE_NAMES, ...LONG_NAMES, "touch"];
  const handler = createMcpHandler(() => {
    const server = new Server(
      { name: `names-${who}`, version: "1.0.0" },
      { capabilities: { tools: {}, prompts: {}, resources: { subscribe: true }, completions: {} } },
    );
    server.setRequestHandler("tools/list", async () => ({
      tools: names.map((name) => ({ name, inputSchema: { type: "object" as const } })),
    }));
    server.setRequestHandler("tools/call", async (request) => {
      if (request.params.name === "touch") handler.notify.resourceUpdated(`notes://${who}/1`);
      return text(`${who}:${request.params.name}`);
    });
    server.setRequestHandler("prompts/list", async () => ({
      prompts: ALIKE_NAMES.map((name) => ({ name, arguments: [{ name: "topic" }] })),
    }));
    server.setRequestHandler("prompts/get", async (request) => ({
      messages: [{ role: "user" as const, content: { type: "text" as const, text: `${who}:${request.params.name}` } }],
    }));
    server.setRequestHandler("completion/complete", async (request) => {
      const ref = request.params.ref as { name?: string; uri?: string };
      return { completion: { values: [`${who}:${ref.name ?? ref.uri}`] } };
    });
    server.setRequestHandler("resources/list", async () => ({
      resources: [`https://example.test/${who}/doc`, `notes://${who}/1`, SHARED_WEB_URI].map((uri) => ({
        uri,
        name: uri,
      })),
    }));
    server.setRequestHandler("resources/templates/list", async () => ({
      resourceTemplates: [`notes://${who}/items/{id}`, `https://example.test/${who}/{id}`].map((uriTemplate) => ({
        uriTemplate,
        name: uriTemplate,
      })),
    }));
    server.setRequestHandler("resources/read", async (request) => ({
      contents: [{ uri: request.params.uri, text: `${who} read ${request.params.uri}` }],
    }));
    server.setRequestHandler("resources/subscribe", async () => ({}));
    server.setRequestHandler("resources/unsubscribe", async () => ({}));
    return server;
  });
  return serveMcpOnLoopback(handler);
}
