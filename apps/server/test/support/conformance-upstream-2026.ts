import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { toNodeHandler } from "@modelcontextprotocol/node";
import {
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  createMcpHandler,
  createRequestStateCodec,
  type InputRequests,
  inputRequired,
  inputResponse,
  LOG_LEVEL_META_KEY,
  localhostAllowedHostnames,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type Tool,
  validateHostHeader,
} from "@modelcontextprotocol/server";
import express from "express";
import {
  type ConformanceUpstream,
  contentResult,
  contentTools,
  promptResult,
  prompts,
  readResource,
  reportProgress,
  resources,
  resourceTemplates,
} from "./conformance-upstream.ts";
import {
  declaresTasks,
  missingTasksCapability,
  type RunningTask,
  TASKS_EXTENSION,
  TasksServer,
  taskEngine,
} from "./upstream-tasks.ts";

/**
 * The upstream of the conformance suite's 2026-07-28 run (`@modelcontextprotocol/conformance` 0.2.0-alpha.12,
 * `server --requirements 2026-07-28`), directly and through a session. The suite's reference server speaks 2026 through
 * a hand-made layer over the SDK v1; this one is the SDK v2's own 2026 serving (`createMcpHandler`, which answers the
 * revision's header, `_meta`, version and method rules itself) with what the scenarios call: the content tools, resources and
 * prompts both eras share (conformance-upstream.ts), the input_required tools and prompt of SEP-2322, the diagnostic
 * tools of server-stateless (SEP-2575), a tool with an `x-mcp-header` parameter (SEP-2243), and the Tasks extension
 * (SEP-2663, upstream-tasks.ts) with the tools its scenarios call: `greet` (never a task), `slow_compute` (a task for
 * a client that declared the extension, answered at once for any other), and tools that refuse a client without it:
 * `failing_job` (a tool error), `protocol_error_job` (a JSON-RPC error), `confirm_delete` and `multi_input` (ask the
 * client during the task, once and twice at a time), and `test_tool_with_task` (an input_required round first, then
 * a task).
 */

const text = (s: string) => ({ content: [{ type: "text" as const, text: s }] });
const noArgs = { type: "object" as const, properties: {} };
const askName = (message: string, field: string) =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: "object", properties: { [field]: { type: "string" } }, required: [field] },
  });
const askConfirm = (message: string) =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] },
  });
const confirm = inputRequired.elicit({
  message: "Please confirm",
  requestedSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
});

/** The state of an input_required round, signed so a tampered one is refused (input-required-result-tampered-state). */
interface RoundState {
  tool: string;
  round: number;
  name?: string;
}

const tools: Tool[] = [
  ...contentTools,
  { name: "test_missing_capability", description: "Requires the client's sampling capability", inputSchema: noArgs },
  { name: "test_input_required_result_elicitation", description: "Asks the user's name", inputSchema: noArgs },
  { name: "test_input_required_result_sampling", description: "Asks for an LLM completion", inputSchema: noArgs },
  { name: "test_input_required_result_list_roots", description: "Asks for the client's roots", inputSchema: noArgs },
  { name: "test_input_required_result_request_state", description: "Round-trips requestState", inputSchema: noArgs },
  { name: "test_input_required_result_multiple_inputs", description: "Asks three things at once", inputSchema: noArgs },
  { name: "test_input_required_result_multi_round", description: "Asks twice, in two rounds", inputSchema: noArgs },
  { name: "test_input_required_result_tampered_state", description: "Refuses altered state", inputSchema: noArgs },
  {
    name: "test_input_required_result_capabilities",
    description: "Asks only for what the client declared it can answer",
    inputSchema: noArgs,
  },
  { name: "test_streaming_elicitation", description: "Elicits within the call's response", inputSchema: noArgs },
  { name: "test_logging_tool", description: "Logs at the level the request asked for", inputSchema: noArgs },
  { name: "test_trigger_tool_change", description: "Announces a tool list change", inputSchema: noArgs },
  { name: "test_trigger_prompt_change", description: "Announces a prompt list change", inputSchema: noArgs },
  {
    name: "test_header_param",
    description: "Echoes a parameter the client also sends as the Mcp-Param-Region header",
    inputSchema: {
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" } },
      required: ["region"],
    },
  },
  {
    name: "greet",
    description: "Greets synchronously",
    inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  },
  {
    name: "slow_compute",
    description: "Works for `seconds`, as a task for a client that supports tasks",
    inputSchema: { type: "object", properties: { seconds: { type: "number" }, label: { type: "string" } } },
  },
  { name: "failing_job", description: "A task that ends in a tool error", inputSchema: noArgs },
  { name: "protocol_error_job", description: "A task that ends in a JSON-RPC error", inputSchema: noArgs },
  {
    name: "confirm_delete",
    description: "A task that asks the client to confirm a deletion",
    inputSchema: { type: "object", properties: { filename: { type: "string" } } },
  },
  { name: "multi_input", description: "A task that asks the client two things at once", inputSchema: noArgs },
  { name: "test_tool_with_task", description: "Asks the user's name, then works as a task", inputSchema: noArgs },
];

