import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Db } from "../db/database.ts";
import type { JsonObject, Row } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
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

/**
 * The gateway's core, shared by the MCP endpoint and the tool-calls API: aggregates the tools of a session's
 * providers and routes calls to their upstreams, recording each call. Holds no session state: everything is read
 * from the database per request, and upstream connections come from the process's pool.
 */
export class Gateway {
  private readonly credentials: UpstreamCredentials;

  constructor(
    private readonly db: Db,
    secrets: SecretBox,
    private readonly pool: UpstreamPool = upstreams,
    readonly timeoutMs: number = upstreamTimeoutMs(),
  ) {
    this.credentials = new UpstreamCredentials({ db, secrets });
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
    await this.db
      .insertInto("tool_calls")
      .values({
        id,
        instance_id: session.instanceId,
        session_id: session.id,
        session_provider_id: provider.sessionProviderId,
        provider_id: provider.providerId,
        provider_deployment_id: provider.providerDeploymentId,
        tool_key: key,
        transport: origin.transport,
        message_id: newId("smg"),
        connection_id: origin.connectionId,
        tool: JSON.stringify({
          name: tool.name,
          description: tool.description ?? null,
          input_schema: tool.inputSchema,
        }),
        input: input === undefined ? null : JSON.stringify(input),
        metadata: origin.metadata ? JSON.stringify(origin.metadata) : null,
      })
      .execute();

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
    const record = await this.db
      .updateTable("tool_calls")
      .set({
        status: result ? "succeeded" : "failed",
        provider_run_id: upstream.runId,
        output: result ? JSON.stringify(result) : null,
        error: failure ? JSON.stringify({ code: failure.code, message: failure.message }) : null,
        completed_at: new Date(),
      })
      .where("id", "=", id)
      .where("status", "=", "waiting_for_response")
      .returningAll()
      .executeTakeFirst();
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
