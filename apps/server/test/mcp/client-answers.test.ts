/**
 * An upstream's question (elicitation, sampling) waits for the person behind the client, not for the upstream
 * timeout. MCP puts no limit on how long a client takes to answer (2025-11-25 client/elicitation; 2026-07-28
 * basic/patterns/mrtr), and a form or a URL-mode sign-in takes minutes, while TOOLPLANE_UPSTREAM_TIMEOUT_MS bounds
 * an upstream's silence (here 1 s; each client answers after 2.5 s).
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { type EverythingHttp, startEverythingHttp } from "../support/upstream-everything.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  latestToolCall,
  remoteProvider,
} from "./gateway-fixtures.ts";

const SILENCE_MS = 1_000;
const ANSWER_AFTER_MS = 2_500;

let t: StartedTestServer;
let everything: EverythingHttp;
let session: CreatedSession;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  // Read when the gateway is made.
  process.env.TOOLPLANE_UPSTREAM_TIMEOUT_MS = String(SILENCE_MS);
  [t, everything] = await Promise.all([startTestServer(), startEverythingHttp()]);
  const provider = await remoteProvider(t.db, "everything-http", everything.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Everything");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
});

afterAll(async () => {
  delete process.env.TOOLPLANE_UPSTREAM_TIMEOUT_MS;
  await Promise.all(closers.map((close) => close()));
  await upstreams.closeAll();
  await Promise.all([everything?.close(), t?.close()]);
});

const later = <T>(value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ANSWER_AFTER_MS));
const requestInit = () => ({ headers: { Authorization: `Bearer ${session.secret}` } });

describe("a client that takes longer than the upstream timeout to answer", () => {
  it("answers a 2025 upstream's elicitation as a 2025 client, and the call succeeds", async () => {
    const client = new Client({ name: "slow-person", version: "1.0.0" }, { capabilities: { elicitation: {} } });
    await client.connect(new StreamableHTTPClientTransport(endpointOf(t, session), { requestInit: requestInit() }));
    closers.push(() => client.close());
    client.setRequestHandler(ElicitRequestSchema, () => later({ action: "accept", content: { name: "Ada" } }));
    const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    expect(elicited.isError).toBeFalsy();
    expect(JSON.stringify(elicited.content)).toContain("Ada");
    expect(await latestToolCall(t, session.id)).toMatchObject({ status: "succeeded" });
  });

  it("answers it as a 2026-07-28 client in an input_required round, and the call succeeds", async () => {
    const client = new ModernClient(
      { name: "slow-modern-person", version: "1.0.0" },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new ModernTransport(endpointOf(t, session), { requestInit: requestInit() }));
    closers.push(() => client.close());
    client.setRequestHandler("elicitation/create", () => later({ action: "accept", content: { name: "Grace" } }));
    const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    expect(elicited.isError).toBeFalsy();
    expect(JSON.stringify(elicited.content)).toContain("Grace");
    expect(await latestToolCall(t, session.id)).toMatchObject({ status: "succeeded" });
  });

  it("still times out an upstream that is silent without having asked anything", async () => {
    const client = new Client({ name: "patient", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(endpointOf(t, session), { requestInit: requestInit() }));
    closers.push(() => client.close());
    // server-everything's trigger-long-running-operation reports progress only when asked; 3 s in one step.
    const silent = await client.callTool({
      name: "trigger-long-running-operation",
      arguments: { duration: 3, steps: 1 },
    });
    expect(silent.isError).toBe(true);
    expect(JSON.stringify(silent.content)).toContain(`did not answer within ${SILENCE_MS} ms`);
  });
});
