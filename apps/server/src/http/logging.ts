import type { IncomingMessage } from "node:http";
import { type Logger, pino } from "pino";
import { pinoHttp } from "pino-http";
import { newId } from "../lib/ids.ts";

/** Never log credentials: headers that carry them, and bodies (which may hold secrets), are not logged at all. */
const REDACT = ["req.headers.authorization", "req.headers.cookie", 'res.headers["set-cookie"]'];

export function createLogger(level: string): Logger {
  return pino({ level, redact: { paths: REDACT, censor: "[redacted]" } });
}

/** Structured request logs; each request gets an id (or keeps a sane X-Request-Id) echoed in the response. */
export function requestLogger(logger: Logger) {
  return pinoHttp({
    logger,
    genReqId: (req: IncomingMessage, res) => {
      const given = req.headers["x-request-id"];
      const id = typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : newId("req");
      res.setHeader("X-Request-Id", id);
      return id;
    },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? "error" : "info"),
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({
        id: req.id,
        method: req.method,
        url: req.url.replace(/([?&](?:code|state|token|access_token)=)[^&]*/g, "$1[redacted]"),
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  });
}
