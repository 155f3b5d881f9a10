import { randomBytes } from "node:crypto";
import { UpstreamFailure } from "../runtimes/pool.ts";

/** A server→client request an upstream made, as an MCP 2026-07-28 `input_required` result embeds it. */
export interface EmbeddedRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** What a call waiting in this process does next: ask its client something, or end. */
export type Step<T> = { kind: "ask"; key: string; request: EmbeddedRequest } | { kind: "done"; outcome: T };

/** The `requestState` of a continuation: recognisable, unguessable, and no use to another session. */
const TOKEN_PREFIX = "toolplane.continuation.";

/**
 * One call whose upstream asks the client things (sampling, elicitation, roots) although the client speaks MCP
 * 2026-07-28, which has no server→client requests: each question leaves as an `input_required` result carrying
 * the question and this continuation's token as `requestState`; the client's retry brings the answer back, which
 * goes to the upstream's waiting request, and the call goes on to its next question or its outcome.
 * `context` is what its owner keeps with the call (the request the client is waiting on): it lives exactly as long
 * as the continuation. (Not a WeakMap keyed by the continuation: V8's young-generation GC treats a WeakMap's values
 * as live until the next full GC, which kept every finished call's request and response alive and promoted them.)
 */
export class Continuation<T, C> {
  /**
   * Stops the upstream work: aborted when the client cancels the request it is waiting on, or abandons a round
   * (see Continuations.hold).
   */
  readonly control = new AbortController();
  private madeToken: string | undefined;
  private readonly steps: Step<T>[] = [];
  private waiting: ((step: Step<T>) => void) | null = null;
  private readonly answers = new Map<string, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private asked = 0;

  /** `subject` names what the request is about (its method and tool, prompt or URI): a retry must name the same. */
  constructor(
    readonly sessionId: string,
    readonly subject: string,
    readonly context: C,
  ) {}

  /**
   * Made when first read: only a call that asks its client something needs one, and 16 random bytes are a system
   * call (1.7 % of the gateway's busy time at 16 in flight when every 2026-07-28 tools/call made one).
   */
  get token(): string {
    this.madeToken ??= `${TOKEN_PREFIX}${randomBytes(16).toString("base64url")}`;
    return this.madeToken;
  }

  /** Whether the continuation has a token yet (it never asked, so nothing holds it under one). */
  get hasToken(): boolean {
    return this.madeToken !== undefined;
  }

  /** For the upstream: puts a question to the client; resolves with its answer. */
  ask(request: EmbeddedRequest, signal: AbortSignal): Promise<unknown> {
    const key = `q${++this.asked}`;
    return new Promise<unknown>((resolve, reject) => {
      this.answers.set(key, { resolve, reject });
      signal.addEventListener("abort", () => {
        this.answers.delete(key);
        reject(signal.reason instanceof Error ? signal.reason : new Error("The question was withdrawn."));
      });
      this.push({ kind: "ask", key, request });
    });
  }

  /** The call's outcome, once it has one. */
  end(outcome: T): void {
    this.push({ kind: "done", outcome });
  }

  /** The client's answers (its `inputResponses`); an answer to a question never asked is ignored. */
  answer(responses: Record<string, unknown> | undefined): void {
    for (const [key, value] of Object.entries(responses ?? {})) {
      this.answers.get(key)?.resolve(value);
      this.answers.delete(key);
    }
  }

  /**
   * The client abandoned the round: the upstream work is cancelled (a tools/call is recorded `cancelled`, and the
   * upstream hears `notifications/cancelled` rather than an answer it might take for a refusal and act on), then
   * the questions still open fail.
   */
  abandon(reason: UpstreamFailure): void {
    this.control.abort(reason);
    for (const { reject } of this.answers.values()) reject(reason);
    this.answers.clear();
  }

  /** The next step: a question for the client, or the outcome. */
  next(): Promise<Step<T>> {
    const step = this.steps.shift();
    if (step) return Promise.resolve(step);
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  private push(step: Step<T>): void {
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) waiting(step);
    else this.steps.push(step);
  }
}

/**
 * The continuations of this process. A retry must reach the process that holds its continuation (sticky routing
 * for 2026-07-28 clients answering questions of 2025 upstreams; see README); one left unanswered for `ttlMs()` (read
 * at each hold) is abandoned. MCP 2026-07-28 gives a client no message that abandons a round: the round's request has
 * ended, so neither `notifications/cancelled` nor closing its stream (basic/patterns/cancellation) applies, and a
 * client that gives up simply never retries ("Servers MUST NOT assume that clients will fulfill the inputRequests
 * or retry the original request", basic/patterns/mrtr; the SDK v2 client sends nothing when its caller aborts
 * between legs). So a round that was not answered in time is taken as abandoned.
 */
export class Continuations<T, C> {
  private readonly byToken = new Map<string, { continuation: Continuation<T, C>; timer: NodeJS.Timeout }>();

  constructor(private readonly ttlMs: () => number) {}

  static isToken(requestState: unknown): requestState is string {
    return typeof requestState === "string" && requestState.startsWith(TOKEN_PREFIX);
  }

  /**
   * The continuation a retry names, if this process holds it for that session and subject (taken out until held
   * again): a state given out for one request answers no other (basic/patterns/mrtr asks servers to bind it so).
   */
  take(token: string, sessionId: string, subject: string): Continuation<T, C> | null {
    const held = this.byToken.get(token);
    if (!held || held.continuation.sessionId !== sessionId || held.continuation.subject !== subject) return null;
    clearTimeout(held.timer);
    this.byToken.delete(token);
    return held.continuation;
  }

  /** Keeps a continuation that put a question to its client, until the client's retry takes it. */
  hold(continuation: Continuation<T, C>): void {
    const ttlMs = this.ttlMs();
    const timer = setTimeout(() => {
      this.byToken.delete(continuation.token);
      const message = `The client did not answer the upstream's question within ${ttlMs} ms (the round was abandoned).`;
      continuation.abandon(new UpstreamFailure("cancelled", message));
    }, ttlMs);
    timer.unref();
    this.byToken.set(continuation.token, { continuation, timer });
  }

  /** Ends a continuation whose call finished. */
  release(continuation: Continuation<T, C>): void {
    if (!continuation.hasToken) return;
    const held = this.byToken.get(continuation.token);
    if (held) clearTimeout(held.timer);
    this.byToken.delete(continuation.token);
  }
}
