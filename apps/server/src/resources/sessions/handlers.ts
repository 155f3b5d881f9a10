import type { SessionsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { SessionService } from "./service.ts";

export const sessionHandlers = (sessions: SessionService): SessionsHandlers<RequestContext> => ({
  listSessions: ({ query }, ctx) => sessions.list(ctx.instanceId, query),
  getSession: ({ path }, ctx) => sessions.get(ctx.instanceId, path.session_id),
  createSession: ({ body }, ctx) => sessions.create(ctx.instanceId, body),
  updateSession: ({ path, body }, ctx) => sessions.update(ctx.instanceId, path.session_id, body),
  deleteSession: ({ path }, ctx) => sessions.delete(ctx.instanceId, path.session_id),
});
