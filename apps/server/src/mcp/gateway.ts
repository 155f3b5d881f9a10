import { setTimeout as sleep } from "node:timers/promises";
import type { ClientCapabilities, Implementation, Progress } from "@modelcontextprotocol/client";
import { ProtocolError, ProtocolErrorCode, UriTemplate } from "@modelcontextprotocol/server";
import { ApiError } from "@toolplane/server-stubs";
import { CompiledQuery, type Insertable, sql } from "kysely";
import type { Db } from "../db/database.ts";
import type { JsonObject, Row, Runtime, ToolCallStatus, ToolCallsTable } from "../db/schema.ts";
import { linkedAbortController } from "../lib/abort-signal-any.ts";
import { Batcher } from "../lib/batcher.ts";
import { isDatabaseUnavailable, isUniqueViolation } from "../lib/db-errors.ts";
import { type Freshness, mergedFreshness, STALE } from "../lib/freshness.ts";
import { newId } from "../lib/ids.ts";
import { prepared } from "../lib/prepared.ts";
import { storableJson } from "../lib/storable-json.ts";
import { ReauthLinks } from "../oauth/reauth.ts";
import { UpstreamCredentials } from "../oauth/upstream-credentials.ts";
import { gatewayLog, toolCallFinished } from "../observability/gateway.ts";
import { labelUpstream } from "../observability/metrics.ts";
import { traceUpstreamRequest } from "../observability/tracing.ts";
import type { UpstreamTarget } from "../runtimes/connect.ts";
import { HEADER_MISMATCH, mcpParamMismatch } from "../runtimes/param-headers.ts";
import {
  type ListMethod,
  type Upstream,
  type UpstreamCaller,
  UpstreamFailure,
  type UpstreamPool,
  upstreamCaller,
  upstreamCapabilities,
  upstreamMaxMs,
  upstreams,
  upstreamTimeoutMs,
} from "../runtimes/pool.ts";
import { runnerProblem } from "../runtimes/runner.ts";
import { applyTransformer, configuredRuntime } from "../runtimes/transformer.ts";
import type { SecretBox } from "../secrets/secret-box.ts";
import { answeredRecords } from "./answered-records.ts";
import type { GatewaySession, GatewaySessionProvider, LoadGatewaySession } from "./gateway-session.ts";
import { Namespaces } from "./keys.ts";
import { SessionActivity } from "./session-activity.ts";
import {
  coreCreateTaskResult,
  coreTasksViaExtension,
  declaringTasksExtension,
  extensionCreateTaskResult,
  LEGACY_ENDED,
  legacyTaskOutcome,
  runsAsTask,
  TASKS_EXTENSION,
} from "./task-eras.ts";
import { tasksFollowed } from "./task-follower.ts";

type Item = Record<string, unknown>;
/** How old a list may be when a key is not in it, before it is read again (see find). */
const FRESH_ENOUGH_MS = 1_000;

/** The member of a listed item that the gateway namespaces, per list. */
const NAMED_BY: Record<ListMethod, "name" | "uri" | "uriTemplate"> = {
  "tools/list": "name",
  "prompts/list": "name",
  "resources/list": "uri",
  "resources/templates/list": "uriTemplate",
};

/** What the client of a request declared and how to reach it while the request runs. */
export interface Downstream {
  /** The client's capabilities; the upstream client declares the relayed ones (sampling, elicitation, roots). */
  capabilities?: ClientCapabilities;
  /** Server→client requests and request-scoped notifications of an upstream, for the client (per provider). */
  caller?: (provider: GatewaySessionProvider) => UpstreamCaller;
  /**
   * The client's connection (2025 session, SSE stream), if it has one. A client that declared roots gets upstream
   * connections of its own: roots are the client's, and an upstream asks for them outside any request.
   */
  connectionId?: string | null;
  /** A provider left out of a listing for being slow answered after all: the client may list again. */
  onLateListing?: (method: ListMethod) => void;
  /** Told of every upstream used for the client, to relay what the upstream sends outside requests. */
  watch?: (provider: GatewaySessionProvider, upstream: Upstream) => void;
}

/** Where a tool or prompt key leads. */
export interface Located {
  provider: GatewaySessionProvider;
  upstream: Upstream;
  item: Item;
  name: string;
}

/** Where a resource URI (or task id) leads: the upstream's own. */
export interface LocatedUri {
  provider: GatewaySessionProvider;
  upstream: Upstream;
  uri: string;
}

/** A provider of the session that could not be listed or reached, and why. */
export interface ProviderFailure {
  provider: GatewaySessionProvider;
  error: UpstreamFailure;
}

export interface CallOrigin {
  transport: "mcp" | "tool_call";
  /** The MCP client connection, when the endpoint has one (2025 sessions and legacy SSE). */
  connectionId: string | null;
  metadata?: JsonObject | null;
  /** The call whose input_required round this call answers, as the client's retry names it (see rounds.ts). */
  answersCallId?: string;
}

export interface CallOptions extends Downstream {
  /** The client cancelled: forwarded upstream, and the call is recorded `cancelled`. */
  signal?: AbortSignal;
  onprogress?: (progress: Progress) => void;
  /** Other params of the client's `tools/call` (`_meta`, `task`, `inputResponses`, `requestState`), passed on. */
  params?: Record<string, unknown>;
  /** The request waits for something to end (`tasks/result`): silence is expected, only the hard limit applies. */
  untilDone?: boolean;
  /** A 2026-07-28 request's headers, whose `Mcp-Param-*` ones must agree with the arguments (see ServingContext). */
  paramHeaders?: Record<string, string | string[] | undefined>;
  /** The called tool's input schema as its upstream listed it: the source of the call's `Mcp-Param-*` headers. */
  toolSchema?: unknown;
  /**
   * The request is a 2026-07-28 one that declared the Tasks extension: a task-capable tool of a 2025-11-25 upstream
   * runs as a task (see task-eras.ts).
   */
  tasksExtension?: boolean;
}

/**
 * What a call's writes read back of its record: what the gateway needs to answer and count it. Reading back the
 * whole row (its tool schema, input and output parsed again) kept pg at 5.3 % of the gateway's busy time at 16 calls
 * in flight, against 3.3 % now; the API reads the row when it answers with it.
 */
export type CallRecordSummary = Pick<Row<"tool_calls">, (typeof SUMMARY_COLUMNS)[number]>;
const SUMMARY_COLUMNS = ["id", "session_id", "session_provider_id", "status"] as const;

export interface CallOutcome {
  record: CallRecordSummary;
  /** The upstream's result as it came (a tool result, or an `input_required` or task result). */
  result: Item | null;
  failure: UpstreamFailure | null;
}

/**
 * How long a call may run before its record is written (TOOLPLANE_CALL_RECORD_AFTER_MS, default 100 ms; 0 writes
 * it as the call starts). A call that ends sooner is written once, complete; a longer one shows up in the API as
 * `waiting_for_response` from then on. One write instead of two took 14-19 % more calls per second at 16 in
 * flight, with a third less database CPU per call (BENCHMARKS.md).
 */
export const callRecordAfterMs = (): number => {
  const given = process.env.TOOLPLANE_CALL_RECORD_AFTER_MS;
  const value = Number(given);
  return given && Number.isInteger(value) && value >= 0 ? value : 100;
};

