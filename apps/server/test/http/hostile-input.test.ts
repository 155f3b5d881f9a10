// Input no handler can process is refused in one place (the API router and the HTTP server), quickly and in the
// documented error shape: deep nesting, text PostgreSQL cannot store, lying Content-Length, unknown methods and
// malformed headers.
import { type AddressInfo, connect } from "node:net";
import type { ErrorBody } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { createHttpServer } from "../../src/http/server.ts";
import { useTestServer } from "../support/fixture.ts";

const t = useTestServer();

const post = (path: string, body: string) =>
  t.fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body });

/**
 * Sends raw bytes (a string at once, or an array of chunks 200 ms apart) and resolves with what the server answers:
 * everything until it closes the connection or, with `until: "answer"`, its first complete response. Rejects when
 * that does not come within `timeoutMs`.
 */
function raw(
  request: string | string[],
  {
    timeoutMs = 5_000,
    url = t.url,
    until = "close",
  }: { timeoutMs?: number; url?: string; until?: "close" | "answer" } = {},
): Promise<string> {
  const { port, hostname } = new URL(url);
  return new Promise((resolve, reject) => {
    const chunks = typeof request === "string" ? [request] : [...request];
    const socket = connect(Number(port), hostname, () => {
      const next = () => {
        const chunk = chunks.shift();
        if (chunk === undefined || socket.destroyed) return;
        socket.write(chunk);
        setTimeout(next, 200);
      };
      next();
    });
    let text = "";
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(text);
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no ${until} within ${timeoutMs} ms; got ${JSON.stringify(text)}`));
    }, timeoutMs);
    socket.on("data", (d) => {
      text += d;
      if (until === "answer" && isCompleteResponse(text)) done();
    });
    socket.on("close", done);
    socket.on("error", () => {});
  });
}

function isCompleteResponse(text: string): boolean {
  const headerEnd = text.indexOf("\r\n\r\n");
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headerEnd));
  return headerEnd !== -1 && length !== null && Buffer.byteLength(text.slice(headerEnd + 4)) >= Number(length[1]);
}

const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as ErrorBody;

describe("hostile input", () => {
  it("refuses JSON nested deeper than 64 levels as invalid_data before validation (no stack overflow)", async () => {
    const deep = `{"name":"x","metadata":{"a":${"[".repeat(5000)}${"]".repeat(5000)}}}`;
    const res = await post("/provider-groups", deep);
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body).toMatchObject({ status: 400, code: "invalid_data", entity: "body" });
    expect(body.errors?.[0]?.code).toBe("max_depth");
    // 60 levels pass the guard and reach the schema (metadata holds flat values, so the schema refuses them).
    const shallow = (await (
      await post("/provider-groups", JSON.stringify({ name: "x", metadata: nest(60) }))
    ).json()) as ErrorBody;
    expect(shallow.errors?.map((e) => e.code)).not.toContain("max_depth");
  });

  it("refuses lone surrogates anywhere and NUL outside write-only fields, naming the field", async () => {
    const surrogate = await post("/provider-groups", '{"name":"ok","metadata":{"team":"\\ud800"}}');
    expect(surrogate.status).toBe(400);
    const body = (await surrogate.json()) as ErrorBody;
    expect(body).toMatchObject({ code: "invalid_data", entity: "body" });
    expect(body.errors).toEqual([expect.objectContaining({ code: "invalid_unicode", path: ["metadata", "team"] })]);
    expect(body.message).toContain("metadata.team");
    // A paired surrogate (an emoji written as escapes) is ordinary text.
    expect((await post("/provider-groups", '{"name":"\\ud83d\\ude00 team"}')).status).toBe(201);

    const nul = (await (await post("/provider-groups", '{"name":"a\\u0000b"}')).json()) as ErrorBody;
    expect(nul).toMatchObject({ status: 400, code: "invalid_data" });
    expect(nul.errors).toEqual([expect.objectContaining({ code: "nul_character", path: ["name"] })]);
    const inKey = await post("/provider-groups", '{"name":"x","metadata":{"\\udfff":"v"}}');
    expect(inKey.status).toBe(400);
    const inQuery = await t.fetch("/provider-groups/pgr_%00");
    expect(inQuery.status).toBe(400);
  });

  it("answers a Content-Length above the limit with 413 at once, without waiting for the body", async () => {
    const key = t.tenant.apiKey;
    // The announced body never comes: the answer must not wait for it.
    const text = await raw(
      "POST /provider-groups HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Authorization: Bearer ${key}\r\nContent-Length: 99999999999\r\n\r\n{}`,
      { until: "answer" },
    );
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(bodyOf(text)).toMatchObject({ status: 413, code: "payload_too_large", entity: "body" });
  });

  // Announced (the router refuses the length before reading) or chunked (the body parser stops at the limit).
  it.each([
    ["Content-Length", `Content-Length: ${4 * 1024 * 1024}`, (data: string) => data, ""],
    [
      "chunked",
      "Transfer-Encoding: chunked",
      (data: string) => `${data.length.toString(16)}\r\n${data}\r\n`,
      "0\r\n\r\n",
    ],
  ] as const)(
    "lets a client still writing a large body (%s) finish and read the early 413, without EPIPE or reset",
    async (_, header, frame, last) => {
      // The test server's limit is 64 KiB: 4 MiB in 64 KiB chunks, each written once the previous one has been
      // taken, so the server answers long before the body ends.
      const chunk = "x".repeat(64 * 1024);
      const { port, hostname } = new URL(t.url);
      const socket = connect(Number(port), hostname);
      let answer = "";
      socket.on("data", (d) => {
        answer += d;
      });
      const closed = new Promise<{ hadError: boolean; error: Error | undefined }>((resolve) => {
        let error: Error | undefined;
        socket.on("error", (e) => {
          error = e;
        });
        socket.on("close", (hadError) => resolve({ hadError, error }));
      });
      const answers = () => answer.split(/(?=HTTP\/1\.1 )/);
      const secondAnswer = new Promise<void>((resolve) =>
        socket.on("data", () => {
          if (isCompleteResponse(answers()[1] ?? "")) resolve();
        }),
      );
      const write = (data: string) =>
        new Promise<void>((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));
      await new Promise<void>((resolve) => socket.once("connect", resolve));
      await write(
        "POST /provider-groups HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          `Authorization: Bearer ${t.tenant.apiKey}\r\n${header}\r\n\r\n`,
      );
      for (let i = 0; i < 64; i++) {
        await write(frame(chunk));
        await new Promise((resolve) => setImmediate(resolve));
      }
      // The body was discarded to its end, so the connection serves the next request.
      await write(
        `${last}GET /provider-groups HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.tenant.apiKey}\r\n\r\n`,
      );
      // (Ending the connection before that answer came would abort its request.)
      await Promise.race([secondAnswer, closed]);
      socket.end();
      const { hadError, error } = await closed;
      expect(error).toBeUndefined();
      expect(hadError).toBe(false);
      const [first, second] = answers();
      expect(first).toMatch(/^HTTP\/1\.1 413 /);
      expect(bodyOf(first ?? "")).toMatchObject({ status: 413, code: "payload_too_large", entity: "body" });
      expect(second).toMatch(/^HTTP\/1\.1 200 /);
    },
  );

  it("answers an unknown method and a malformed header in the error shape", async () => {
    const method = await raw("FROB /provider-groups HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(method).toMatch(/^HTTP\/1\.1 501 /);
    expect(bodyOf(method)).toMatchObject({ __typename: "error", ok: false, code: "not_implemented" });
    const header = await raw("GET /provider-groups HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n");
    expect(header).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(header)).toMatchObject({ status: 400, code: "bad_request" });
  });
});

