import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { callDirect } from "../../src/runtimes/direct-call.ts";

/** A result schema that takes any result as it is (as the pool's upstream requests do). */
export const anyResult = {
  "~standard": { version: 1 as const, vendor: "test", validate: (value: unknown) => ({ value }) },
};

/** Starts `server` on 127.0.0.1 at a free port; resolves with its base URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The options the pool gives a direct call: a 5 s timeout, a 60 s total, and `extra`. */
export const directCallOptions = (extra: Partial<Parameters<typeof callDirect>[2]> = {}) => ({
  signal: new AbortController().signal,
  timeout: 5_000,
  maxTotalTimeout: 60_000,
  resetTimeoutOnProgress: true,
  headers: {},
  onnotification: () => undefined,
  ...extra,
});

/** A request the recording proxy forwarded: its method, headers and parsed JSON body (if any). */
export interface SeenRequest {
  method: string;
  headers: IncomingHttpHeaders;
  body?: Record<string, unknown>;
}

/**
 * A proxy in front of `upstreamUrl` that forwards every request, streams the answer back and records the request
 * in `seen`: both the SDK client's and a direct call's requests show on the wire. A client that goes away is not
 * passed on (a cancellation test goes straight to the upstream).
 */
export async function startRecordingProxy(upstreamUrl: string) {
  const seen: SeenRequest[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    seen.push({ method: req.method ?? "", headers: req.headers, ...(body ? { body: JSON.parse(body) } : {}) });
    const headers = Object.entries(req.headers).filter(([name]) => !["host", "content-length"].includes(name));
    const answer = await fetch(upstreamUrl, {
      method: req.method,
      headers: headers as [string, string][],
      ...(body ? { body } : {}),
    }).catch(() => null);
    // The upstream closed the connection (a test stopping it, or a kept-alive socket it had just closed): so does
    // the proxy, rather than leave the request unanswered (and the rejection unhandled, which fails the run).
    if (!answer) return void res.destroy();
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    try {
      if (answer.body) for await (const chunk of answer.body) res.write(chunk);
    } catch {
      // the upstream ended the stream abruptly: so does the proxy
    }
    res.end();
  });
  return { server, url: await listen(server), seen };
}

/** The tools/calls among the requests a recording proxy saw. */
export const toolCallsIn = (seen: SeenRequest[]) => seen.filter((request) => request.body?.method === "tools/call");