/** How long a running call's lease lasts (TOOLPLANE_CALL_LEASE_MS, default 1 min); renewed every third of it. */
export const callLeaseMs = () => envMs("TOOLPLANE_CALL_LEASE_MS", 60_000);

interface RunningCall {
  id: string;
  db: Db;
  finished: Promise<void>;
}

/** A call's refusal when its tool's schema and its `Mcp-Param-*` headers disagree (SEP-2243), if they do. */
function paramHeaderRefusal(
  found: Located | { failure: ProviderFailure },
  input: unknown,
  headers: Record<string, string | string[] | undefined>,
): ProtocolError | undefined {
  const mismatch = "item" in found ? mcpParamMismatch(found.item.inputSchema, input, headers) : undefined;
  return mismatch
    ? new ProtocolError(HEADER_MISMATCH, `Bad Request: the request headers and body disagree: ${mismatch}`)
    : undefined;
}

/**
 * The tool calls this process is running, whichever gateway instance started them. While they run their leases
 * are renewed; on shutdown the ones still running are failed (`shutdown`), so every client gets an answer and no
 * record stays `waiting_for_response` (a process that dies without shutting down leaves leases that run out:
 * failExpiredCalls).
 */
class CallsInFlight {
  private readonly running = new Map<AbortController, RunningCall>();
  private renewer: NodeJS.Timeout | null = null;

  /**
   * Registers the call with record `id` until `finish` is called (after its record is complete). Its signal
   * aborts on shutdown, and when `cancelled` (the client's) does.
   */
  start(id: string, db: Db, cancelled?: AbortSignal): { signal: AbortSignal; finish: () => void } {
    const { controller, unlink } = linkedAbortController(cancelled);
    let finish: () => void = () => undefined;
    this.running.set(controller, { id, db, finished: new Promise<void>((resolve) => (finish = resolve)) });
    this.renewer ??= setInterval(() => void this.renew(), Math.max(100, Math.floor(callLeaseMs() / 3))).unref();
    return {
      signal: controller.signal,
      finish: () => {
        unlink();
        this.running.delete(controller);
        finish();
      },
    };
  }

  get size(): number {
    return this.running.size;
  }

  /** Fails every running call; resolves once their records are written and their answers on their way. */
  async stopAll(): Promise<void> {
    const reason = new UpstreamFailure("shutdown", "This server stopped before the upstream answered.");
    const finished = [...this.running.values()].map((call) => call.finished);
    for (const controller of this.running.keys()) controller.abort(reason);
    await Promise.all(finished);
  }

  private async renew(): Promise<void> {
    const byDb = new Map<Db, string[]>();
    for (const { id, db } of this.running.values()) byDb.set(db, [...(byDb.get(db) ?? []), id]);
    const until = new Date(Date.now() + callLeaseMs());
    await Promise.all(
      [...byDb].map(
        ([db, ids]) =>
          db
            .updateTable("tool_calls")
            .set({ lease_until: until })
            .where("id", "in", ids)
            .where("status", "=", "waiting_for_response")
            .execute()
            .catch(() => undefined), // a database outage: the next renewal tries again
      ),
    );
  }
}

/**
 * Fails the calls whose lease ran out: their process died before finishing them. Run at start and periodically by
 * every server process; returns how many it failed.
 */
export async function failExpiredCalls(db: Db): Promise<number> {
  const failed = await db
    .updateTable("tool_calls")
    .set({
      status: "failed",
      error: JSON.stringify({
        code: "shutdown",
        message: "The server process running this call stopped before it finished.",
      }),
      completed_at: new Date(),
    })
    .where("status", "=", "waiting_for_response")
    .where("lease_until", "<", new Date())
    .executeTakeFirst();
  return Number(failed.numUpdatedRows);
}
export const callsInFlight = new CallsInFlight();

const envMs = (name: string, fallback: number): number => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};
/** How long a listing waits for any one provider before leaving it out (TOOLPLANE_UPSTREAM_LIST_TIMEOUT_MS). */
export const listTimeoutMs = () => envMs("TOOLPLANE_UPSTREAM_LIST_TIMEOUT_MS", 5_000);

/**
 * What a session's request saw of a task: its status, and its outcome once it has one: the tool's result, or (the
 * Tasks extension's failed task) the JSON-RPC error the call ended with.
 */
export interface TaskSeen {
  status: string;
  result?: Item;
  error?: Item;
}

/**
 * What a task as the upstream showed it says: its status, and the outcome the Tasks extension's DetailedTask carries
 * (tasks/get, notifications/tasks): the `result` of a completed task, the JSON-RPC `error` of a failed one.
 */
export function taskSeenOf(task: Item & { status: string }): TaskSeen {
  const { status, result, error } = task;
  return {
    status,
    ...(result && typeof result === "object" ? { result: result as Item } : {}),
    ...(error && typeof error === "object" ? { error: error as Item } : {}),
  };
}

/** MCP's task statuses, and those a task never leaves. */
const TERMINAL_TASK_STATUSES = ["completed", "failed", "cancelled"];
const TASK_STATUSES = ["working", "input_required", ...TERMINAL_TASK_STATUSES];

/** A call's record as first written (`waiting_for_response`); JSON columns as JSON text. */
type CallRecord = Record<(typeof RECORD_COLUMNS)[number], string | null>;
const RECORD_COLUMNS = [
  "id",
  "instance_id",
  "session_id",
  "session_provider_id",
  "provider_id",
  "provider_deployment_id",
  "tool_key",
  "transport",
  "message_id",
  "connection_id",
  "tool",
  "input",
  "metadata",
  "created_at",
  "answers_call_id",
] as const;
/** A call's record written once, complete: its first columns and how it ended. */
type FinishedRecord = Record<(typeof FINISHED_COLUMNS)[number], string | null>;
const FINISHED_COLUMNS = [...RECORD_COLUMNS, "status", "provider_run_id", "output", "error", "completed_at"] as const;
/** Rows per finished-records statement: each size is a statement text of its own, prepared per connection. */
const MAX_FINISHED_BATCH = 32;
const FINISHED_CASTS: Partial<Record<(typeof FINISHED_COLUMNS)[number], string>> = {
  tool: "jsonb",
  input: "jsonb",
  output: "jsonb",
  error: "jsonb",
  metadata: "jsonb",
  created_at: "timestamptz",
  completed_at: "timestamptz",
};
/** How a call ended, as written into its record. */
interface CallCompletion {
  id: string;
  status: ToolCallStatus;
  runId: string | null;
  output: string | null;
  error: string | null;
  completedAt: Date;
}
const COMPLETE_FIELDS = ["id", "status", "runId", "output", "error", "completedAt"] as const;

/**
 * The gateway's core, shared by the MCP endpoint and the tool-calls API: merges the lists of a session's
 * providers under session-wide keys (see Namespaces) and routes requests to their upstreams, recording every tool
 * call. Holds no session state: everything is read from the database per request, and upstream connections come
 * from the process's pool.
 */
export class Gateway {
  private readonly credentials: UpstreamCredentials;
  private readonly reauth: ReauthLinks;
  private readonly activity: SessionActivity;
  // A tool call's writes, each group-committed across concurrent calls (see lib/batcher.ts): the record of a short
  // call written once, complete (finished); a longer one's record inserted while it runs, then completed.
  private readonly records: Batcher<CallRecord, void>;
  private readonly completions: Batcher<CallCompletion, CallRecordSummary | undefined>;
  private readonly finished: Batcher<FinishedRecord, CallRecordSummary | undefined>;

