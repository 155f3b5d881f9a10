import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "@modelcontextprotocol/node";
import type { createMcpHandler } from "@modelcontextprotocol/server";
import express, { type Express } from "express";

/** An app listening on 127.0.0.1 (a free port): its base URL, and a close that ends kept-alive connections too. */
export async function listenOnLoopback(app: Express): Promise<{ base: string; close(): Promise<void> }> {
  const http: Server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => http.once("listening", () => resolve()));
  return {
    base: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/**
 * An MCP handler (the SDK v2's createMcpHandler: both eras on one endpoint) served at `/mcp` of a loopback app:
 * its URL, and a close that ends the handler too.
 */
export async function serveMcpOnLoopback(
  handler: ReturnType<typeof createMcpHandler>,
): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.use(express.json());
  const node = toNodeHandler(handler);
  app.all("/mcp", (req, res) => void node(req, res, req.body));
  const { base, close } = await listenOnLoopback(app);
  return { url: `${base}/mcp`, close: async () => Promise.all([handler.close(), close()]).then(() => undefined) };
}