/** An elicitation answer's field when the user accepted, as the task's work reads it from its answers. */
const accepted = (answer: unknown, field: string) => {
  const { action, content } = (answer ?? {}) as { action?: string; content?: Record<string, unknown> };
  return action === "accept" ? content?.[field] : undefined;
};

/** The work of the tools that run only as tasks: a client without the extension gets -32021 (tasks.md). */
const taskOnly = new Map<
  string,
  (task: RunningTask, args: Record<string, unknown>) => Promise<Record<string, unknown>>
>([
  // A tool that ran and reported an error completes (isError); `failed` is for JSON-RPC errors (tasks.md).
  ["failing_job", async () => ({ content: [{ type: "text", text: "The job failed" }], isError: true })],
  [
    "protocol_error_job",
    async () => {
      throw new ProtocolError(ProtocolErrorCode.InternalError, "The job crashed");
    },
  ],
  [
    "confirm_delete",
    async ({ ask }, args) => {
      const { confirm } = await ask({ confirm: askConfirm(`Delete ${String(args.filename)}?`) });
      return text(accepted(confirm, "confirm") === true ? `Deleted ${String(args.filename)}` : "Nothing deleted");
    },
  ],
  [
    "multi_input",
    async ({ ask }) => {
      const answers = await ask({ name: askName("What is your name?", "name"), confirm: askConfirm("Proceed?") });
      return text(
        `Name: ${String(accepted(answers.name, "name"))}; confirmed: ${String(accepted(answers.confirm, "confirm"))}`,
      );
    },
  ],
]);