  private readonly pool: UpstreamPool = upstreams;
  readonly timeoutMs: number = upstreamTimeoutMs();
  readonly listMs: number = listTimeoutMs();
  readonly maxMs: number = upstreamMaxMs();

  constructor(
    private readonly db: Db,
    secrets: SecretBox,
    publicUrl: string,
    /**
     * The sessions as they are now (the MCP endpoint's loader, whose views are kept in memory until they change):
     * with it, an MCP client's call is answered as its record is written (see call).
     */
    private readonly sessions?: LoadGatewaySession,
  ) {
    this.credentials = new UpstreamCredentials({ db, secrets });
    this.reauth = new ReauthLinks(db, publicUrl);
    this.activity = new SessionActivity(db);
    // A lone write is a query compiled once (see lib/prepared.ts); a batch is one multi-row statement.
    const insertOne = prepared(RECORD_COLUMNS, (p) => db.insertInto("tool_calls").values(asInsert(p)));
    this.records = new Batcher(
      async (record) => {
        await db.executeQuery(insertOne(record));
      },
      async (records) => {
        await db.insertInto("tool_calls").values(records.map(asInsert)).execute();
        return records.map(() => undefined);
      },
    );
    const completeOne = prepared(COMPLETE_FIELDS, (p) =>
      db
        .updateTable("tool_calls")
        .set({
          status: p.status as ToolCallStatus,
          provider_run_id: p.runId,
          output: p.output,
          error: p.error,
          completed_at: p.completedAt,
        })
        .where("id", "=", p.id)
        .where("status", "=", "waiting_for_response")
        .returning(SUMMARY_COLUMNS),
    );
    this.completions = new Batcher(
      async (completion) => (await db.executeQuery(completeOne(completion))).rows[0],
      async (completions) => {
        const values = completions.map(
          (c) =>
            sql`(${c.id}, ${c.status}, ${c.runId}, ${c.output}::jsonb, ${c.error}::jsonb, ${c.completedAt}::timestamptz)`,
        );
        const { rows } = await sql<CallRecordSummary>`
          update tool_calls as t
          set status = v.status, provider_run_id = v.run_id, output = v.output, error = v.error,
              completed_at = v.completed_at
          from (values ${sql.join(values)}) as v(id, status, run_id, output, error, completed_at)
          where t.id = v.id and t.status = 'waiting_for_response'
          returning ${sql.join(SUMMARY_COLUMNS.map((column) => sql.ref(`t.${column}`)))}`.execute(db);
        const byId = new Map(rows.map((row) => [row.id, row]));
        return completions.map((c) => byId.get(c.id));
      },
    );
    this.finished = new Batcher(
      async (record) => (await db.executeQuery(insertFinished([record]))).rows[0],
      async (records) => {
        const { rows } = await db.executeQuery(insertFinished(records));
        const byId = new Map(rows.map((row) => [row.id, row]));
        return records.map((r) => byId.get(r.id ?? ""));
      },
      MAX_FINISHED_BATCH,
    );
  }

  /** A session's namespaces, built once per view (a view is shared by the requests it serves until it changes). */
  namespaces(session: GatewaySession): Namespaces {
    let names = namespacesOf.get(session);
    if (!names) {
      names = new Namespaces(session.providers.map((p) => ({ id: p.sessionProviderId, slug: p.providerSlug })));
      namespacesOf.set(session, names);
    }
    return names;
  }

  /**
   * One list of the session (tools, prompts, resources or templates), every provider asked concurrently. A provider
   * that has not answered within the list timeout is left out (and named in `failures`) once another provider has
   * answered: a hung provider never holds back the others' items. While none has, the listing waits on (up to the
   * upstream timeout): an empty list helps no client, and a server that is still starting (a package being
   * installed, 1,000 sessions connecting at once) answers a moment later.
   */
  async list(
    session: GatewaySession,
    method: ListMethod,
    downstream: Downstream = {},
  ): Promise<{
    items: { item: Item; provider: GatewaySessionProvider; name: string }[];
    failures: ProviderFailure[];
    freshness: Freshness;
  }> {
    const names = this.namespaces(session);
    const failures: ProviderFailure[] = [];
    const member = NAMED_BY[method];
    const race = new FirstAnswer();
    const parts: Freshness[] = [];
    const listed = await Promise.all(
      session.providers.map(async (provider) => {
        try {
          const upstream = await this.upstreamFor(session.instanceId, provider, downstream);
          const exposeUri = (uri: string) => names.uri(provider.sessionProviderId, uri);
          const listing = this.withCaller(provider, downstream, () => upstream.list(method, this.timeoutMs));
          const items = await race.bound(listing, this.listMs, () => downstream.onLateListing?.(method));
          parts.push(upstream.listFreshness(method));
          return items
            .filter((item) => method !== "tools/list" || allowedTool(provider, names, String(item.name)))
            .map((item) => {
              const own = String(item[member]);
              const exposed = member === "name" ? names.key(provider.sessionProviderId, own) : exposeUri(own);
              const listed = { ...item, [member]: exposed };
              return { item: method === "tools/list" ? withAppUri(listed, exposeUri) : listed, provider, name: own };
            });
        } catch (error) {
          failures.push({ provider, error: asFailure(error) });
          return [];
        }
      }),
    );
    const items = listed.flat();
    // A list that lost a provider is stale at once: the provider's items are back as soon as it answers.
    const freshness = failures.length > 0 ? STALE : mergedFreshness(parts);
    return { items: member === "name" ? items : qualifyShared(items, member, names), failures, freshness };
  }

  /**
   * The provider, upstream and upstream name behind a tool or prompt key. Only the providers the key's prefix
   * can belong to are asked, so a call never waits on another provider. Null when no provider offers the key; a
   * provider that cannot be reached (or whose credentials need renewing) fails with that reason, naming it.
   */
  async locate(
    session: GatewaySession,
    method: "tools/list" | "prompts/list",
    key: string,
    downstream: Downstream = {},
  ): Promise<Located | null> {
    const found = await this.find(session, method, key, downstream);
    if (found && "failure" in found) throw namingProvider(found.failure);
    return found;
  }

  private async find(
    session: GatewaySession,
    method: "tools/list" | "prompts/list",
    key: string,
    downstream: Downstream,
  ): Promise<Located | { failure: ProviderFailure } | null> {
    const names = this.namespaces(session);
    const candidates = new Set(names.candidates(key));
    let failure: ProviderFailure | null = null;
    for (const provider of session.providers) {
      if (!candidates.has(provider.sessionProviderId)) continue;
      try {
        const upstream = await this.upstreamFor(session.instanceId, provider, downstream);
        // The key names this provider: waiting for it is waiting for the call's own upstream.
        const named = (items: Item[]) =>
          items.find((i) => names.key(provider.sessionProviderId, String(i.name)) === key);
        const list = (maxAgeMs?: number) =>
          this.withCaller(provider, downstream, () => upstream.list(method, this.timeoutMs, maxAgeMs));
        // Not in the list as kept: the upstream may have added it since, without saying so (at most one read a
        // second, however many calls name a key it does not have).
        const item = named(await list()) ?? named(await list(FRESH_ENOUGH_MS));
        if (!item) continue;
        if (method === "tools/list" && !allowedTool(provider, names, String(item.name))) continue;
        return { provider, upstream, item, name: String(item.name) };
      } catch (error) {
        failure ??= { provider, error: asFailure(error) };
      }
    }
    return failure ? { failure } : null;
  }

