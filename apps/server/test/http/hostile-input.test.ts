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
 * Sends raw bytes (a string at once, or an array of chunks 200 ms apart) and resolves with everything the server
 * answers before it closes the connection.
 */
function raw(request: string | string[], timeoutMs = 5_000, url = t.url): Promise<{ text: string; ms: number }> {
  const { port, hostname } = new URL(url);
  const started = performance.now();
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
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms; got ${JSON.stringify(text)}`));
    }, timeoutMs);
    socket.on("data", (d) => {
      text += d;
    });
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ text, ms: performance.now() - started });
    });
    socket.on("error", () => {});
  });
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
    const { text, ms } = await raw(
      "POST /provider-groups HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Authorization: Bearer ${key}\r\nContent-Length: 99999999999\r\n\r\n{}`,
    );
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(bodyOf(text)).toMatchObject({ status: 413, code: "payload_too_large", entity: "body" });
    expect(ms).toBeLessThan(2_000);
  });

  it("answers an unknown method and a malformed header in the error shape", async () => {
    const method = await raw("FROB /provider-groups HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(method.text).toMatch(/^HTTP\/1\.1 501 /);
    expect(bodyOf(method.text)).toMatchObject({ __typename: "error", ok: false, code: "not_implemented" });
    const header = await raw("GET /provider-groups HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n");
    expect(header.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(header.text)).toMatchObject({ status: 400, code: "bad_request" });
  });
});

describe("slow clients", () => {
  it("closes a connection whose headers trickle in past the headers timeout, with a 408 in the error shape", async () => {
    const server = createHttpServer((_req, res) => res.end("ok"), { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const trickle = ["GET / HTTP/1.1\r\nHost: x\r\n", ...Array.from({ length: 40 }, (_, i) => `X-${i}: y\r\n`)];
      const { text, ms } = await raw(trickle, 6_000, url);
      expect(text).toMatch(/^HTTP\/1\.1 408 /);
      expect(bodyOf(text)).toMatchObject({ __typename: "error", ok: false, status: 408, code: "timeout" });
      expect(ms).toBeLessThan(4_000);
      // A normal request on the same server is unaffected.
      expect(await (await fetch(url)).text()).toBe("ok");
    } finally {
      server.close();
    }
  });
});

function nest(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < levels; i++) value = { n: value };
  return value;
}
