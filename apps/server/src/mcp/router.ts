import { createHash, timingSafeEqual } from "node:crypto";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ApiError } from "@toolplane/server-stubs";
import { type Request, Router } from "express";
import type { AppDeps } from "../app.ts";
import { ApiKeyVerifier } from "../auth/api-keys.ts";
import { newId } from "../lib/ids.ts";
import { gatewaySessionLoader } from "../resources/sessions/gateway-view.ts";
import { Gateway } from "./gateway.ts";
import type { GatewaySession, LoadGatewaySession } from "./gateway-session.ts";
import { sessionMcpServer } from "./server.ts";

const API_KEY_PREFIX = "tp_";
const sha256 = (s: string) => createHash("sha256").update(s).digest();

/**
 * Who may use a session's MCP endpoint: a bearer API key of the session's instance (a key of another instance sees
 * a 404, as for any id of another tenant) or the session's own secret (compared by SHA-256 in constant time; a
 * wrong one is a 401). A session that does not exist or was deleted is a 404; an archived one is a 410.
 */
export class SessionAccess {
  private readonly keys: ApiKeyVerifier;

  constructor(
    deps: Pick<AppDeps, "db">,
    private readonly load: LoadGatewaySession,
  ) {
    this.keys = new ApiKeyVerifier(deps.db);
  }

  async authorize(sessionId: string, authorization: string | undefined): Promise<GatewaySession> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token) {
      throw new ApiError("unauthorized", "Send Authorization: Bearer <session secret or API key>.");
    }
    const instanceId = token.startsWith(API_KEY_PREFIX) ? (await this.keys.verify(authorization)).instanceId : null;
    const session = await this.load(sessionId);
    if (!session || (instanceId !== null && session.instanceId !== instanceId) || session.status === "deleted") {
      throw ApiError.notFound("session", sessionId);
    }
    const expected = Buffer.from(session.secretHash, "hex");
    const given = sha256(token);
    if (instanceId === null && (given.length !== expected.length || !timingSafeEqual(given, expected))) {
      throw new ApiError("unauthorized", "The session secret is not valid for this session.");
    }
    if (session.status !== "active") {
      throw new ApiError("gone", `Session ${sessionId} is ${session.status}; only active sessions are served.`, {
        entity: "session",
      });
    }
    return session;
  }
}

/**
 * The MCP endpoint behind every session's `connection_url`:
 * - `POST /mcp/:sessionId` — MCP Streamable HTTP, stateless: each request builds its server from the database
 *   and answers with JSON, so any replica can serve any request of any session. GET and DELETE (standalone
 *   streams, session termination) answer 405, as the transport allows for stateless servers.
 * - `GET /mcp/:sessionId/sse` + `POST /mcp/:sessionId/messages?sessionId=…` — the legacy HTTP+SSE transport. Its
 *   stream lives in the process that opened it, so the messages must reach that process (sticky routing).
 */
export function mcpGatewayRouter(deps: AppDeps): Router {
  const gateway = new Gateway(deps.db, deps.secrets);
  const load = gatewaySessionLoader(deps.db, deps.secrets);
  const access = new SessionAccess(deps, load);
  const sseStreams = new Map<string, { transport: SSEServerTransport; sessionId: string }>();
  const router = Router();
  const sessionIdOf = (req: Request) => String(req.params.sessionId);

  router.post("/mcp/:sessionId", async (req, res) => {
    const session = await access.authorize(sessionIdOf(req), req.headers.authorization);
    const server = sessionMcpServer(gateway, async () => session, null);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
    await gateway.touch(session.id, 1, true);
  });
  router.all("/mcp/:sessionId", async (req, res) => {
    await access.authorize(sessionIdOf(req), req.headers.authorization);
    res.setHeader("Allow", "POST");
    throw new ApiError("method_not_allowed", "This MCP endpoint is stateless: send every message with POST.");
  });

  router.get("/mcp/:sessionId/sse", async (req, res) => {
    const sessionId = sessionIdOf(req);
    const session = await access.authorize(sessionId, req.headers.authorization);
    const transport = new SSEServerTransport(`/mcp/${sessionId}/messages`, res);
    const current = async () => access.authorize(sessionId, req.headers.authorization);
    const server = sessionMcpServer(gateway, current, newId("scn"));
    sseStreams.set(transport.sessionId, { transport, sessionId });
    res.on("close", () => {
      sseStreams.delete(transport.sessionId);
      void server.close();
    });
    await server.connect(transport);
    await gateway.touch(session.id, 0, true);
  });
  router.post("/mcp/:sessionId/messages", async (req, res) => {
    const sessionId = sessionIdOf(req);
    const session = await access.authorize(sessionId, req.headers.authorization);
    const streamId = new URL(req.url, "http://localhost").searchParams.get("sessionId") ?? "";
    const stream = sseStreams.get(streamId);
    if (!stream || stream.sessionId !== sessionId) {
      throw new ApiError("not_found", "No open SSE stream of this session has that sessionId on this server.", {
        entity: "mcp_stream",
      });
    }
    await stream.transport.handlePostMessage(req, res);
    await gateway.touch(session.id, 1, true);
  });
  return router;
}
