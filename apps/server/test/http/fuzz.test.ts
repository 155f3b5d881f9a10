// A property-based fuzz test driven by the bundled spec: for every operation, requests with hostile path
// parameters, query strings and bodies (wrong types, deep nesting, huge values, lone surrogates, NUL, bad ids,
// bad paging, mutated examples) never get a 5xx, and every error is the documented Error schema.
// FUZZ_RUNS requests per operation (30 by default: about 3,400 requests, 20–40 s on 2 cores); each run draws one
// seed, printed at the start and in a failure's message: FUZZ_SEED=<seed> replays the run, and FUZZ_OPERATION=<id>
// limits it to one operation (its requests are the same, since each operation's seed is derived from the run's).
import { type OperationDescriptor, operationTable } from "@toolplane/server-stubs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { bundledSpec } from "../../src/spec.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  remoteProvider,
} from "../mcp/gateway-fixtures.ts";
import { fixture, useTestServer } from "../support/fixture.ts";
import { startTestUpstream } from "../support/upstream-server.ts";

const t = useTestServer();
const upstream = fixture(startTestUpstream, (u) => u.close());
afterAll(() => upstreams.closeAll());
const RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const ONLY = process.env.FUZZ_OPERATION;
console.log(`fuzz: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}${ONLY ? ` FUZZ_OPERATION=${ONLY}` : ""}`);

/** fc.assert with this run's seed (offset per property, so one replays alone), naming the replay on failure. */
async function check<T>(
  property: fc.IAsyncProperty<T>,
  name: string,
  offset: number,
  numRuns: number,
  examples: T[] = [],
) {
  try {
    await fc.assert(property, { numRuns, seed: SEED + offset, examples });
  } catch (err) {
    throw new Error(`${name} failed; replay: FUZZ_SEED=${SEED} FUZZ_OPERATION=${name}\n${(err as Error).message}`, {
      cause: err,
    });
  }
}

type Json = unknown;
interface Parameter {
  name: string;
  in: string;
  example?: unknown;
  schema?: { example?: unknown; type?: unknown };
}
interface Operation {
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> };
  responses: Record<string, unknown>;
}

const spec = bundledSpec as unknown as {
  paths: Record<string, Record<string, Operation> & { parameters?: (Parameter | { $ref: string })[] }>;
  components: { schemas: Record<string, { example?: unknown }>; parameters: Record<string, Parameter> };
};

/** The documented error body, checked with the spec's own schema (2020-12, as the server validates). */
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: "spec", components: spec.components });
const isErrorBody = ajv.getSchema("spec#/components/schemas/Error");
if (!isErrorBody) throw new Error("the spec has no Error schema");

const resolve = (p: Parameter | { $ref: string }): Parameter =>
  "$ref" in p ? (spec.components.parameters[p.$ref.split("/").pop() ?? ""] as Parameter) : p;

