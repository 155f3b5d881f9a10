import type { ToolCallsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ToolCallService } from "./service.ts";

export const toolCallHandlers = (toolCalls: ToolCallService): ToolCallsHandlers<RequestContext> => ({
  listToolCalls: ({ query }, ctx) => toolCalls.list(ctx.instanceId, query),
  getToolCall: ({ path }, ctx) => toolCalls.get(ctx.instanceId, path.tool_call_id),
  listSessionToolCalls: ({ path, query }, ctx) => toolCalls.list(ctx.instanceId, query, path.session_id),
  getSessionToolCall: ({ path }, ctx) => toolCalls.get(ctx.instanceId, path.tool_call_id, path.session_id),
  createSessionToolCall: ({ path, body }, ctx) => toolCalls.create(ctx.instanceId, path.session_id, body),
});
