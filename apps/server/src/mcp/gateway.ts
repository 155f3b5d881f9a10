import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Db } from "../db/database.ts";
import type { JsonObject, Row } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
import { prepared } from "../lib/prepared.ts";
import { UpstreamCredentials } from "../oauth/upstream-credentials.ts";
import type { UpstreamTarget } from "../runtimes/connect.ts";
import { type Upstream, UpstreamFailure, type UpstreamPool, upstreams, upstreamTimeoutMs } from "../runtimes/pool.ts";
import { applyTransformer } from "../runtimes/transformer.ts";
import type { SecretBox } from "../secrets/secret-box.ts";
import type { GatewaySession, GatewaySessionProvider } from "./gateway-session.ts";
import { assignToolKeys } from "./tool-keys.ts";

/** A tool of the session under its session-wide key, with the upstream that serves it. */
export interface SessionTool {
  key: string;
  tool: Tool;
  provider: GatewaySessionProvider;
  upstream: Upstream;
}

export interface CallOrigin {
  transport: "mcp" | "tool_call";
  /** The MCP client connection, when the endpoint has one (the legacy SSE transport). */
  connectionId: string | null;
  metadata?: JsonObject | null;
}

export interface CallOutcome {
  record: Row<"tool_calls">;
  result: CallToolResult | null;
  failure: UpstreamFailure | null;
}

/** How long a session counts as `connected` after its last MCP request. */
const CONNECTED_FOR_MS = 5 * 60_000;

const RECORD_FIELDS = [
  "id",
  "instanceId",
  "sessionId",
  "sessionProviderId",
  "providerId",
  "providerDeploymentId",
  "toolKey",
  "transport",
  "messageId",
  "connectionId",
  "tool",
  "input",
  "metadata",
] as const;
const COMPLETE_FIELDS = ["id", "status", "runId", "output", "error", "completedAt"] as const;

/**
 * The gateway's core, shared by the MCP endpoint and the tool-calls API: aggregates the tools of a session's
 * providers and routes calls to their upstreams, recording each call. Holds no session state: everything is read
 * from the database per request, and upstream connections come from the process's pool.
 */
export class Gateway {
  private readonly credentials: UpstreamCredentials;
  // The two writes of every tool call, compiled once (see lib/prepared.ts).
  private readonly recordQuery;
  private readonly completeQuery;

  constructor(
    private readonly db: Db,
    secrets: SecretBox,
    private readonly pool: UpstreamPool = upstreams,
    readonly timeoutMs: number = upstreamTimeoutMs(),
  ) {
    this.credentials = new UpstreamCredentials({ db, secrets });
    this.recordQuery = prepared(RECORD_FIELDS, (p) =>
      db.insertInto("tool_calls").values({
        id: p.id,
        instance_id: p.instanceId,
        session_id: p.sessionId,
        session_provider_id: p.sessionProviderId,
        provider_id: p.providerId,
        provider_deployment_id: p.providerDeploymentId,
        tool_key: p.toolKey,
        transport: p.transport as CallOrigin["transport"],
        message_id: p.messageId,
        connection_id: p.connectionId,
        tool: p.tool,
        input: p.input,
        metadata: p.metadata,
      }),
    );
    this.completeQuery = prepared(COMPLETE_FIELDS, (p) =>
      db
        .updateTable("tool_calls")
        .set({
          status: p.status as "succeeded" | "failed",
          provider_run_id: p.runId,
          output: p.output,
          error: p.error,
          completed_at: p.completedAt,
        })
        .where("id", "=", p.id)
        .where("status", "=", "waiting_for_response")
        .returningAll(),
    );
  }

  /**
   * The session's tools, every provider listed concurrently. A provider whose upstream cannot be reached (or whose
   * credentials are unusable) contributes no tools rather than failing the list; `failures` says which.
   */
  async tools(session: GatewaySession): Promise<{ tools: SessionTool[]; failures: Map<string, Error> }> {
    const failures = new Map<string, Error>();
    const listed = await Promise.all(
      session.providers.map(async (provider) => {
        try {
          const upstream = await this.upstreamFor(session.instanceId, provider);
          return { provider, upstream, tools: await upstream.listTools(this.timeoutMs) };
        } catch (error) {
          failures.set(provider.sessionProviderId, error instanceof Error ? error : new Error(String(error)));
          return null;
        }
      }),
    );
    const reached = listed.filter((l) => l !== null);
    const keys = assignToolKeys(
      reached.map((l) => ({
        id: l.provider.sessionProviderId,
        slug: l.provider.providerSlug,
        names: l.tools.map((t) => t.name),
      })),
    );
    const tools = reached.flatMap((l, i) =>
      l.tools
        .map((tool, j) => ({ key: keys[i]?.[j] ?? tool.name, tool, provider: l.provider, upstream: l.upstream }))
        .filter(({ key, tool }) => {
          const allowed = l.provider.toolKeys;
          return !allowed || allowed.includes(key) || allowed.includes(tool.name);
        }),
    );
    return { tools, failures };
  }

