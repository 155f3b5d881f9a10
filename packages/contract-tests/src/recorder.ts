import type { OperationId, SpecOperation } from "./spec.ts";
import { createOperationMatcher } from "./spec.ts";
import type { ResponseValidator } from "./validator.ts";

/** One entry of Prism's `sl-violations` header. */
export interface Violation {
  severity: string;
  message: string;
  code?: string | number;
  location?: (string | number)[];
}

/** One response seen through the proxy, whoever asked for it. */
export interface Observation {
  operationId: OperationId | undefined;
  method: string;
  url: string;
  status: number;
  /** "prism" through the proxy; "direct" to the server (only for what Prism cannot judge: 501 answers). */
  via: "prism" | "direct";
  violations: Violation[];
  /** Set when Prism answered by itself (its errors, or a mock) instead of forwarding our server's answer. */
  prismError: string | undefined;
  /** Prism served a mock: it does that only when the server answered 501, so the server answered 501. */
  remocked: boolean;
  /** Whether a check() looked at this response; unchecked responses with violations fail the run too. */
  checked: boolean;
}

export interface CheckResult {
  operationId: OperationId | undefined;
  label: string;
  expected: number | undefined;
  actual: number | undefined;
  ok: boolean;
  problems: string[];
}

export interface CheckOptions {
  /** Shown in failures and progress, e.g. "unknown id". */
  label?: string;
  /** The error body's `code` must be this (e.g. "invalid_data", "not_found"). */
  code?: string;
  /** Added to the problems when the check fails (what to do about it). */
  hint?: string;
}

/** What a check accepts: a raw `Response`, or an openapi-fetch result `{data, error, response}`. */
export type Checkable = Response | { response: Response; data?: unknown; error?: unknown };

/** Thrown by a failed `ok()`: the check is already recorded, the suite just cannot go on. */
export class CheckFailed extends Error {}

export function parseViolations(header: string | null): Violation[] {
  if (!header) return [];
  try {
    const parsed = JSON.parse(header) as unknown;
    const list = Array.isArray(parsed) ? parsed : [parsed];
    return list.map((v) => {
      const o = (v ?? {}) as Record<string, unknown>;
      return {
        severity: typeof o.severity === "string" ? o.severity : String(o.severity ?? "Error"),
        message: typeof o.message === "string" ? o.message : JSON.stringify(v),
        ...(o.code !== undefined ? { code: o.code as string | number } : {}),
        ...(Array.isArray(o.location) ? { location: o.location as (string | number)[] } : {}),
      };
    });
  } catch {
    return [{ severity: "Error", message: header }];
  }
}

export function formatViolation(v: Violation): string {
  const where = v.location?.length ? ` at ${v.location.join(".")}` : "";
  return `${v.severity}${where}: ${v.message}`;
}

/** Records every response that goes through the proxy and every check a suite makes. */
export class Recorder {
  readonly observations: Observation[] = [];
  readonly checks: CheckResult[] = [];
  private readonly byResponse = new WeakMap<Response, Observation>();
  private readonly match: ReturnType<typeof createOperationMatcher>;
  /** Called after each check (progress output). */
  onCheck: ((check: CheckResult) => void) | undefined;
  /** The proxy's origin (`http://127.0.0.1:4010`); requests to any other origin count as direct. */
  proxyOrigin: string | undefined;
  requestTimeoutMs = 20_000;

  constructor(
    operations: SpecOperation[],
    private readonly validator?: ResponseValidator,
  ) {
    this.match = createOperationMatcher(operations);
  }