// Strings PostgreSQL and the validators must survive: lone surrogates, NUL, control and RTL characters, long ones.
// The long ones are drawn less often: a 140 KB string is one probe of the size limits, and most of the test's time.
const nastyString = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "\ud800",
      "a\udc00b",
      "\u0000",
      "x\u0000y",
      "\u202e\u0007",
      "😀",
      "' or 1=1 --",
      "%00",
      "../..",
    ),
  },
  // Any code point, lone surrogates included (fast-check's own "binary" unit spends seconds on a reverse mapping).
  { weight: 3, arbitrary: fc.string({ unit: fc.nat(0x10ffff).map((c) => String.fromCodePoint(c)), maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom("x".repeat(5_000), "é".repeat(70_000)) },
);
const deep = (levels: number): Json => {
  let value: Json = "leaf";
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { d: value };
  return value;
};
/**
 * Stands for JSON nested 5,000 levels deep, spliced in when the body is serialised: fast-check prints and shrinks
 * the values it generates recursively, which a value that deep would overflow (in the test, not the server).
 */
const DEEP_MARKER = "\u0001deep\u0001";
const DEEP_JSON = `${"[".repeat(5_000)}${"]".repeat(5_000)}`;
const nastyValue: fc.Arbitrary<Json> = fc.oneof(
  nastyString,
  fc.constantFrom(deep(70), DEEP_MARKER, null, -1, 0, 1e308, 2 ** 53 + 1, true, [], {}),
  fc.jsonValue({ maxDepth: 4 }),
);

/** A copy of `example` with one field (picked by `pick`) replaced, or a field added. */
function mutate(example: Json, pick: number, replacement: Json, key: string): Json {
  if (example === null || typeof example !== "object") return replacement;
  const entries = Object.entries(example as Record<string, Json>);
  if (entries.length === 0 || pick % (entries.length + 1) === entries.length) {
    return Array.isArray(example) ? [...example, replacement] : { ...example, [key]: replacement };
  }
  const [name, value] = entries[pick % entries.length] as [string, Json];
  const copy = (Array.isArray(example) ? [...example] : { ...example }) as Record<string, Json>;
  copy[name] = pick % 3 === 0 ? mutate(value, Math.floor(pick / 3), replacement, key) : replacement;
  return copy;
}

function requestFor(op: OperationDescriptor) {
  const item = spec.paths[op.path];
  const operation = item?.[op.method];
  if (!item || !operation) throw new Error(`${op.operationId} is not in the bundle`);
  const params = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(resolve);
  const schemaRef = operation.requestBody?.content?.["application/json"]?.schema?.$ref;
  const example = schemaRef ? spec.components.schemas[schemaRef.split("/").pop() ?? ""]?.example : undefined;

  const pathValue = (p: Parameter) =>
    fc.oneof(
      fc.constant(String(p.example ?? p.schema?.example ?? "x")),
      fc.constantFrom("pgr_", "zzz_01jqz7m3c8v4r2k9x5n6t0w1ya", "x".repeat(2_000), "\u0000", "\ud800", "%", "🙂"),
      fc.string({ maxLength: 30 }),
    );
  const queryValue = fc.oneof(
    nastyString,
    fc.constantFrom("-1", "0", "101", "1e999", "NaN", "asc", "desc", "true", "pgr_01jqz7m3c8v4r2k9x5n6t0w1ya"),
  );
  const body: fc.Arbitrary<Json | undefined> =
    example === undefined
      ? fc.option(nastyValue, { nil: undefined })
      : fc.oneof(
          fc.constant(example),
          fc.tuple(fc.nat(), nastyValue, fc.string({ maxLength: 8 })).map(([n, v, k]) => mutate(example, n, v, k)),
          nastyValue,
        );

  return fc.record({
    path: fc.tuple(...params.filter((p) => p.in === "path").map((p) => pathValue(p).map((v) => [p.name, v] as const))),
    query: fc.array(
      fc.tuple(
        fc.oneof(fc.constantFrom(...params.filter((p) => p.in === "query").map((p) => p.name), "limit"), fc.string()),
        queryValue,
      ),
      { maxLength: 3 },
    ),
    body,
    rawBody: fc.option(fc.constantFrom("{", "[1,", '{"a":1}x', "\u0000", "null"), { freq: 8, nil: undefined }),
  });
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Percent-encodes like a browser, except that a lone surrogate is sent as its (invalid) UTF-8 bytes. */
function encodePathValue(value: string): string {
  return value.split(LONE_SURROGATE).map(encodeURIComponent).join("%ED%A0%80");
}

type Request = ReturnType<typeof requestFor> extends fc.Arbitrary<infer R> ? R : never;

async function send(op: OperationDescriptor, input: Request) {
  let url = op.path;
  for (const [name, value] of input.path) url = url.replace(`{${name}}`, encodePathValue(value));
  const query = new URLSearchParams(input.query.map(([k, v]): [string, string] => [k, v])).toString();
  const hasBody = input.rawBody !== undefined || input.body !== undefined;
  const res = await t.fetch(`${url}${query ? `?${query}` : ""}`, {
    method: op.method.toUpperCase(),
    ...(hasBody && op.method !== "get"
      ? {
          headers: { "content-type": "application/json" },
          body: input.rawBody ?? JSON.stringify(input.body).replace(JSON.stringify(DEEP_MARKER), DEEP_JSON),
        }
      : {}),
  });
  return { status: res.status, text: await res.text() };
}

/** A session with one provider, the test upstream (its `echo` tool answers `upstream: <message>`). */
let sessionMade: Promise<CreatedSession> | undefined;
function mcpSession(): Promise<CreatedSession> {
  sessionMade ??= (async () => {
    const provider = await remoteProvider(t.db, "fuzzed", upstream.url);
    const deployment = await deployProvider(t.client, provider.providerId, "Fuzzed");
    return createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
  })();
  return sessionMade;
}

describe("spec-driven fuzzing", () => {
  it(`no operation answers 5xx or an undocumented error shape (${RUNS} runs each)`, async () => {
    const seen = new Map<number, number>();
    const ops = operationTable.map((op, index) => ({ op, index })).filter(({ op }) => !ONLY || op.operationId === ONLY);
    for (const { op, index } of ops) {
      await check(
        fc.asyncProperty(requestFor(op), async (input) => {
          const { status, text } = await send(op, input);
          seen.set(status, (seen.get(status) ?? 0) + 1);
          expect(status, `${op.operationId}: ${text}`).toBeLessThan(500);
          if (status >= 400) {
            const body = JSON.parse(text) as { status?: number };
            expect(isErrorBody(body), `${op.operationId}: ${text} ${ajv.errorsText(isErrorBody.errors)}`).toBe(true);
            expect(body.status).toBe(status);
          }
        }),
        op.operationId,
        index,
        RUNS,
      );
    }
    const requests = [...seen.values()].reduce((a, b) => a + b, 0);
    console.log(
      `fuzzed ${ops.length} operations, ${requests} requests; statuses ${JSON.stringify(Object.fromEntries(seen))}`,
    );
  }, 180_000);

  it.skipIf(ONLY && ONLY !== "mcp")(
    "the MCP endpoint never answers 5xx to hostile JSON-RPC",
    async () => {
      const session = await mcpSession();
      const endpoint = endpointOf(t, session);
      // Mostly well-formed 2025 envelopes, so that most requests get past the transport to the gateway: a tool
      // call with hostile arguments reaches the upstream (it echoes `message`) and is recorded.
      const method = fc.oneof(
        { weight: 4, arbitrary: fc.constant("tools/call") },
        {
          weight: 4,
          arbitrary: fc.constantFrom("initialize", "tools/list", "resources/read", "prompts/get", "server/discover"),
        },
        {
          weight: 2,
          arbitrary: fc.constantFrom("completion/complete", "logging/setLevel", "tasks/get", "subscriptions/listen"),
        },
        { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
      );
      const params = fc.oneof(
        {
          weight: 4,
          arbitrary: fc.record({
            name: fc.constantFrom("echo", "fuzzed_echo", "nope"),
            arguments: fc.oneof(fc.record({ message: nastyValue }), nastyValue),
          }),
        },
        {
          weight: 1,
          arbitrary: fc.record({
            protocolVersion: fc.constantFrom("2025-06-18", "2025-11-25", "2026-07-28"),
            _meta: nastyValue,
          }),
        },
        { weight: 1, arbitrary: nastyValue },
      );
      const envelope = fc.record({
        jsonrpc: fc.oneof({ weight: 9, arbitrary: fc.constant("2.0") }, { weight: 1, arbitrary: fc.constant("1.0") }),
        id: fc.oneof({ weight: 8, arbitrary: fc.nat() }, { weight: 1, arbitrary: nastyString }, fc.constant(null)),
        method,
        params,
      });
      const body = fc.oneof(
        { weight: 6, arbitrary: envelope.map((e) => JSON.stringify(e)) },
        { weight: 1, arbitrary: fc.array(envelope, { maxLength: 3 }).map((e) => JSON.stringify(e)) },
        {
          weight: 1,
          arbitrary: fc.constantFrom("{", "null", "[]", DEEP_JSON, "\u0000", `{"jsonrpc":"2.0","method":"\ud800"}`),
        },
      );
      await check(
        fc.asyncProperty(
          body,
          fc.constantFrom("2025-06-18", "2025-06-18", "2026-07-28", "x", ""),
          async (payload, version) => {
            const res = await fetch(endpoint, {
              method: "POST",
              headers: {
                authorization: `Bearer ${session.secret}`,
                "content-type": "application/json",
                accept: "application/json, text/event-stream",
                ...(version ? { "mcp-protocol-version": version } : {}),
              },
              body: payload,
            });
            expect(res.status, `${payload.slice(0, 300)}: ${await res.text()}`).toBeLessThan(500);
          },
        ),
        "mcp",
        operationTable.length + 1,
        RUNS * 4,
        // Always tried: 5,000 levels of nesting were a 500 (the SDK validates messages recursively).
        [[DEEP_JSON, "2025-06-18"]],
      );
    },
    120_000,
  );

  it.skipIf(ONLY && ONLY !== "mcp")("the legacy HTTP+SSE transport refuses JSON nested too deep as well", async () => {
    const session = await mcpSession();
    const auth = { authorization: `Bearer ${session.secret}` };
    const stream = new AbortController();
    const res = await fetch(`${endpointOf(t, session)}/sse`, { headers: auth, signal: stream.signal });
    try {
      // The stream's first event names the endpoint its messages go to.
      const reader = res.body?.getReader();
      let first = "";
      while (reader && !/data: \S+/.test(first)) first += new TextDecoder().decode((await reader.read()).value);
      const messages = new URL(/data: (\S+)/.exec(first)?.[1] ?? "", t.url);
      const deepCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":${DEEP_JSON}}}}`;
      const refused = await fetch(messages, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: deepCall,
      });
      // It reached the gateway before, and its answer on the stream was "Maximum call stack size exceeded".
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ code: "invalid_data", errors: [{ code: "max_depth" }] });
    } finally {
      stream.abort();
    }
  });

  it.skipIf(ONLY && ONLY !== "pages")(
    "the portal and OAuth pages never answer 5xx either",
    async () => {
      const segment = fc.oneof(fc.constantFrom("setup", "oauth-setup", "pas_x", "%00", "%ED%A0%80", "%"), fc.string());
      const value = fc.oneof(nastyString, fc.constantFrom("poas_01jqz7m3c8v4r2k9x5n6t0w1ya", ""));
      const enc = (v: string) => encodePathValue(v) || "x";
      await check(
        fc.asyncProperty(segment, value, value, value, async (a, b, c, d) => {
          const form = { "content-type": "application/x-www-form-urlencoded" };
          const responses = await Promise.all([
            t.fetch(`/p/${enc(a)}`, { auth: false }),
            t.fetch(`/oauth/${enc(a)}/${enc(b)}/start?token=${enc(c)}`, { auth: false }),
            t.fetch(`/oauth/${enc(a)}/${enc(b)}/start?token=${enc(c)}`, {
              auth: false,
              method: "POST",
              headers: form,
              body: `token=${enc(d)}&${enc(c)}=${enc(d)}`,
            }),
            t.fetch(`/oauth/callback?code=${enc(c)}&state=${enc(d)}&error=${enc(b)}`, {
              auth: false,
              headers: { cookie: `x=${enc(d)}` },
            }),
          ]);
          for (const res of responses) expect(res.status, `${res.url}: ${await res.text()}`).toBeLessThan(500);
        }),
        "pages",
        operationTable.length,
        RUNS * 4,
      );
    },
    120_000,
  );
});
