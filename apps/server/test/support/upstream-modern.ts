import type { AddressInfo } from "node:net";
import { toNodeHandler } from "@modelcontextprotocol/node";
import {
  createMcpHandler,
  inputRequired,
  LOG_LEVEL_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type ServerCapabilities,
  type ServerContext,
  type Tool,
} from "@modelcontextprotocol/server";
import express from "express";
import { TASKS_EXTENSION, TasksServer, type TasksUpstream, tasksExtension } from "./upstream-tasks.ts";

export interface ModernUpstream {
  /** The MCP endpoint: MCP 2026-07-28 (and stateless 2025 requests), served by the SDK v2's createMcpHandler. */
  url: string;
  /** Requests the server saw cancelled (by request id), e.g. by a client's `notifications/cancelled`. */
  cancelled: number;
  /** How many `subscriptions/listen` streams are open to it now. */
  listening: number;
  /** The methods it has no handler of its own for (its extensions', say) that it was sent, in order. */
  extensionCalls: string[];
  /** Its tasks (see upstream-tasks.ts), when it offers the Tasks extension. */
  tasks: TasksUpstream;
  close(): Promise<void>;
}

const text = (s: string) => ({ content: [{ type: "text" as const, text: s }] });
/** The requestState of `confirm`'s input_required round. */
const CONFIRM_STATE = "confirm.round-1";
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** The resource whose read asks the client something (see askedName). */
export const ASKING_MEMO = "memo://day/ask";
/** The requestState of askedName's round. */
const NAME_STATE = "name.round-1";

/**
 * The name the client gave in the answer to this request's input_required round (checked to come back with the
 * round's own requestState), or the round that asks it.
 */
function askedName(ctx: ServerContext, message: string) {
  const answer = ctx.mcpReq.inputResponses?.name as { action?: string; content?: { name?: string } } | undefined;
  if (!answer) {
    return inputRequired({
      inputRequests: {
        name: inputRequired.elicit({
          message,
          requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
        }),
      },
      requestState: NAME_STATE,
    });
  }
  if (ctx.mcpReq.requestState() !== NAME_STATE) return `a requestState of ${String(ctx.mcpReq.requestState())}`;
  return answer.action === "accept" ? String(answer.content?.name) : String(answer.action);
}

/**
 * An upstream of the current MCP revision (2026-07-28), built with the SDK v2 the way its documentation shows:
 * tools `shout`, `countdown` (progress every `stepMs` for `steps` steps), `confirm` (asks the client through an
 * `input_required` elicitation), `chatty` (announces a tool list change on the call's stream), `grow` (adds a tool and announces the list change on `subscriptions/listen`
 * streams), `touch` (announces an update of `memo://today`), `logs` (three log messages, whatever level the request
 * asked for, and the level it asked for), `capabilities` (the client capabilities of the request), `widget` (with an MCP Apps UI
 * resource), a resource, a resource template, a prompt whose argument completes (the prompt `greet` of "?" and the
 * resource memo://day/ask ask a name in an input_required round first), and `extensions` (by default
 * `io.toolplane.test/widgets`): it serves `<name>/…` for each `<vendor>/<name>` of them, answering which extension
 * served which method with which params; any other method MCP does not define is MethodNotFound. With the Tasks
 * extension among them, the tool `report` and the extension's methods (see upstream-tasks.ts).
 */
