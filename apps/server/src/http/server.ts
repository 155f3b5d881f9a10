import { createServer, type IncomingMessage, type RequestListener, type Server, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { type ErrorCode, statusOfErrorCode } from "@toolplane/server-stubs";

/**
 * Slowloris bounds: a client gets this long to send its headers, and this long for the whole request (body
 * included; a response streamed afterwards, such as an SSE stream, is not limited). Generous for a real client on
 * a slow link, short enough that trickling bytes cannot hold connections for minutes (Node's default request
 * timeout is 5 minutes).
 */
export const HEADERS_TIMEOUT_MS = 15_000;
export const REQUEST_TIMEOUT_MS = 60_000;
/**
 * Lingering close. An answer sent before the request body was read (an early 413 on the declared length, a 401)
 * leaves the client still writing; closing then resets the connection under it, and the client gets EPIPE or
 * ECONNRESET, often before it has read the answer. The rest of the body is read and discarded instead, as nginx
 * does, for at most this long and this much (so a slow or lying body cannot hold the connection), and the connection
 * is closed only then. A client that finishes its body keeps its connection.
 */
export const LINGER_MS = 10_000;
export const LINGER_BYTES = 16 * 1024 * 1024;

export interface HttpServerTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  lingerMs: number;
  lingerBytes: number;
}

const DEFAULT_TIMEOUTS: HttpServerTimeouts = {
  headersTimeoutMs: HEADERS_TIMEOUT_MS,
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  lingerMs: LINGER_MS,
  lingerBytes: LINGER_BYTES,
};

/** The node:http server every process of ours listens with: the bounds above and errors in the documented shape. */
export function createHttpServer(app?: RequestListener, bounds: Partial<HttpServerTimeouts> = {}): Server {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...bounds };
  const server = createServer({
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    // Node checks the timeouts on this period (30 s by default, which would double the headers bound).
    connectionsCheckingInterval: Math.min(5_000, timeouts.headersTimeoutMs / 2),
  });
  server.on("request", (req: IncomingMessage, res) => {
    // Before Node's own handler of the answer's end, which would discard the rest of the body out of sight.
    res.prependOnceListener("finish", () => {
      if (!req.complete && !req.socket.destroyed) discardRestOfBody(req, timeouts);
    });
  });
  if (app) server.on("request", app);
  server.on("clientError", answerClientError);
  return server;
}

/** Connections discarding a body after their answer: a request timeout there must not write a second answer. */
const lingering = new WeakSet<Socket>();

/**
 * See LINGER_MS. Node would read an unread body after the answer by itself, but without a bound, and not one that
 * a body parser paused when it reached its limit.
 */
function discardRestOfBody(req: IncomingMessage, { lingerMs, lingerBytes }: HttpServerTimeouts): void {
  lingering.add(req.socket);
  req.once("end", () => lingering.delete(req.socket));
  const close = () => req.socket.destroy();
  const timer = setTimeout(close, lingerMs).unref();
  let discarded = 0;
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > lingerBytes) close();
  });
  req.once("end", () => clearTimeout(timer));
  req.socket.once("close", () => clearTimeout(timer));
  req.resume();
}

/**
 * Requests Node's parser refuses before Express sees them (an unknown method, a malformed or oversized header, a
 * timeout) used to get Node's bare `400 Bad Request` without a body; they get the documented error body here,
 * and the connection is closed (after a parse error the rest of the stream cannot be trusted).
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset or a half-written request leaves nobody to answer; a lingering connection has had its answer.
  if (err.code === "ECONNRESET" || !socket.writable || lingering.has(socket)) {
    socket.destroy();
    return;
  }
  const [status, code, message] = describeClientError(err.code);
  const body = JSON.stringify({ __typename: "error", ok: false, status, code, message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Connection: close\r\n\r\n" +
      body,
  );
}

function describeClientError(nodeCode: string | undefined): [number, ErrorCode, string] {
  const badRequest = (message: string): [number, ErrorCode, string] => [
    statusOfErrorCode.bad_request,
    "bad_request",
    message,
  ];
  switch (nodeCode) {
    // RFC 9110 §15.6.2: a method the server does not recognise is a 501.
    case "HPE_INVALID_METHOD":
      return [statusOfErrorCode.not_implemented, "not_implemented", "The HTTP method is not supported."];
    case "HPE_HEADER_OVERFLOW":
      return badRequest("The request headers are too large.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [statusOfErrorCode.request_timeout, "request_timeout", "The request was not received in time."];
    default:
      return badRequest("The request is not valid HTTP (a malformed request line or header).");
  }
}