  /**
   * Calls the tool with the session-wide `key`: records it `waiting_for_response`, forwards it, and completes the
   * record with the result or the failure. Null when no provider of the session offers the key (nothing recorded).
   */
  async call(
    session: GatewaySession,
    key: string,
    input: Record<string, unknown> | undefined,
    origin: CallOrigin,
  ): Promise<CallOutcome | null> {
    const { tools } = await this.tools(session);
    const target = tools.find((t) => t.key === key);
    if (!target) return null;
    const { provider, tool, upstream } = target;
    const id = newId("tcl");
    // The record is written while the call is under way (it never waits for the database first); its insert is
    // awaited before the completion, and a failed insert fails the request (the call ran but is not recorded).
    const recorded = this.db.executeQuery(
      this.recordQuery({
        id,
        instanceId: session.instanceId,
        sessionId: session.id,
        sessionProviderId: provider.sessionProviderId,
        providerId: provider.providerId,
        providerDeploymentId: provider.providerDeploymentId,
        toolKey: key,
        transport: origin.transport,
        messageId: newId("smg"),
        connectionId: origin.connectionId,
        tool: JSON.stringify({
          name: tool.name,
          description: tool.description ?? null,
          input_schema: tool.inputSchema,
        }),
        input: input === undefined ? null : JSON.stringify(input),
        metadata: origin.metadata ? JSON.stringify(origin.metadata) : null,
      }),
    );
    recorded.catch(() => undefined); // awaited below; this only keeps it from counting as unhandled meanwhile

    let result: CallToolResult | null = null;
    let failure: UpstreamFailure | null = null;
    try {
      result = await upstream.callTool(tool.name, input, this.timeoutMs);
    } catch (error) {
      failure =
        error instanceof UpstreamFailure
          ? error
          : new UpstreamFailure("upstream_unavailable", "The upstream MCP server failed the request.");
    }
    await recorded;
    const completed = await this.db.executeQuery(
      this.completeQuery({
        id,
        status: result ? "succeeded" : "failed",
        runId: upstream.runId,
        output: result ? JSON.stringify(result) : null,
        error: failure ? JSON.stringify({ code: failure.code, message: failure.message }) : null,
        completedAt: new Date(),
      }),
    );
    const record = completed.rows[0];
    if (record) return { record, result, failure };
    // Failed meanwhile because its session or session provider was removed: that outcome stands.
    const removed = await this.db.selectFrom("tool_calls").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    const message = removed.error?.message ?? "The session provider was removed during the call.";
    return { record: removed, result: null, failure: new UpstreamFailure("provider_removed", message) };
  }

  /** Counts received messages on the session and, for MCP traffic, marks it connected for a while. */
  async touch(sessionId: string, messages: number, connected: boolean): Promise<void> {
    await this.db
      .updateTable("sessions")
      .set((eb) => ({
        message_count: eb("message_count", "+", messages),
        ...(connected ? { connected_until: new Date(Date.now() + CONNECTED_FOR_MS) } : {}),
      }))
      .where("id", "=", sessionId)
      .where("status", "=", "active")
      .execute();
  }

  /**
   * The upstream of a provider with its credentials and config applied. Credentials are fetched before every
   * connection lookup (an expired OAuth token is refreshed there) and become headers of remote upstreams:
   * OAuth → `Authorization: <token_type> <access_token>`; manual → `Authorization: Bearer <token>` when the
   * values have a string `token`. Config reaches the upstream only through the runtime's transformer.
   */
  private async upstreamFor(instanceId: string, provider: GatewaySessionProvider): Promise<Upstream> {
    const { runtime } = provider;
    const applied = applyTransformer(runtime.transformer, provider.config);
    const headers = { ...applied.headers };
    if (provider.providerAuthConfigId) {
      const credential = await this.credentials.credentialFor(instanceId, provider.providerAuthConfigId);
      if (credential.kind === "oauth") {
        const type = /^bearer$/i.test(credential.tokenType) ? "Bearer" : credential.tokenType;
        headers.Authorization = `${type} ${credential.accessToken}`;
      } else if (typeof credential.values.token === "string") {
        headers.Authorization = `Bearer ${credential.values.token}`;
      }
    }
    const target: UpstreamTarget = { runtime, ...applied, headers };
    return this.pool.get(provider.sessionProviderId, target);
  }
}