  /**
   * The provider and upstream behind a URI the client sent (resources and resource templates): by its prefix, or,
   * for a URI without one (a web URI, which stays as it is, or an upstream's own URI that a model read in a tool's
   * output), the one provider whose resources or templates (the lists as kept) hold it. Null when none does; a
   * ProtocolError naming the session-wide URIs when several do.
   */
  async locateUri(session: GatewaySession, uri: string, downstream: Downstream = {}): Promise<LocatedUri | null> {
    const resolved = this.namespaces(session).resolveUri(uri) ?? (await this.listing(session, uri, downstream));
    return this.reach(session, resolved, downstream);
  }

  /** The provider and upstream behind a task id the client sent, by its prefix (see exposeTaskIds). */
  async locateTask(session: GatewaySession, taskId: string, downstream: Downstream = {}): Promise<LocatedUri | null> {
    return this.reach(session, this.namespaces(session).resolveUri(taskId), downstream);
  }

  /** The provider whose lists hold an upstream's own URI (its resources', or its templates' by matching). */
  private async listing(
    session: GatewaySession,
    uri: string,
    downstream: Downstream,
  ): Promise<{ providerId: string; uri: string } | null> {
    const [resources, templates] = await Promise.all([
      this.list(session, "resources/list", downstream),
      this.list(session, "resources/templates/list", downstream),
    ]);
    const owners = [
      ...resources.items.filter((entry) => entry.name === uri),
      ...templates.items.filter((entry) => entry.name === uri || matchesTemplate(entry.name, uri)),
    ];
    const providers = new Set(owners.map((entry) => entry.provider.sessionProviderId));
    const [providerId, ...others] = providers;
    if (!providerId) {
      // A provider that could not say may be the one: its failure is the answer, as for a key (see find).
      const failure = [...resources.failures, ...templates.failures][0];
      if (failure) throw namingProvider(failure);
      return null;
    }
    if (others.length > 0) {
      const names = this.namespaces(session);
      const choices = [...providers].map((id) => names.qualified(id, uri)).join(", ");
      throw new ProtocolError(-32002, `Resource ${uri} is offered by several providers; read one of ${choices}.`, {
        uri,
      });
    }
    return { providerId, uri };
  }

  private async reach(
    session: GatewaySession,
    resolved: { providerId: string; uri: string } | null,
    downstream: Downstream,
  ): Promise<LocatedUri | null> {
    const provider = session.providers.find((p) => p.sessionProviderId === resolved?.providerId);
    if (!resolved || !provider) return null;
    try {
      return {
        provider,
        upstream: await this.upstreamFor(session.instanceId, provider, downstream),
        uri: resolved.uri,
      };
    } catch (error) {
      throw asFailure(error);
    }
  }

  /**
   * Who a session of one provider is to its clients: that provider's server, by the identity (`serverInfo`) it gave
   * when this process last reached it. Undefined with several providers (the gateway is then the one server its
   * clients see) and before the server was first reached.
   */
  upstreamIdentity(session: GatewaySession): Implementation | undefined {
    const [only, ...others] = session.providers;
    return only && others.length === 0 ? this.pool.identityOf(only.sessionProviderId) : undefined;
  }

  /** Whether an upstream speaks 2026-07-28 (connecting first if needed). */
  async speaksModern(upstream: Upstream): Promise<boolean> {
    return (await upstream.describe(this.timeoutMs)).modern;
  }