describe("slow clients", () => {
  /** A server of ours with short bounds: a POST is answered 413 without reading its body (as the API does), the rest once read. */
  async function boundedServer(bounds: Parameters<typeof createHttpServer>[1]) {
    const server = createHttpServer((req, res) => {
      if (req.method === "POST") res.writeHead(413).end("too large");
      else req.resume().on("end", () => res.end("ok"));
    }, bounds);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }

  it("closes a connection whose headers trickle in past the headers timeout, with a 408 in the error shape", async () => {
    const { server, url } = await boundedServer({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
    try {
      // 40 header lines 200 ms apart take 8 s: the connection must be closed by the 1 s bound, within raw's 6 s.
      const trickle = ["GET / HTTP/1.1\r\nHost: x\r\n", ...Array.from({ length: 40 }, (_, i) => `X-${i}: y\r\n`)];
      const text = await raw(trickle, { timeoutMs: 6_000, url });
      expect(text).toMatch(/^HTTP\/1\.1 408 /);
      expect(bodyOf(text)).toMatchObject({ __typename: "error", ok: false, status: 408, code: "request_timeout" });
      // A normal request on the same server is unaffected.
      expect(await (await fetch(url)).text()).toBe("ok");
    } finally {
      server.close();
    }
  });

  it("answers a body that trickles in past the request timeout with a 408 in the error shape", async () => {
    const { server, url } = await boundedServer({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
    try {
      // The headers are complete; 40 body bytes 200 ms apart take 8 s, past the 2 s bound, within raw's 6 s.
      const headers = "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n";
      const text = await raw([headers, ...Array.from({ length: 40 }, () => "x")], { timeoutMs: 6_000, url });
      expect(text).toMatch(/^HTTP\/1\.1 408 /);
      expect(bodyOf(text)).toMatchObject({ status: 408, code: "request_timeout" });
    } finally {
      server.close();
    }
  });

  it("stops discarding the body after an early answer at the linger bounds: a lying length, a body without end", async () => {
    const { server, url } = await boundedServer({ lingerMs: 500, lingerBytes: 256 * 1024 });
    try {
      // The announced body never comes: the connection is closed once the time bound has passed.
      const lying = await raw("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{}", { url });
      expect(lying).toMatch(/^HTTP\/1\.1 413 /);
    } finally {
      server.close();
    }
    const sized = await boundedServer({ lingerMs: 60_000, lingerBytes: 256 * 1024 });
    try {
      // A body sent as fast as it goes: cut once more than 256 KiB were discarded, long before its 64 MiB.
      const { port, hostname } = new URL(sized.url);
      const socket = connect(Number(port), hostname);
      socket.on("error", () => {});
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      const total = 64 * 1024 * 1024;
      socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${total}\r\n\r\n`);
      const chunk = Buffer.alloc(64 * 1024, "x");
      let written = 0;
      while (written < total && !socket.destroyed) {
        if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once("drain", resolve)), closed]);
        written += chunk.length;
      }
      await closed;
      expect(written).toBeLessThan(total);
    } finally {
      sized.server.close();
    }
  });
});

function nest(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < levels; i++) value = { n: value };
  return value;
}