  /** A fetch that notes every response's status and `sl-violations`; give it to every client. */
  readonly fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    // Nothing may hang the run: Prism, for one, never answers some requests (malformed JSON bodies).
    const response = await globalThis.fetch(request, { signal: AbortSignal.timeout(this.requestTimeoutMs) });
    const url = new URL(request.url);
    const via = url.origin === this.proxyOrigin ? "prism" : "direct";
    const contentType = response.headers.get("content-type") ?? "";
    let prismError: string | undefined;
    let remocked = false;
    if (via === "prism" && contentType.includes("application/problem+json")) {
      const problem = (await response
        .clone()
        .json()
        .catch(() => ({}))) as { title?: string; detail?: string; type?: string };
      prismError = [problem.title, problem.detail].filter(Boolean).join(": ") || problem.type || "Prism error";
    } else if (via === "prism" && !response.headers.has("x-request-id")) {
      // Our server stamps every answer with X-Request-Id; Prism's mocks (what it serves when the upstream
      // answers 501) do not have it.
      prismError = "no X-Request-Id: this is Prism's mock, not the server's answer";
      remocked = true;
    }
    const observation: Observation = {
      operationId: this.match(request.method, url.pathname)?.operationId,
      method: request.method,
      url: url.pathname + url.search,
      status: response.status,
      via,
      violations: parseViolations(response.headers.get("sl-violations")),
      prismError,
      remocked,
      checked: false,
    };
    this.observations.push(observation);
    this.byResponse.set(response, observation);
    return response;
  };

  /**
   * Awaits one call and compares: the status must be `expected`; the response must carry no `sl-violations`
   * (errors or warnings) and be the server's own answer, not Prism's; the body must validate against the
   * documented response (2020-12); an error answer must be the documented error body (with `options.code` when
   * given). Returns the call's result so a suite can use the data.
   */
  async check<R extends Checkable>(
    operationId: OperationId,
    expected: number,
    call: Promise<R> | (() => Promise<R>),
    options: CheckOptions = {},
  ): Promise<R> {
    const label = options.label ?? `${expected}`;
    let result: R;
    try {
      result = await (typeof call === "function" ? call() : call);
    } catch (err) {
      this.record({
        operationId,
        label,
        expected,
        actual: undefined,
        ok: false,
        problems: [`request failed: ${(err as Error).message}`],
      });
      throw new CheckFailed(`${operationId} ${label}: request failed`);
    }
    const response = result instanceof Response ? result : result.response;
    const problems: string[] = [];
    const observation = this.byResponse.get(response);
    if (observation) {
      observation.checked = true;
      if (observation.operationId !== operationId) {
        problems.push(
          `the request ${observation.method} ${observation.url} is ${observation.operationId ?? "no operation"}`,
        );
      }
      if (observation.prismError) problems.push(`answered by Prism, not the server: ${observation.prismError}`);
    } else {
      problems.push(
        "the response did not go through the recorder (send requests with ctx.client, ctx.other, ctx.send or ctx.raw)",
      );
    }
    for (const v of parseViolations(response.headers.get("sl-violations"))) {
      problems.push(`sl-violations ${formatViolation(v)}`);
    }
    const body = await bodyOf(result);
    if (response.status !== expected) {
      problems.push(`expected ${expected}, got ${response.status}${describeError(body)}`);
    }
    if (this.validator && !observation?.prismError) {
      for (const problem of this.validator.validate(operationId, response.status, body)) {
        problems.push(`schema (2020-12): ${problem}`);
      }
    }
    if (response.status >= 400 && response.status === expected) {
      const e = (body ?? {}) as Record<string, unknown>;
      if (e.__typename !== "error" || e.ok !== false || e.status !== response.status) {
        problems.push(`error body is not {__typename: "error", ok: false, status: ${response.status}}`);
      }
      if (options.code && e.code !== options.code) {
        problems.push(`expected error code ${options.code}, got ${String(e.code)}${describeError(body)}`);
      }
    }
    if (problems.length > 0 && options.hint) problems.push(`hint: ${options.hint}`);
    this.record({ operationId, label, expected, actual: response.status, ok: problems.length === 0, problems });
    return result;
  }

  /** Records a failure that is not a response (a suite that threw, a missing prerequisite). */
  fail(operationId: OperationId | undefined, label: string, problem: string) {
    this.record({ operationId, label, expected: undefined, actual: undefined, ok: false, problems: [problem] });
  }

  /** Responses nobody checked that still carried violations or came from Prism itself: each is a failure. */
  uncheckedProblems(): Observation[] {
    return this.observations.filter((o) => !o.checked && (o.violations.length > 0 || o.prismError));
  }

  private record(check: CheckResult) {
    this.checks.push(check);
    this.onCheck?.(check);
  }
}

async function bodyOf(result: Checkable): Promise<unknown> {
  if (!(result instanceof Response)) return result.response.ok ? result.data : result.error;
  if (result.bodyUsed) return undefined;
  const text = await result
    .clone()
    .text()
    .catch(() => "");
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function describeError(body: unknown): string {
  if (!body || typeof body !== "object") return "";
  const e = body as { code?: unknown; message?: unknown; title?: unknown; detail?: unknown };
  const text = [e.code ?? e.title, e.message ?? e.detail].filter((x) => x !== undefined).join(": ");
  return text ? ` (${text.slice(0, 300)})` : "";
}
