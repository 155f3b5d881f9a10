/**
 * `POST /mcp/<session id>` is served before Express dispatches it (src/app.ts, the router's servePost): every
 * request below is sent twice, to that path and to `/mcp/<session id>/`, which Express's router matches to the same
 * route (its matching is not strict about a trailing slash), and the two answers must be the same: status, the
 * headers a client reads, and the body. The log line and X-Request-Id of the early path are checked too; its
 * metrics route is in test/observability/metrics.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { type ModernUpstream, startModernUpstream } from "../support/upstream-modern.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  initializeBody,
  mcpHeaders,
  modernEnvelope,
  remoteProvider,
} from "./gateway-fixtures.ts";

const BODY_LIMIT = 4096;
let t: StartedTestServer;
let modern: ModernUpstream;
let session: CreatedSession;

beforeAll(async () => {
  [t, modern] = await Promise.all([
    startTestServer({ logLevel: "info", bodyLimitBytes: BODY_LIMIT }),
    startModernUpstream(),
  ]);
  const provider = await remoteProvider(t.db, "modern", modern.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Modern");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([modern?.close(), t?.close()]);
});

const MODERN_HEADERS = { "mcp-protocol-version": "2026-07-28" };
const modernBody = (method: string, params: Record<string, unknown> = {}) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 3,
    method,
    params: { ...params, _meta: modernEnvelope() },
  });

interface Case {
  what: string;
  sessionId?: string;
  headers: Record<string, string>;
  body: string;
  status: number;
}

const cases = (): Case[] => [
  { what: "no credential", headers: { "content-type": "application/json" }, body: initializeBody, status: 401 },
  { what: "a wrong secret", headers: mcpHeaders("not-the-secret"), body: initializeBody, status: 401 },
  {
    what: "an unknown session",
    sessionId: "ses_unknown",
    headers: mcpHeaders(session.secret),
    body: "{}",
    status: 404,
  },
  { what: "JSON that does not parse", headers: mcpHeaders(session.secret), body: '{"jsonrpc":', status: 400 },
  { what: "JSON that is not an object or array", headers: mcpHeaders(session.secret), body: "42", status: 400 },
  {
    what: "a body over the limit",
    headers: mcpHeaders(session.secret),
    body: JSON.stringify({ pad: "x".repeat(BODY_LIMIT) }),
    status: 413,
  },
  {
    what: "JSON nested too deep",
    headers: mcpHeaders(session.secret),
    body: `${"[".repeat(200)}${"]".repeat(200)}`,
    status: 400,
  },
  {
    what: "a 2026-07-28 tools/list",
    headers: { ...mcpHeaders(session.secret), ...MODERN_HEADERS, "mcp-method": "tools/list" },
    body: modernBody("tools/list"),
    status: 200,
  },
  {
    what: "a 2026-07-28 tools/call (the fast lane)",
    headers: { ...mcpHeaders(session.secret), ...MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": "shout" },
    body: modernBody("tools/call", { name: "shout", arguments: { text: "hi" } }),
    status: 200,
  },
  {
    what: "a 2026-07-28 tools/call whose Mcp-Name disagrees with its body",
    headers: { ...mcpHeaders(session.secret), ...MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": "other" },
    body: modernBody("tools/call", { name: "shout", arguments: { text: "hi" } }),
    status: 400,
  },
];

/** What a client reads of an answer; request ids (in headers and 500 references) differ by design. */
async function send(path: string, { headers, body }: Case) {
  const res = await fetch(`${t.url}${path}`, { method: "POST", headers, body });
  const text = await res.text();
  return {
    status: res.status,
    contentType: res.headers.get("content-type"),
    challenge: res.headers.get("www-authenticate"),
    hasRequestId: /^req_/.test(res.headers.get("x-request-id") ?? ""),
    body: text.startsWith("{") ? JSON.parse(text) : text,
  };
}

describe("POST /mcp/<session id> before Express", () => {
  it("answers every kind of request as the Express route does", async () => {
    for (const c of cases()) {
      const path = `/mcp/${c.sessionId ?? session.id}`;
      const early = await send(path, c);
      const routed = await send(`${path}/`, c);
      expect(early.status, c.what).toBe(c.status);
      expect(early.hasRequestId, c.what).toBe(true);
      expect(early, c.what).toEqual(routed);
    }
  });

  it("logs one line per request with its id, URL and status", async () => {
    const res = await fetch(`${t.url}/mcp/${session.id}`, {
      method: "POST",
      headers: { ...mcpHeaders(session.secret), "x-request-id": "early-path-1" },
      body: initializeBody,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("early-path-1");
    await res.body?.cancel();
    await expect
      .poll(() =>
        t
          .logs()
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { req?: { id?: string; method?: string; url?: string }; msg?: string })
          .find((line) => line.req?.id === "early-path-1" && line.msg === "request completed"),
      )
      .toMatchObject({ req: { method: "POST", url: `/mcp/${session.id}` }, res: { statusCode: 200 } });
  });
});