/** Starts the fixture on a free 127.0.0.1 port (2026-07-28 only: 2025 requests are refused). */
export async function startModernConformanceUpstream(): Promise<ConformanceUpstream> {
  const codec = createRequestStateCodec<RoundState>({ key: crypto.getRandomValues(new Uint8Array(32)) });
  const tasks = taskEngine();
  const handler = createMcpHandler(
    () => {
      const server = new TasksServer(
        { name: "conformance-upstream-2026", version: "1.0.0" },
        {
          capabilities: {
            tools: { listChanged: true },
            resources: {},
            prompts: { listChanged: true },
            logging: {},
            completions: {},
            extensions: { [TASKS_EXTENSION]: {} },
          },
          // The caching scenario asks for hints on every cacheable result; the SDK's default (ttlMs 0, private) is one.
          cacheHints: { "tools/list": { ttlMs: 60_000, cacheScope: "public" } },
          requestState: { verify: codec.verify },
        },
      );
      server.setRequestHandler("tools/list", async () => ({ tools }));
      server.setRequestHandler("tools/call", async (request, ctx) => {
        const args = (request.params.arguments ?? {}) as Record<string, unknown>;
        const responses = ctx.mcpReq.inputResponses;
        const state = ctx.mcpReq.requestState<RoundState>();
        const declared = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
          | ClientCapabilities
          | undefined;
        const ask = async (inputRequests: InputRequests, round = 1, name?: string) =>
          inputRequired({
            inputRequests,
            requestState: await codec.mint({ tool: request.params.name, round, ...(name ? { name } : {}) }),
          });
        const answer = (key: string) => inputResponse(responses, key);
        const elicited = (key: string, field: string) => {
          const view = answer(key);
          return view.kind === "elicit" && view.action === "accept" ? String(view.content?.[field] ?? "") : undefined;
        };
        switch (request.params.name) {
          case "test_tool_with_progress":
            return reportProgress(ctx.mcpReq._meta?.progressToken ?? 0, (params) =>
              ctx.mcpReq.notify({ method: "notifications/progress", params }),
            );
          case "test_missing_capability":
            if (!declared?.sampling)
              throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
            return text("Success");
          case "test_input_required_result_elicitation":
          case "test_streaming_elicitation": {
            const name = elicited("user_name", "name");
            if (name === undefined) return ask({ user_name: askName("What is your name?", "name") });
            return text(`Hello, ${name}!`);
          }
          case "test_input_required_result_sampling": {
            const sample = answer("capital_question");
            if (sample.kind !== "sampling") {
              return ask({
                capital_question: inputRequired.createMessage({
                  messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }],
                  maxTokens: 100,
                }),
              });
            }
            const content = sample.result.content;
            return text(`Sampling result: ${!Array.isArray(content) && content.type === "text" ? content.text : ""}`);
          }
          case "test_input_required_result_list_roots": {
            const roots = answer("client_roots");
            if (roots.kind !== "roots") return ask({ client_roots: inputRequired.listRoots() });
            return text(`Found ${roots.roots.length} root(s)`);
          }
          case "test_input_required_result_request_state":
          case "test_input_required_result_tampered_state": {
            const ok = answer("confirm");
            // The signed state proves the round was ours; a tampered one never reaches here (the codec refuses it).
            if (state?.tool !== request.params.name || ok.kind !== "elicit") return ask({ confirm });
            return text("state-ok: requestState validated (integrity-ok)");
          }
          case "test_input_required_result_multiple_inputs": {
            const [name, greeting, roots] = [elicited("user_name", "name"), answer("greeting"), answer("client_roots")];
            if (name === undefined || greeting.kind !== "sampling" || roots.kind !== "roots") {
              return ask({
                user_name: askName("What is your name?", "name"),
                greeting: inputRequired.createMessage({
                  messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }],
                  maxTokens: 50,
                }),
                client_roots: inputRequired.listRoots(),
              });
            }
            return text(`Name: ${name}; Roots: ${roots.roots.length}`);
          }
          case "test_input_required_result_multi_round": {
            const name = elicited("step1", "name");
            if (state?.round === 1 && name !== undefined) {
              return ask({ step2: askName("Step 2: What is your favorite color?", "color") }, 2, name);
            }
            const color = elicited("step2", "color");
            if (state?.round === 2 && color !== undefined) {
              return text(`Multi-round complete for ${state.name} who likes ${color}`);
            }
            return ask({ step1: askName("Step 1: What is your name?", "name") });
          }
          case "test_input_required_result_capabilities": {
            if (responses && Object.keys(responses).length > 0) {
              return text(`capabilities-ok: received ${Object.keys(responses).join(",")}`);
            }
            const inputRequests: InputRequests = {
              ...(declared?.elicitation ? { elicit_input: askName("Elicitation input", "value") } : {}),
              ...(declared?.sampling
                ? {
                    sample_input: inputRequired.createMessage({
                      messages: [{ role: "user", content: { type: "text", text: "Sample request" } }],
                      maxTokens: 50,
                    }),
                  }
                : {}),
            };
            if (Object.keys(inputRequests).length === 0) return text("No supported capabilities declared");
            return ask(inputRequests);
          }
          case "test_logging_tool":
            // ctx.mcpReq.log honours the request's logLevel: no level asked, no message sent.
            await ctx.mcpReq.log("info", "Diagnostic trace logging activated");
            return text(`Logged at ${String((ctx.mcpReq.envelope as Record<string, unknown>)?.[LOG_LEVEL_META_KEY])}`);
          case "test_trigger_tool_change":
            handler.notify.toolsChanged();
            return text("Mutation triggered");
          case "test_trigger_prompt_change":
            handler.notify.promptsChanged();
            return text("Mutation triggered");
          case "test_header_param":
            return text(`Region: ${String(args.region)}`);
          case "greet":
            return text(`Hello, ${String(args.name)}!`);
          case "slow_compute": {
            const seconds = Number(args.seconds ?? 0);
            const done = () => text(`Computed ${String(args.label ?? "")} in ${seconds} s`);
            if (!declaresTasks(ctx)) {
              await sleep(seconds * 1000);
              return done();
            }
            return tasks.start(async ({ signal }) => {
              await sleep(seconds * 1000, undefined, { signal });
              return done();
            }) as never;
          }
          case "test_tool_with_task": {
            // It always ends in a task: a client without the extension is refused before any round.
            if (!declaresTasks(ctx)) throw missingTasksCapability(request.params.name);
            // An input_required round before the task (tasks.md: input needed before creating it is MRTR's).
            const name = elicited("user_name", "name");
            if (name === undefined) return ask({ user_name: askName("What is your name?", "name") });
            return tasks.start(async () => text(`Hello, ${name}!`)) as never;
          }
          default: {
            const work = taskOnly.get(request.params.name);
            if (work) {
              if (!declaresTasks(ctx)) throw missingTasksCapability(request.params.name);
              return tasks.start((task) => work(task, args)) as never;
            }
            const result = contentResult(request.params.name, args);
            if (!result)
              throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
            return result;
          }
        }
      });
      tasks.install(server);
      server.setRequestHandler("resources/list", async () => ({ resources }));
      server.setRequestHandler("resources/templates/list", async () => ({ resourceTemplates }));
      server.setRequestHandler("resources/read", async (request) => {
        const result = readResource(request.params.uri);
        // SEP-2164: an unknown URI is -32602 with the URI in `data`, never an empty `contents`.
        if (!result) throw new ResourceNotFoundError(request.params.uri);
        return result;
      });
      server.setRequestHandler("prompts/list", async () => ({
        prompts: [
          ...prompts,
          { name: "test_input_required_result_prompt", description: "Asks the user for context first" },
        ],
      }));
      server.setRequestHandler("prompts/get", async (request, ctx) => {
        if (request.params.name === "test_input_required_result_prompt") {
          const context = inputResponse(ctx.mcpReq.inputResponses, "user_context");
          if (context.kind !== "elicit") {
            return inputRequired({
              inputRequests: { user_context: askName("What context should the prompt use?", "context") },
            });
          }
          return {
            messages: [
              { role: "user", content: { type: "text", text: `Prompt with context: ${context.content?.context}` } },
            ],
          };
        }
        const result = promptResult(request.params.name, request.params.arguments ?? {});
        if (!result) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown prompt: ${request.params.name}`);
        return result;
      });
      // The suite checks only that completion/complete answers in shape.
      server.setRequestHandler("completion/complete", async () => ({
        completion: { values: [], total: 0, hasMore: false },
      }));
      return server;
    },
    { legacy: "reject" },
  );
  const app = express();
  // DNS rebinding protection (the dns-rebinding-protection scenario): only localhost names in Host.
  app.use((req, res, next) => {
    const host = validateHostHeader(req.headers.host, localhostAllowedHostnames());
    if (host.ok) next();
    else res.status(403).json({ jsonrpc: "2.0", error: { code: -32000, message: host.message }, id: null });
  });
  app.use(express.json());
  const node = toNodeHandler(handler);
  app.all("/mcp", (req, res) => void node(req, res, req.body));
  const httpServer = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => httpServer.once("listening", resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await handler.close();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
