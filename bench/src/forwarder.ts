// Figure 4's floor (4j): the least any process between an MCP client and its server can cost on this machine. It
// forwards every request to one upstream as bytes (method, path, headers and body piped over kept-alive
// connections, the answer piped back as it streams) and does nothing else: no parsing, no session, no record. The
// gateway does all of that and more, so the added time measured here is the part of the gateway's that no
// implementation could save. Started by mcp.ts in its own process; sends its URL to the parent and stops on SIGTERM.
import { Agent, createServer, type IncomingHttpHeaders, request } from "node:http";

const upstream = new URL(process.argv[2] ?? "");
const agent = new Agent({ keepAlive: true });

/** Headers that describe one connection and not the message (RFC 9110 §7.6.1); Node sets its own. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"]);
const endToEnd = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));

const server = createServer((req, res) => {
  const forwarded = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      path: req.url,
      method: req.method,
      headers: { ...endToEnd(req.headers), host: upstream.host },
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
      answer.pipe(res);
    },
  );
  forwarded.on("error", () => res.destroy());
  req.pipe(forwarded);
});

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("the forwarder has no port");
  process.send?.({ url: `http://127.0.0.1:${address.port}${upstream.pathname}` });
});
process.once("SIGTERM", () => {
  agent.destroy();
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
