import type { FetchLike } from "@modelcontextprotocol/client";
import {
  type JSONRPCRequest,
  ProtocolError,
  type Result,
  Server,
  type ServerContext,
  TRACEPARENT_META_KEY,
  TRACESTATE_META_KEY,
} from "@modelcontextprotocol/server";
import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { maskUrlCredentials } from "@toolplane/server-stubs";
import type { UpstreamRequest } from "../runtimes/upstream-fetch.ts";

/**
 * OpenTelemetry tracing, off unless the standard variables ask for it: OTEL_TRACES_EXPORTER (other than `none`) or
 * an OTLP endpoint. Everything else (protocol, headers, sampler, resource attributes, propagators) is read by the
 * official SDK from the same OTEL_* variables. The SDK is imported only then, so a server without tracing neither
 * loads it nor pays more per request than one boolean test.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter) return exporter !== "none";
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

let sdk: { shutdown(): Promise<void> } | null = null;

/** Starts the SDK when tracing is requested; returns whether it runs. */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (sdk) return true;
  if (!tracingRequested(env)) return false;
  // A CommonJS package: bundled (pnpm build puts it in a chunk loaded only here) its exports sit under `default`.
  const loaded = await import("@opentelemetry/sdk-node");
  const { NodeSDK } = loaded.default ?? loaded;
  const started = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: "toolplane" }),
    // Traces only: metrics are Prometheus' (/metrics) and logs are pino's JSON lines.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  started.start();
  sdk = started;
  return true;
}

/** Whether spans are recorded: requests that the gateway serves without the SDK's server then go through it. */
export const tracing = (): boolean => sdk !== null;

/** Exports the spans still buffered and stops the SDK (at shutdown). */
export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = null;
  await running?.shutdown();
}

const tracer = () => trace.getTracer("toolplane");
type Params = Record<string, unknown>;

/** A W3C trace context carried in a `_meta` object or HTTP headers, if it holds a valid one. */
function remoteContext(carrier: Params | undefined): Context | null {
  if (!carrier || typeof carrier[TRACEPARENT_META_KEY] !== "string") return null;
  const extracted = propagation.extract(ROOT_CONTEXT, carrier);
  return trace.getSpanContext(extracted) ? extracted : null;
}

/** The MCP semantic-convention attributes a request's params give (tool, prompt, resource). */
function requestAttributes(method: string, params: Params | undefined): { target?: string; attributes: Attributes } {
  const name = typeof params?.name === "string" ? params.name : undefined;
  const attributes: Attributes = { "mcp.method.name": method };
  if (method === "tools/call" && name) {
    Object.assign(attributes, { "gen_ai.tool.name": name, "gen_ai.operation.name": "execute_tool" });
    return { target: name, attributes };
  }
  if (method === "prompts/get" && name) {
    attributes["gen_ai.prompt.name"] = name;
    return { target: name, attributes };
  }
  if (typeof params?.uri === "string") attributes["mcp.resource.uri"] = params.uri;
  return { attributes };
}

/**
 * Span status per the conventions: a JSON-RPC error's code, or `tool_error` for a tool result with `isError`. A
 * message keeps no credential a URL in it carries (a re-authentication link's token).
 */
function recordError(span: Span, type: string, message?: string): void {
  span.setAttribute("error.type", type);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message: maskUrlCredentials(message) } : {}) });
}

/**
 * One SERVER span per MCP request the gateway serves, named `{mcp.method.name} {tool or prompt}`. Its parent is the
 * trace context the client put in `params._meta` (the MCP convention); without one, the HTTP request's
 * `traceparent` header; the HTTP context is linked when both are present.
 */
async function traceMcpRequest(
  method: string,
  request: JSONRPCRequest,
  ctx: ServerContext,
  handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
): Promise<Result> {
  const params = request.params as Params | undefined;
  const headers = ctx.http?.req?.headers;
  const fromHttp = headers ? remoteContext(Object.fromEntries(headers)) : null;
  const fromMeta = remoteContext((params?._meta as Params | undefined) ?? (ctx.mcpReq._meta as Params | undefined));
  const httpSpan = fromHttp && trace.getSpanContext(fromHttp);
  const links: Link[] = fromMeta && httpSpan ? [{ context: httpSpan }] : [];
  const { target, attributes } = requestAttributes(method, params);
  Object.assign(attributes, {
    "jsonrpc.request.id": String(request.id),
    "network.transport": "tcp",
    "network.protocol.name": "http",
    ...(ctx.sessionId ? { "mcp.session.id": ctx.sessionId } : {}),
  });
  const parent = fromMeta ?? fromHttp ?? context.active();
  const name = target ? `${method} ${target}` : method;
  return tracer().startActiveSpan(name, { kind: SpanKind.SERVER, attributes, links }, parent, async (span) => {
    try {
      const result = await handler(request, ctx);
      if (method === "tools/call" && (result as { isError?: unknown }).isError === true)
        recordError(span, "tool_error");
      return result;
    } catch (error) {
      if (error instanceof ProtocolError) {
        span.setAttribute("rpc.response.status_code", String(error.code));
        recordError(span, String(error.code), error.message);
      } else {
        recordError(span, error instanceof Error ? error.name : "Error", String(error));
      }
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The gateway's MCP server, with every request handler traced while tracing runs. */
export class TracedServer extends Server {
  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const wrapped = super._wrapHandler(method, handler);
    return (request, ctx) => (sdk ? traceMcpRequest(method, request, ctx, wrapped) : wrapped(request, ctx));
  }
}

/**
 * A request to an upstream as a CLIENT span of the current one (`{method} {tool}`, with the provider), whose trace
 * context replaces any the client sent in `params._meta`: the upstream's spans become children of the gateway's.
 * While it runs, `tracedFetch` and `tracedRequest` put the same context in the HTTP request's `traceparent` header.
 */
export async function traceUpstreamRequest<T>(
  provider: string,
  method: string,
  params: Params | undefined,
  send: (params: Params | undefined) => Promise<T>,
): Promise<T> {
  if (!sdk) return send(params);
  const { target, attributes } = requestAttributes(method, params);
  attributes["toolplane.provider"] = provider;
  const name = target ? `${method} ${target}` : method;
  return tracer().startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const { [TRACEPARENT_META_KEY]: _parent, [TRACESTATE_META_KEY]: _state, ...meta } = (params?._meta ?? {}) as Params;
    propagation.inject(context.active(), meta);
    try {
      return await send({ ...params, _meta: meta });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      recordError(span, typeof code === "string" ? code : "upstream_error", (error as Error).message);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Upstream requests with the active trace context's headers (`traceparent`) while tracing runs. */
export const tracedRequest =
  (send: UpstreamRequest): UpstreamRequest =>
  (url, init) => {
    if (!sdk || !trace.getSpanContext(context.active())) return send(url, init);
    const headers = { ...init.headers };
    propagation.inject(context.active(), headers);
    return send(url, { ...init, headers });
  };

/** The same for the `fetch` of the SDK's transports. */
export const tracedFetch =
  (send: FetchLike): FetchLike =>
  (url, init) => {
    if (!sdk || !trace.getSpanContext(context.active())) return send(url, init);
    const headers = new Headers(init?.headers);
    propagation.inject(context.active(), headers, { set: (carrier, key, value) => carrier.set(key, value) });
    return send(url, { ...init, headers });
  };