  /** Any request to one upstream, on behalf of the client (its server→client requests and notifications relayed). */
  async forward(
    provider: GatewaySessionProvider,
    upstream: Upstream,
    method: string,
    params: Record<string, unknown> | undefined,
    options: CallOptions = {},
  ): Promise<Item> {
    return this.withCaller(provider, options, () =>
      traceUpstreamRequest(provider.providerSlug, method, params, (traced) =>
        upstream.request(method, traced, {
          timeoutMs: options.untilDone ? this.maxMs : this.timeoutMs,
          maxTotalMs: this.maxMs,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.toolSchema !== undefined ? { toolSchema: options.toolSchema } : {}),
          // Progress is always asked for: it is what lets a long call outlive the upstream timeout.
          onprogress: options.onprogress ?? (() => undefined),
        }),
      ),
    );
  }

  /**
   * The session's providers, connected: for capabilities and instructions. Each is waited for up to the list
   * timeout; a connection that takes longer goes on (up to the upstream timeout) for the requests that follow,
   * instead of being dropped and started again by the next one. One that cannot be described now (down, hung) has
   * no upstream and no capabilities, and `lastOffered` what its connection's server declared when last connected
   * (undefined when this process never connected it).
   */
  async describe(session: GatewaySession, downstream: Downstream = {}) {
    return Promise.all(
      session.providers.map(async (provider) => {
        let upstream: Upstream | undefined;
        try {
          upstream = await this.upstreamFor(session.instanceId, provider, downstream);
          const described = upstream.describe(this.timeoutMs);
          return { provider, upstream, ...(await new FirstAnswer(true).bound(described, this.listMs)) };
        } catch {
          const lastOffered = upstream?.lastOffered;
          return { provider, upstream: null, capabilities: {}, instructions: undefined, modern: false, lastOffered };
        }
      }),
    );
  }

  /**
   * The error a subscription to resource `uri` (session-wide) of `target` is refused with when its server does not
   * declare `resources.subscribe`, or undefined when it does: such a server would never announce an update (a 2025
   * one answers resources/subscribe with -32601; a 2026-07-28 one takes a listen filter naming it and sends nothing).
   */
  async subscriptionRefusal(target: LocatedUri, uri: string): Promise<ProtocolError | undefined> {
    const { capabilities } = await target.upstream.describe(this.timeoutMs);
    if (capabilities.resources?.subscribe) return undefined;
    const slug = target.provider.providerSlug;
    return new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Provider ${slug} does not offer resource subscriptions (its server does not declare resources.subscribe): ${uri} cannot be subscribed to.`,
      { uri, provider: slug },
    );
  }

  /**
   * The error a 2026-07-28 tools/call gets when its `Mcp-Param-*` headers (`headers`) disagree with its arguments,
   * or undefined when they agree or no provider offers the key: what `call` refuses, for a caller that must refuse
   * it with HTTP 400 before the SDK's server would answer it in-band (SEP-2243 requires the 400).
   */
  async paramHeaderRefusal(
    session: GatewaySession,
    key: string,
    input: unknown,
    headers: Record<string, string | string[] | undefined>,
    downstream: Downstream,
  ): Promise<ProtocolError | undefined> {
    const found = await this.find(session, "tools/list", key, downstream);
    return found ? paramHeaderRefusal(found, input, headers) : undefined;
  }

  /**
   * Calls the tool with the session-wide `key`: records it `waiting_for_response`, forwards it, and completes the
   * record with the result, the failure or the cancellation. Null when no provider of the session offers the key
   * (nothing recorded).
   */
  async call(
    session: GatewaySession,
    key: string,
    input: Record<string, unknown> | undefined,
    origin: CallOrigin,
    options: CallOptions = {},
  ): Promise<CallOutcome | null> {
    const startedAt = performance.now();
    // The record's time covers what the client waits: finding the tool (connecting, listing) included.
    const createdAt = new Date();
    const found = await this.find(session, "tools/list", key, options);
    if (!found) return null;
    // Refused before anything runs or is recorded, as a direct server refuses it (SEP-2243).
    const refusal = options.paramHeaders ? paramHeaderRefusal(found, input, options.paramHeaders) : undefined;
    if (refusal) throw refusal;
    // A provider that could not be reached to find the tool: the call is recorded as failed, naming the provider.
    const failed = "failure" in found ? namingProvider(found.failure) : null;
    const provider = "failure" in found ? found.failure.provider : found.provider;
    const upstream = "failure" in found ? null : found.upstream;
    const item: Item = "failure" in found ? {} : found.item;
    const name = "failure" in found ? key : found.name;
    const id = newId("tcl");
    // A round another session's client names is no round of this call: the link is dropped, the call goes on.
    const answers = origin.answersCallId ? await this.callOfSession(origin.answersCallId, session.id) : null;
    // The record is written while the call is under way (it never waits for the database first): once, complete,
    // when the call ends within callRecordAfterMs, else inserted then and completed at the end. Either write is
    // awaited before the answer, and a failed one fails the request (the call ran but is not recorded).
    const record: CallRecord = {
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
      tool: upstream
        ? storableJson({
            name,
            description: typeof item.description === "string" ? item.description : null,
            input_schema: item.inputSchema ?? null,
          })
        : null,
      input: input === undefined ? null : storableJson(input),
      metadata: origin.metadata ? storableJson(origin.metadata) : null,
      created_at: createdAt.toISOString(),
      answers_call_id: answers,
    };
    let recorded: Promise<void> | null = null;
    const insert = () => {
      recorded = this.records.add(record);
      recorded.catch(() => undefined); // awaited at the end; this only keeps it from counting as unhandled meanwhile
    };
    let insertLater: NodeJS.Timeout | undefined;
    const recordAfter = callRecordAfterMs();
    if (recordAfter === 0) insert();
    else insertLater = setTimeout(insert, recordAfter);

    let result: Item | null = null;
    let failure: UpstreamFailure | null = failed;
    // A 2025 client's task-augmented call to a 2026-07-28 upstream with the Tasks extension: the extension, declared
    // on this request, stands in for 2025's `task` (see task-eras.ts); its answer becomes 2025's once recorded.
    let viaExtension = false;
    let through = upstream;
    // Registered while it runs: shutdown fails the calls still running (see callsInFlight).
    const running = callsInFlight.start(id, this.db, options.signal);
    try {
      if (upstream) {
        const { signal } = running;
        viaExtension =
          options.params?.task !== undefined && coreTasksViaExtension(await upstream.describe(this.timeoutMs));
        through = viaExtension
          ? await this.upstreamFor(session.instanceId, provider, {
              ...options,
              capabilities: declaringTasksExtension(options.capabilities),
            })
          : upstream;
        // The client takes a task, the tool can run as one, and its upstream would not make one unasked (2025).
        const asTask = options.tasksExtension === true && runsAsTask(item) && !(await this.speaksModern(upstream));
        const answer = await this.forward(
          provider,
          through,
          "tools/call",
          {
            ...(viaExtension ? withoutTask(options.params) : options.params),
            ...(asTask ? { task: {} } : {}),
            name,
            ...(input === undefined ? {} : { arguments: input }),
          },
          { ...options, signal, toolSchema: item.inputSchema },
        );
        // Declared on the request by the client, or by the gateway for a 2025 client's core task (viaExtension).
        const declared = options.tasksExtension === true || viaExtension;
        if (answer.resultType === "task" && !declared) throw undeclaredTask(answer);
        result = asTask ? extensionCreateTaskResult(answer) : answer;
      }
    } catch (error) {
      failure = asFailure(error);
    }
    clearTimeout(insertLater);
    if (!recorded && result && (await this.answersBeforeRecorded(session, provider, origin, result, viaExtension))) {
      const answered = result;
      const outcome: CallOutcome = { record: { ...summaryOf(record), status: "succeeded" }, result, failure: null };
      // Written once the answer is on its way: building and sending the statement took the answer's time too.
      const write = () => this.complete(record, null, through, answered, null, true);
      const written = new Promise((resolve) => setImmediate(resolve)).then(write);
      // This process's readers wait for this write only; one that failed is tried again without holding them.
      answeredRecords.writing(written.then(noop, noop));
      void written
        .catch((error: unknown) => writeAgain(write, error))
        .then(noop, (error: unknown) => {
          gatewayLog()?.error(
            { err: error, sessionId: session.id, toolCallId: id },
            "tool call answered but not recorded",
          );
        })
        .finally(running.finish);
      toolCallFinished(provider, outcome, startedAt);
      return outcome;
    }
    try {
      const outcome = await this.complete(record, recorded, through, result, failure);
      // Translated after the record's output is written: a result the upstream answered at once is the outcome of
      // the gateway's own task (see coreCreateTaskResult), read back from there.
      if (viaExtension && outcome.result) outcome.result = coreCreateTaskResult(outcome.result, outcome.record.id);
      await this.recordCreatedTask(outcome, through, provider);
      toolCallFinished(provider, outcome, startedAt);
      return outcome;
    } finally {
      running.finish();
    }
  }

  /**
   * Whether an MCP client gets its call's result as the call's record is written rather than once it is (see
   * call): only for a call that ended before its record was due (callRecordAfterMs) with a plain result, whose
   * session still has its provider as far as this process knows. Waiting for the record's one write kept the
   * answer 0.48-0.53 ms longer at one call in flight, a database round trip an MCP client gains nothing from (its
   * answer does not name the record); answered as it is written, the added p50 fell by 0.16-0.20 ms (the write
   * still shares the machine; BENCHMARKS.md). This process's readers of records wait for such writes
   * (answeredRecords), so a client that has its answer finds its call in this process's API. Kept waiting for
   * it: the API's calls (answered with the record), calls that ran longer (their record is completed, and a
   * removal of their provider meanwhile fails them), failures (a retry may name them: -32042), and results that a
   * later request finds through their record (a task, an input_required round). The session is read from the
   * loader's memory (TOOLPLANE_SESSION_CACHE_MS); with that cache off it is a database read, and nothing is saved.
   */
  private async answersBeforeRecorded(
    session: GatewaySession,
    provider: GatewaySessionProvider,
    origin: CallOrigin,
    result: Item,
    viaExtension: boolean,
  ): Promise<boolean> {
    if (!this.sessions || origin.transport !== "mcp" || viaExtension) return false;
    if (result.task !== undefined || (result.resultType !== undefined && result.resultType !== "complete")) {
      return false;
    }
    const now = await this.sessions(session.id);
    return now?.status === "active" && now.providers.some((p) => p.sessionProviderId === provider.sessionProviderId);
  }

  /**
   * Writes how a call ended: into its record if it was inserted (once that insert is done), else as the whole
   * record at once. Either way a call whose session provider was removed, or session deleted, meanwhile is
   * recorded and answered as failed (`provider_removed`), as failWaitingCalls does to the records it finds;
   * except a call already `answered` with its outcome (see answersBeforeRecorded), whose record then says what
   * its client got.
   */
  private async complete(
    first: CallRecord,
    recorded: Promise<void> | null,
    upstream: Upstream | null,
    result: Item | null,
    failure: UpstreamFailure | null,
    answered = false,
  ): Promise<CallOutcome> {
    const id = first.id ?? "";
    const status: ToolCallStatus = result ? "succeeded" : failure?.code === "cancelled" ? "cancelled" : "failed";
    const completion: CallCompletion = {
      id,
      status,
      runId: upstream?.runId ?? null,
      output: result ? storableJson(result) : null,
      error: failure ? JSON.stringify({ code: failure.code, message: failure.message }) : null,
      completedAt: new Date(),
    };
    if (!recorded) {
      const record = await this.finished.add({
        ...first,
        status,
        provider_run_id: completion.runId,
        output: completion.output,
        error: completion.error,
        completed_at: completion.completedAt.toISOString(),
      });
      if (record) return { record, result, failure };
      if (answered) {
        await this.records.add(first);
        return { record: (await this.completions.add(completion)) ?? { ...summaryOf(first), status }, result, failure };
      }
      const message = (await this.sessionDeleted(first.session_id ?? ""))
        ? "The session was deleted while the call was waiting."
        : "The provider was removed from the session while the call was waiting.";
      // Written as the records failWaitingCalls found: inserted, then failed.
      await this.records.add(first);
      const error = JSON.stringify({ code: "provider_removed", message });
      const removed = await this.completions.add({ ...completion, status: "failed", runId: null, output: null, error });
      if (!removed) throw new Error(`tool call ${id} was completed twice`);
      return { record: removed, result: null, failure: new UpstreamFailure("provider_removed", message) };
    }
    await recorded;
    const record = await this.completions.add(completion);
    if (record) return { record, result, failure };
    // Failed meanwhile because its session or session provider was removed: that outcome stands.
    const removed = await this.db.selectFrom("tool_calls").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    const message = removed.error?.message ?? "The session provider was removed during the call.";
    return { record: removed, result: null, failure: new UpstreamFailure("provider_removed", message) };
  }

  /**
   * A task-augmented call's record names the task its upstream created (MCP tasks), before the client hears of
   * it: the session's later task requests and the upstream's status notifications find the record by it (see
   * taskSeen). A status the upstream announced before this write found no record: it is written now.
   */
  private async recordCreatedTask(
    { record, result }: CallOutcome,
    upstream: Upstream | null,
    provider: GatewaySessionProvider,
  ): Promise<void> {
    // MCP 2025-11-25 wraps the task (`{ task }`); the Tasks extension's CreateTaskResult is the task.
    const task = (result?.resultType === "task" ? result : result?.task) as
      | { taskId?: unknown; status?: unknown }
      | undefined;
    if (typeof task?.taskId !== "string") return;
    const status = TASK_STATUSES.includes(task.status as string) ? (task.status as string) : "working";
    await this.db
      .updateTable("tool_calls")
      .set({ task_id: task.taskId, task_status: status, task_updated_at: new Date() })
      .where("id", "=", record.id)
      .execute();
    const announced = upstream?.announcedTaskStatus(task.taskId);
    if (announced && announced !== status && record.session_provider_id) {
      await this.taskAnnounced(record.session_provider_id, task.taskId, { status: announced });
    }
    if (upstream) await this.follow(provider, upstream, task as Item & { taskId: string }, announced ?? status);
  }

  /**
   * Follows a task a call created until it ends (see TaskFollower), asking its upstream as the task's era does: the
   * Tasks extension's tasks/get carries the outcome, a 2025 task's comes from its tasks/result.
   */
  private async follow(
    provider: GatewaySessionProvider,
    upstream: Upstream,
    task: Item & { taskId: string },
    status: string,
  ): Promise<void> {
    const modern = await this.speaksModern(upstream);
    const ask = (method: string) => this.forward(provider, upstream, method, { taskId: task.taskId });
    const number = (value: unknown) => (typeof value === "number" ? value : undefined);
    tasksFollowed.follow(`${provider.sessionProviderId} ${task.taskId}`, status, {
      look: async () => {
        const seen = await ask("tasks/get");
        if (modern) return taskSeenOf(seen as Item & { status: string });
        const now = String(seen.status);
        return LEGACY_ENDED.has(now) ? legacyTaskOutcome(ask("tasks/result")) : { status: now };
      },
      record: (seen) => this.taskSeen(provider.sessionProviderId, task.taskId, seen),
      // The extension names them in milliseconds (`pollIntervalMs`, `ttlMs`); 2025 does too, without the suffix.
      pollIntervalMs: number(task.pollIntervalMs ?? task.pollInterval),
      ttlMs: number(task.ttlMs ?? task.ttl),
    });
  }

  /** A task status its upstream announced, into the task's record; a failed write is logged, never thrown. */
  private taskAnnounced(sessionProviderId: string, taskId: string, seen: TaskSeen): Promise<void> {
    return this.taskSeen(sessionProviderId, taskId, seen).catch((error: unknown) => {
      gatewayLog()?.warn({ err: error, sessionProviderId, taskId }, "announced task status not recorded");
    });
  }

  /**
   * What a request of the session saw of a task of provider `sessionProviderId` (`taskId` as the upstream names
   * it): its status (tasks/get, tasks/cancel) or its outcome (tasks/result; the Tasks extension's tasks/get), written
   * into the record of the call that created it. A terminal status stays: only the outcome may still be added to it
   * (MCP: a task in a terminal status never changes, and an answer that left earlier may arrive later).
   */
  async taskSeen(sessionProviderId: string, taskId: string, seen: TaskSeen): Promise<void> {
    if (!TASK_STATUSES.includes(seen.status)) return; // an upstream's own word: the API answers only MCP's
    const result = seen.result ? storableJson(seen.result) : undefined;
    const error = seen.error ? storableJson(seen.error) : undefined;
    const terminal = sql<boolean>`coalesce(task_status in (${sql.join(TERMINAL_TASK_STATUSES)}), false)`;
    await this.db
      .updateTable("tool_calls")
      .set({
        task_status: sql<string>`case when ${terminal} then task_status else ${seen.status} end`,
        ...(result ? { task_result: result } : {}),
        ...(error ? { task_error: error } : {}),
        task_updated_at: new Date(),
      })
      .where("session_provider_id", "=", sessionProviderId)
      .where("task_id", "=", taskId)
      .where((eb) =>
        eb.or([
          eb.not(terminal),
          ...(result ? [eb("task_result", "is", null)] : []),
          ...(error ? [eb("task_error", "is", null)] : []),
        ]),
      )
      .execute();
  }

  /**
   * The task the gateway answered itself for a call of session provider `sessionProviderId` (a 2025 client's
   * task-augmented call that a 2026-07-28 upstream ran at once, see coreCreateTaskResult): the call's record, whose
   * id is the task's; undefined for any other task id.
   */
  async heldTask(sessionProviderId: string, taskId: string) {
    return this.db
      .selectFrom("tool_calls")
      .select(["output", "task_status", "created_at", "completed_at"])
      .where("id", "=", taskId)
      .where("task_id", "=", taskId)
      .where("session_provider_id", "=", sessionProviderId)
      .executeTakeFirst();
  }

  /** `callId` if it is a call of session `sessionId`, else null. */
  private async callOfSession(callId: string, sessionId: string): Promise<string | null> {
    const found = await this.db
      .selectFrom("tool_calls")
      .select("id")
      .where("id", "=", callId)
      .where("session_id", "=", sessionId)
      .executeTakeFirst();
    return found?.id ?? null;
  }

  private async sessionDeleted(sessionId: string): Promise<boolean> {
    const session = await this.db
      .selectFrom("sessions")
      .select("status")
      .where("id", "=", sessionId)
      .executeTakeFirst();
    return session?.status === "deleted";
  }

  /** Counts received messages on the session and, for MCP traffic, marks it connected for a while. */
  touch(sessionId: string, messages: number, connected: boolean): Promise<void> {
    return this.activity.record(sessionId, messages, connected);
  }

  private withCaller<T>(provider: GatewaySessionProvider, downstream: Downstream, fn: () => Promise<T>): Promise<T> {
    const caller = downstream.caller?.(provider);
    return caller ? upstreamCaller.run(caller, fn) : fn();
  }

  /**
   * The upstream of a provider with its credentials and config applied. Credentials are fetched before every
   * connection lookup (an expired OAuth token is refreshed there) and become headers of remote upstreams:
   * OAuth → `Authorization: <token_type> <access_token>`; manual → `Authorization: Bearer <token>` when the
   * values have a string `token`. Config reaches the upstream only through the runtime's transformer. Unusable
   * credentials fail with a message that names the provider and how to re-authenticate.
   */
  async upstreamFor(
    instanceId: string,
    provider: GatewaySessionProvider,
    downstream: Downstream = {},
  ): Promise<Upstream> {
    const runtime = runnableRuntime(provider);
    const applied = applyTransformer(runtime.transformer, provider.config);
    const headers = { ...applied.headers };
    if (provider.providerAuthConfigId) {
      const authConfigId = provider.providerAuthConfigId;
      const credential = await this.credentials
        .credentialFor(instanceId, authConfigId)
        .catch(async (error: unknown) => {
          // The authorization server is down for now: a retry will do, a new sign-in would not help.
          if (error instanceof ApiError && error.code === "service_unavailable") {
            throw new UpstreamFailure("upstream_unavailable", `Provider ${provider.providerSlug}: ${error.message}`);
          }
          throw needsReauthentication(provider, error, await this.reauth.linkFor(instanceId, authConfigId));
        });
      if (credential.kind === "oauth") {
        const type = /^bearer$/i.test(credential.tokenType) ? "Bearer" : credential.tokenType;
        headers.Authorization = `${type} ${credential.accessToken}`;
      } else if (typeof credential.values.token === "string") {
        headers.Authorization = `Bearer ${credential.values.token}`;
      }
    }
    const target: UpstreamTarget = { runtime, ...applied, headers };
    const capabilities = upstreamCapabilities(downstream.capabilities);
    const owner = capabilities.roots ? (downstream.connectionId ?? null) : null;
    const { sessionProviderId } = provider;
    const upstream = this.pool.get(sessionProviderId, target, capabilities, owner);
    // Written where the connection hears them, not where its clients do: several clients may share it.
    upstream.onTaskStatus ??= (task) => void this.taskAnnounced(sessionProviderId, task.taskId, taskSeenOf(task));
    labelUpstream(upstream, provider.providerSlug);
    downstream.watch?.(provider, upstream);
    return upstream;
  }
}

const namespacesOf = new WeakMap<GatewaySession, Namespaces>();

/**
 * Inserts finished calls' records, each only while its session provider and session are still in use: a call
 * whose provider was removed, or session deleted, while it ran gets no row here (see Gateway.complete). The text
 * is built once per batch size (and so prepared once per connection and size): building and compiling it per
 * batch with Kysely cost more than the write it saved.
 */
function insertFinished(records: readonly FinishedRecord[]): CompiledQuery<CallRecordSummary> {
  let text = finishedInsertTexts.get(records.length);
  if (!text) {
    text = finishedInsertText(records.length);
    finishedInsertTexts.set(records.length, text);
  }
  return CompiledQuery.raw(
    text,
    records.flatMap((record) => FINISHED_COLUMNS.map((column) => record[column])),
  ) as CompiledQuery<CallRecordSummary>;
}
const finishedInsertTexts = new Map<number, string>();
function finishedInsertText(rows: number): string {
  const columns = FINISHED_COLUMNS.join(", ");
  const typed = FINISHED_COLUMNS.map((column) => {
    const cast = FINISHED_CASTS[column];
    return cast ? `v.${column}::${cast}` : `v.${column}`;
  }).join(", ");
  const width = FINISHED_COLUMNS.length;
  const values = Array.from(
    { length: rows },
    (_, row) => `(${FINISHED_COLUMNS.map((_column, i) => `$${row * width + i + 1}`).join(", ")})`,
  ).join(", ");
  return `insert into tool_calls (${columns})
    select ${typed}
    from (values ${values}) as v(${columns})
    join session_providers sp on sp.id = v.session_provider_id and sp.status <> 'removed'
    join sessions s on s.id = v.session_id and s.status <> 'deleted'
    returning ${SUMMARY_COLUMNS.map((column) => `tool_calls.${column}`).join(", ")}`;
}

/** The waits before the record of an answered call is written again after the database could not be reached. */
const ANSWERED_RECORD_RETRIES_MS = [1_000, 2_000, 4_000, 8_000, 15_000, 30_000];

/**
 * The record write of a call whose client already has its answer (see Gateway.answersBeforeRecorded), again after it
 * failed with `error`: while the database cannot be reached, for about a minute (ANSWERED_RECORD_RETRIES_MS), so a
 * shorter outage loses no record. A write that went through although its acknowledgement was lost is done (the
 * next attempt meets the record: a unique violation).
 */
async function writeAgain(write: () => Promise<unknown>, error: unknown): Promise<void> {
  let last = error;
  for (const wait of ANSWERED_RECORD_RETRIES_MS) {
    if (!isDatabaseUnavailable(last)) break;
    await sleep(wait);
    try {
      await write();
      return;
    } catch (next) {
      if (isUniqueViolation(next)) return;
      last = next;
    }
  }
  throw last;
}

const noop = () => undefined;

/** What a record's summary says before it is written. */
const summaryOf = (record: CallRecord) => ({
  id: record.id ?? "",
  session_id: record.session_id ?? "",
  session_provider_id: record.session_provider_id ?? null,
});

/** A record's columns as Kysely inserts them (JSON columns take JSON text). */
function asInsert(record: CallRecord) {
  return { ...record, transport: record.transport as CallOrigin["transport"] } as Insertable<ToolCallsTable>;
}

/**
 * A tool whose MCP Apps UI resource (`_meta.ui.resourceUri`, or the older `_meta["ui/resourceUri"]`) is made
 * session-wide like every resource URI, so that the client reads it through the session.
 */
function withAppUri(tool: Item, expose: (uri: string) => string): Item {
  const meta = tool._meta as Item | undefined;
  const ui = meta?.ui as Item | undefined;
  const legacy = meta?.["ui/resourceUri"];
  if (typeof ui?.resourceUri !== "string" && typeof legacy !== "string") return tool;
  const exposed: Item = { ...meta };
  if (typeof ui?.resourceUri === "string") exposed.ui = { ...ui, resourceUri: expose(ui.resourceUri) };
  if (typeof legacy === "string") exposed["ui/resourceUri"] = expose(legacy);
  return { ...tool, _meta: exposed };
}

/**
 * Resources (or templates) that several providers list under one URI, which only a web URI, left as the upstream
 * gave it (see Namespaces.uri), can be: each is listed under its provider's qualified URI instead, so that the
 * client can tell them apart and read each.
 */
function qualifyShared<T extends { item: Item; provider: GatewaySessionProvider; name: string }>(
  items: T[],
  member: "uri" | "uriTemplate",
  names: Namespaces,
): T[] {
  const listers = new Map<unknown, Set<string>>();
  for (const { item, provider } of items) {
    const ids = listers.get(item[member]) ?? new Set<string>();
    ids.add(provider.sessionProviderId);
    listers.set(item[member], ids);
  }
  return items.map((entry) =>
    (listers.get(entry.item[member])?.size ?? 0) > 1
      ? { ...entry, item: { ...entry.item, [member]: names.qualified(entry.provider.sessionProviderId, entry.name) } }
      : entry,
  );
}

/** Whether a URI is one of an RFC 6570 template's (a template the SDK cannot parse holds none). */
function matchesTemplate(template: string, uri: string): boolean {
  try {
    return new UriTemplate(template).match(uri) !== null;
  } catch {
    return false;
  }
}

/**
 * `tool_filters.tool_keys`: a tool is exposed when its key, its upstream name or the key it had before keys changed
 * (see Namespaces.formerKey: filters already stored keep their tools) is listed, or when no filter is set.
 */
function allowedTool(provider: GatewaySessionProvider, names: Namespaces, name: string): boolean {
  const allowed = provider.toolKeys;
  if (!allowed) return true;
  const id = provider.sessionProviderId;
  return allowed.includes(names.key(id, name)) || allowed.includes(name) || allowed.includes(names.formerKey(id, name));
}

/**
 * The providers asked together for one request: how long each may keep it waiting. `bound` gives up on one after
 * `ms`, but only once another provider of the request has answered (or at once, for a `FirstAnswer(true)`, which
 * does not wait for others).
 */
export class FirstAnswer {
  private answered: () => void = () => undefined;
  private readonly first: Promise<void>;

  constructor(alreadyAnswered = false) {
    this.first = alreadyAnswered ? Promise.resolve() : new Promise<void>((resolve) => (this.answered = resolve));
  }

  /**
   * `work`, or an UpstreamFailure after `ms` (and a first answer) that ends with `late`; `onLate` runs if it
   * answers after that.
   */
  bound<T>(
    work: Promise<T>,
    ms: number,
    onLate: () => void = () => undefined,
    late = "it is included once it answers.",
  ): Promise<T> {
    void work.then(this.answered, () => undefined);
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        void this.first.then(() => {
          if (settled) return;
          settled = true;
          work.then(onLate, () => undefined);
          reject(new UpstreamFailure("timeout", `did not answer within ${ms} ms; ${late}`));
        });
      }, ms);
      const settle = (then: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        then();
      };
      work.then(
        (value) => settle(() => resolve(value)),
        (error: unknown) => settle(() => reject(error)),
      );
    });
  }
}

/**
 * An upstream's task (the Tasks extension's CreateTaskResult) answered to a call whose request did not declare the
 * extension: a misbehaving upstream. tasks.md ("Capability Negotiation") forbids it (a server MUST NOT return a
 * CreateTaskResult to a client that did not include the extension on its request; one that cannot serve the call
 * without a task answers -32021), and a client that gets one where it cannot take one MUST treat it as an invalid
 * response. Relaying it would hand the client what it said it cannot read; polling it to its end on the client's
 * behalf (or cancelling it) would need the extension's tasks/get (tasks/cancel), which a server MUST refuse to a
 * client that did not declare it either, and an `input_required` task could not be answered. So the call fails,
 * as a tool error that a model sees, naming what the provider did and the task for whoever runs the provider; the
 * task is left to its ttl.
 */
function undeclaredTask(result: Item): UpstreamFailure {
  return new UpstreamFailure(
    "upstream_unavailable",
    `The upstream MCP server answered with a task (${String(result.taskId)}) although the request did not declare the ` +
      `Tasks extension (${TASKS_EXTENSION}), which MCP forbids; the call's result cannot be had this way. Call it from a ` +
      "client that declares the extension, or have the provider fixed.",
  );
}

