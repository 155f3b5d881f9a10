import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import { answeredRecords } from "../../mcp/answered-records.ts";
import type { Gateway } from "../../mcp/gateway.ts";
import type { LoadGatewaySession } from "../../mcp/gateway-session.ts";

type ToolCall = components["schemas"]["ToolCall"];
type ToolCallCreate = components["schemas"]["ToolCallCreate"];

export interface ToolCallFilters extends ListParams {
  session_template_id?: string[];
  session_provider_id?: string[];
  provider_id?: string[];
  provider_deployment_id?: string[];
  provider_config_id?: string[];
  provider_auth_config_id?: string[];
  tool_id?: string[];
}

export class ToolCallService {
  constructor(
    private readonly db: Db,
    private readonly gateway: Gateway,
    private readonly load: LoadGatewaySession,
  ) {}

  /** The calls of the instance, or of one of its sessions; every filter holds (each is any-of). */
  async list(instanceId: string, filters: ToolCallFilters, sessionId?: string) {
    if (sessionId !== undefined) await this.assertSession(instanceId, sessionId);
    await answeredRecords.written();
    let query = this.db
      .selectFrom("tool_calls as t")
      .innerJoin("sessions as s", "s.id", "t.session_id")
      .selectAll("t")
      .select("s.consumer_id")
      .where("t.instance_id", "=", instanceId);
    if (sessionId !== undefined) query = query.where("t.session_id", "=", sessionId);
    for (const column of ["session_provider_id", "provider_id", "provider_deployment_id"] as const) {
      const ids = filters[column];
      if (ids) query = query.where(`t.${column}`, "in", ids);
    }
    if (filters.tool_id) query = query.where("t.tool_key", "in", filters.tool_id);
    // These live on the session provider; a provider without its own config uses the deployment's default.
    const viaProvider = [
      [filters.session_template_id, sql.ref("sp.session_template_id")],
      [filters.provider_auth_config_id, sql.ref("sp.provider_auth_config_id")],
      [filters.provider_config_id, sql`coalesce(sp.provider_config_id, d.default_config_id)`],
    ] as const;
    for (const [ids, value] of viaProvider) {
      if (!ids) continue;
      query = query.where(({ exists, selectFrom }) =>
        exists(
          selectFrom("session_providers as sp")
            .innerJoin("provider_deployments as d", "d.id", "sp.provider_deployment_id")
            .select(sql`1`.as("one"))
            .whereRef("sp.id", "=", "t.session_provider_id")
            .where(sql<boolean>`${value} in (${sql.join(ids)})`),
        ),
      );
    }
    const { rows, pagination } = await paginate(query, "t.id", filters);
    return { items: rows.map(toApi), pagination };
  }

  async get(instanceId: string, id: string, sessionId?: string): Promise<ToolCall> {
    if (sessionId !== undefined) await this.assertSession(instanceId, sessionId);
    await answeredRecords.written();
    let query = this.db
      .selectFrom("tool_calls as t")
      .innerJoin("sessions as s", "s.id", "t.session_id")
      .selectAll("t")
      .select("s.consumer_id")
      .where("t.instance_id", "=", instanceId)
      .where("t.id", "=", id);
    if (sessionId !== undefined) query = query.where("t.session_id", "=", sessionId);
    const row = await query.executeTakeFirst();
    if (!row) throw ApiError.notFound("session.tool_call", id);
    return toApi(row);
  }

  /**
   * Calls a tool as an MCP client would and waits for the outcome (bounded by the upstream timeout, after which
   * the call is `failed` with `timeout`). Only active sessions take calls; an unknown key is a 404, not recorded.
   */
  async create(instanceId: string, sessionId: string, body: ToolCallCreate): Promise<ToolCall> {
    const session = await this.load(sessionId);
    if (!session || session.instanceId !== instanceId) throw ApiError.notFound("session", sessionId);
    if (session.status !== "active") {
      throw new ApiError(
        "conflict",
        `Session ${sessionId} is ${session.status}; only active sessions take tool calls.`,
        {
          entity: "session",
        },
      );
    }
    await this.gateway.touch(sessionId, 1, false);
    const outcome = await this.gateway.call(session, body.tool_id, body.input, {
      transport: "tool_call",
      connectionId: null,
      metadata: body.metadata ?? null,
    });
    if (!outcome) {
      throw new ApiError("not_found", `No provider of session ${sessionId} offers a tool with key ${body.tool_id}.`, {
        entity: "tool",
        hint: "List the session's tools with an MCP client (tools/list) on its connection_url.",
      });
    }
    // The call's writes read back only what the gateway needs (CallRecordSummary): the answer is the whole row.
    return this.get(instanceId, outcome.record.id);
  }

  private async assertSession(instanceId: string, sessionId: string): Promise<void> {
    const found = await this.db
      .selectFrom("sessions")
      .select("id")
      .where("instance_id", "=", instanceId)
      .where("id", "=", sessionId)
      .executeTakeFirst();
    if (!found) throw ApiError.notFound("session", sessionId);
  }
}

/** A call with the consumer of its session (sessions carry who started them from a portal). */
function toApi(r: Row<"tool_calls"> & { consumer_id: string | null }): ToolCall {
  return {
    object: "session.tool_call",
    id: r.id,
    tool_key: r.tool_key,
    type: "tool_call",
    status: r.status,
    source: "client",
    transport: r.transport,
    session_id: r.session_id,
    consumer_id: r.consumer_id,
    message_id: r.message_id,
    session_provider_id: r.session_provider_id,
    connection_id: r.connection_id,
    provider_run_id: r.provider_run_id,
    tool: r.tool,
    input: r.input,
    output: r.output as ToolCall["output"],
    error: r.error as ToolCall["error"],
    metadata: r.metadata,
    task:
      r.task_id === null
        ? null
        : {
            id: r.task_id,
            status: r.task_status as NonNullable<ToolCall["task"]>["status"],
            result: r.task_result as NonNullable<ToolCall["task"]>["result"],
            error: r.task_error as NonNullable<ToolCall["task"]>["error"],
            updated_at: iso(r.task_updated_at ?? r.created_at),
          },
    answers_call_id: r.answers_call_id,
    created_at: iso(r.created_at),
    completed_at: isoOrNull(r.completed_at),
  };
}