export async function startModernUpstream(
  options: { extensions?: ServerCapabilities["extensions"] } = {},
): Promise<ModernUpstream> {
  const extensions = options.extensions ?? { "io.toolplane.test/widgets": { version: 1 } };
  const state = { cancelled: 0, listening: 0, extensionCalls: [] as string[] };
  const grown: Tool[] = [];
  const offersTasks = extensions?.[TASKS_EXTENSION] !== undefined;
  const tasks = tasksExtension();
  const handler = createMcpHandler(() => {
    const server = new TasksServer(
      { name: "modern-upstream", version: "1.0.0" },
      {
        capabilities: {
          tools: { listChanged: true },
          resources: { subscribe: true, listChanged: true },
          prompts: {},
          completions: {},
          logging: {},
          extensions,
        },
        instructions: "Modern upstream: shouts and counts down.",
      },
    );
    const tools: Tool[] = [
      {
        name: "shout",
        description: "Upper-cases the text.",
        inputSchema: { type: "object", properties: { text: { type: "string" } } },
      },
      {
        name: "countdown",
        description: "Counts down with progress.",
        inputSchema: { type: "object", properties: { steps: { type: "number" }, stepMs: { type: "number" } } },
      },
      { name: "confirm", description: "Asks the user to confirm.", inputSchema: { type: "object" } },
      { name: "grow", description: "Adds a tool.", inputSchema: { type: "object" } },
      { name: "touch", description: "Updates memo://today.", inputSchema: { type: "object" } },
      { name: "chatty", description: "Announces a tool list change while it runs.", inputSchema: { type: "object" } },
      {
        name: "widget",
        description: "A tool with an MCP Apps UI.",
        inputSchema: { type: "object" },
        _meta: { ui: { resourceUri: "ui://widget/app.html" }, "ui/resourceUri": "ui://widget/app.html" },
      },
      {
        name: "capabilities",
        description: "Answers the client capabilities the request declared.",
        inputSchema: { type: "object" },
      },
      {
        name: "logs",
        description: "Logs at debug, info and error whatever level was asked, and answers the level it was asked.",
        inputSchema: { type: "object" },
      },
      ...(offersTasks ? [tasks.tool] : []),
      ...grown,
    ];
    server.setRequestHandler("tools/list", async () => ({ tools }));
    server.setRequestHandler("tools/call", async (request, ctx) => {
      const args = (request.params.arguments ?? {}) as Record<string, unknown>;
      switch (request.params.name) {
        case "shout":
          return text(String(args.text).toUpperCase());
        case "countdown": {
          const steps = Number(args.steps ?? 3);
          const progressToken = ctx.mcpReq._meta?.progressToken;
          for (let i = 1; i <= steps; i++) {
            await sleep(Number(args.stepMs ?? 100), ctx.mcpReq.signal);
            if (ctx.mcpReq.signal.aborted) {
              state.cancelled++;
              return text("cancelled");
            }
            if (progressToken !== undefined) {
              await ctx.mcpReq.notify({
                method: "notifications/progress",
                params: { progressToken, progress: i, total: steps },
              });
            }
          }
          return text(`liftoff after ${steps}`);
        }
        case "confirm": {
          const answer = ctx.mcpReq.inputResponses?.ok as { action?: string; content?: { ok?: boolean } } | undefined;
          if (!answer) {
            return inputRequired({
              inputRequests: {
                ok: inputRequired.elicit({
                  message: "Proceed?",
                  requestedSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
                }),
              },
              requestState: CONFIRM_STATE,
            });
          }
          // The retry must bring back the state this round gave out, as it was.
          const state = ctx.mcpReq.requestState();
          if (state !== CONFIRM_STATE) return text(`requestState came back as ${JSON.stringify(state)}`);
          return text(answer.action === "accept" && answer.content?.ok ? "confirmed" : "declined");
        }
        case "grow": {
          const name = `grown_${grown.length + 1}`;
          grown.push({ name, description: "A tool added by grow.", inputSchema: { type: "object" } });
          handler.notify.toolsChanged();
          return text(name);
        }
        case "touch":
          handler.notify.resourceUpdated("memo://today");
          return text("touched");
        case "chatty":
          await ctx.mcpReq.notify({ method: "notifications/tools/list_changed" });
          return text("done");
        case "widget":
          return text("widget shown");
        case "capabilities": {
          const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
          return text(JSON.stringify(envelope?.["io.modelcontextprotocol/clientCapabilities"] ?? null));
        }
        case "logs": {
          // Sent as they are (not through ctx.mcpReq.log, which honours the level): what the gateway must filter.
          for (const level of ["debug", "info", "error"] as const) {
            await ctx.mcpReq.notify({ method: "notifications/message", params: { level, data: `${level} line` } });
          }
          const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
          return text(`level: ${String(envelope?.[LOG_LEVEL_META_KEY] ?? "none")}`);
        }
        case "report":
          if (offersTasks) return tasks.call(args, ctx) as never;
          return { ...text("unknown tool report"), isError: true };
        default:
          if (grown.some((tool) => tool.name === request.params.name)) return text(`${request.params.name} ran`);
          return { ...text(`unknown tool ${request.params.name}`), isError: true };
      }
    });
    server.setRequestHandler("resources/list", async () => ({
      resources: [{ uri: "memo://today", name: "today", mimeType: "text/plain" }],
    }));
    server.setRequestHandler("resources/templates/list", async () => ({
      resourceTemplates: [{ uriTemplate: "memo://day/{day}", name: "day", mimeType: "text/plain" }],
    }));
    server.setRequestHandler("resources/read", async (request, ctx) => {
      const { uri } = request.params;
      // memo://day/ask is read only once the client named the day, in an input_required round.
      const day = uri === ASKING_MEMO ? askedName(ctx, "Which day?") : uri;
      if (typeof day !== "string") return day;
      return { contents: [{ uri, mimeType: "text/plain", text: `memo for ${day}` }] };
    });
    server.setRequestHandler("prompts/list", async () => ({
      prompts: [{ name: "greet", description: "A greeting.", arguments: [{ name: "who", required: true }] }],
    }));
    server.setRequestHandler("prompts/get", async (request, ctx) => {
      // Greeting "?" asks whom in an input_required round.
      const given = request.params.arguments?.who;
      const who = given === "?" ? askedName(ctx, "Greet whom?") : String(given);
      if (typeof who !== "string") return who;
      return { messages: [{ role: "user", content: { type: "text", text: `Say hello to ${who}.` } }] };
    });
    server.setRequestHandler("completion/complete", async (request) => {
      const prefix = String(request.params.argument.value);
      const values = ["ada", "alan", "grace"].filter((v) => v.startsWith(prefix));
      return { completion: { values, total: values.length, hasMore: false } };
    });
    if (offersTasks) tasks.install(server);
    server.fallbackRequestHandler = async (request) => {
      state.extensionCalls.push(request.method);
      const family = request.method.split("/")[0];
      const extension = Object.keys(extensions ?? {}).find((id) => id.endsWith(`/${family}`));
      if (!extension) throw new ProtocolError(ProtocolErrorCode.MethodNotFound, `Method not found: ${request.method}`);
      return { extension, method: request.method, params: request.params ?? {} };
    };
    return server;
  });
  const app = express();
  app.use(express.json());
  const node = toNodeHandler(handler);
  app.all("/mcp", (req, res) => {
    if (req.body?.method === "subscriptions/listen") {
      state.listening++;
      res.on("close", () => state.listening--);
    }
    if (offersTasks && tasks.listens(req.body)) tasks.listen(req, res, handler.bus);
    else void node(req, res, req.body);
  });
  const httpServer = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => httpServer.once("listening", resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get cancelled() {
      return state.cancelled;
    },
    get listening() {
      return state.listening;
    },
    extensionCalls: state.extensionCalls,
    tasks: tasks.state,
    close: async () => {
      await handler.close();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