/** A call's params without 2025's `task` (which the Tasks extension's declaration stands in for). */
function withoutTask(params: Item | undefined): Item {
  const { task: _task, ...rest } = params ?? {};
  return rest;
}

/** An upstream request's error as the UpstreamFailure a listing reports (a generic one for anything else). */
export function asFailure(error: unknown): UpstreamFailure {
  if (error instanceof UpstreamFailure) return error;
  return new UpstreamFailure("upstream_unavailable", "The upstream MCP server failed the request.");
}

/** A failure whose message says which provider it is about. */
function namingProvider({ provider, error }: ProviderFailure): UpstreamFailure {
  if (error.message.startsWith("Provider ")) return error;
  const message = `Provider ${provider.providerSlug}: ${error.message}`;
  return new UpstreamFailure(error.code, message, error.rpcCode, error.rpcData);
}

/**
 * The provider's runtime with its config filled in, or an UpstreamFailure naming the provider when its package
 * cannot run here or its URL lacks config values: a clear answer instead of a spawn or connect error.
 */
function runnableRuntime(provider: GatewaySessionProvider): Runtime {
  const unavailable = (message: string) =>
    new UpstreamFailure("upstream_unavailable", `Provider ${provider.providerSlug}: ${message}`);
  const problem = runnerProblem(provider.runtime);
  if (problem) throw unavailable(problem);
  try {
    return configuredRuntime(provider.runtime, provider.config);
  } catch (error) {
    throw unavailable((error as Error).message);
  }
}

