import { getEventListeners } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreamFetch } from "../../src/runtimes/upstream-fetch.ts";

let server: Server;
let base: string;
/** What the server received last: method, headers and body. */
let received: { method?: string; headers: Record<string, unknown>; body: string } = { headers: {}, body: "" };

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      received = { method: req.method, headers: req.headers, body };
      if (req.url === "/json") {
        res.writeHead(200, { "content-type": "application/json", "mcp-session-id": "abc" });
        res.end(JSON.stringify({ echoed: body }));
      } else if (req.url === "/events") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write("data: one\n\n");
        setTimeout(() => res.end("data: two\n\n"), 50);
      } else if (req.url === "/accepted") {
        res.writeHead(202).end();
      } else if (req.url === "/moved") {
        res.writeHead(307, { location: "/json" }).end();
      } else if (req.url === "/drop-reused") {
        // Ends a kept-alive socket on its second request without answering, as a server whose keep-alive
        // timeout struck just then does; a request on a new socket is answered.
        const socket = req.socket as typeof req.socket & { served?: number };
        socket.served = (socket.served ?? 0) + 1;
        if (socket.served > 1) socket.destroy();
        else res.writeHead(200, { "content-type": "application/json" }).end('{"fresh":true}');
      } else if (req.url === "/drop") {
        req.socket.destroy();
      } else if (req.url === "/hang") {
        // never answers
      } else {
        res.writeHead(404).end("not here");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

describe("upstreamFetch (node:http for the upstream transports)", () => {
  it("sends method, headers and body, and reads a JSON answer whole with its headers", async () => {
    const response = await upstreamFetch(`${base}/json`, {
      method: "POST",
      headers: { "content-type": "application/json", "mcp-protocol-version": "2025-11-25" },
      body: '{"hello":"ünïcode"}',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("mcp-session-id")).toBe("abc");
    expect(await response.json()).toEqual({ echoed: '{"hello":"ünïcode"}' });
    expect(received.method).toBe("POST");
    expect(received.headers["mcp-protocol-version"]).toBe("2025-11-25");
  });

  it("streams an event stream as it arrives", async () => {
    const response = await upstreamFetch(`${base}/events`, { method: "GET" });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("data: one\n\n");
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toBe("data: two\n\n");
  });

  it("answers 202 with no body, and follows a redirect as fetch does", async () => {
    expect((await upstreamFetch(`${base}/accepted`, { method: "POST", body: "{}" })).status).toBe(202);
    const moved = await upstreamFetch(`${base}/moved`, { method: "POST", body: "again" });
    expect(await moved.json()).toEqual({ echoed: "again" });
  });

  it("leaves no listener on a long-lived signal once the answers are read", async () => {
    const transportSignal = new AbortController().signal;
    for (let i = 0; i < 50; i++) {
      await (await upstreamFetch(`${base}/json`, { method: "POST", body: "x", signal: transportSignal })).text();
    }
    const events = await upstreamFetch(`${base}/events`, { signal: transportSignal });
    await events.text();
    expect(getEventListeners(transportSignal, "abort")).toHaveLength(0);
  });

  it("puts one listener on a signal that concurrent requests share, and aborts them all with it", async () => {
    const transportSignal = new AbortController().signal;
    const answers = Array.from({ length: 16 }, () =>
      upstreamFetch(`${base}/json`, { method: "POST", body: "x", signal: transportSignal }).then((r) => r.text()),
    );
    expect(getEventListeners(transportSignal, "abort")).toHaveLength(1);
    await Promise.all(answers);
    expect(getEventListeners(transportSignal, "abort")).toHaveLength(0);

    const controller = new AbortController();
    const reason = new Error("connection closed");
    const hanging = Array.from({ length: 16 }, () =>
      upstreamFetch(`${base}/hang`, { method: "POST", body: "{}", signal: controller.signal }),
    );
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort(reason);
    for (const pending of hanging) await expect(pending).rejects.toBe(reason);
  });

  it("sends a request again once when the server closed the kept-alive socket it went out on", async () => {
    expect(await (await upstreamFetch(`${base}/drop-reused`, { method: "POST", body: "1" })).json()).toEqual({
      fresh: true,
    });
    // The second request goes out on the kept-alive socket, which the server drops: it is sent again on a new one.
    expect(await (await upstreamFetch(`${base}/drop-reused`, { method: "POST", body: "2" })).json()).toEqual({
      fresh: true,
    });
    // A request whose new socket is dropped is not sent again: it fails as fetch fails.
    await expect(upstreamFetch(`${base}/drop`, { method: "POST", body: "3" })).rejects.toBeInstanceOf(TypeError);
  });

  it("rejects with the signal's reason when aborted, and with a TypeError when the server cannot be reached", async () => {
    const controller = new AbortController();
    const pending = upstreamFetch(`${base}/hang`, { method: "POST", body: "{}", signal: controller.signal });
    const reason = new Error("client cancelled");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    await expect(upstreamFetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" })).rejects.toBeInstanceOf(
      TypeError,
    );
  });
});