/**
 * An upstream failure that a new sign-in fixes. `reauthUrl` (a setup-session link that repairs the auth config, see
 * oauth/reauth.ts) is a capability for the session's client only: it is shown in the answer to the client and kept
 * out of `message`, which is logged and stored with the tool call.
 */
export class ReauthenticationNeeded extends UpstreamFailure {
  constructor(
    message: string,
    readonly reauthUrl: string | null,
  ) {
    super("upstream_unavailable", message);
  }

  /** The message with where to sign in again, for the session's client. */
  get clientMessage(): string {
    return this.reauthUrl ? `${this.message} Sign in again by opening ${this.reauthUrl}` : this.message;
  }
}

function needsReauthentication(
  provider: GatewaySessionProvider,
  error: unknown,
  reauthUrl: string | null,
): UpstreamFailure {
  const detail = error instanceof ApiError ? ` (${error.message})` : "";
  const how = reauthUrl
    ? "The answer to the client carries a re-authentication link that repairs it."
    : `Create a setup session for deployment ${provider.providerDeploymentId} (POST /provider-setup-sessions) and ` +
      "open its url to connect it again.";
  return new ReauthenticationNeeded(
    `Provider ${provider.providerSlug} needs re-authentication${detail}. ${how}`,
    reauthUrl,
  );
}

/** A provider of a session as `describe` found it: its upstream (null when unreachable), capabilities, instructions. */
export type Described = Awaited<ReturnType<Gateway["describe"]>>[number];
