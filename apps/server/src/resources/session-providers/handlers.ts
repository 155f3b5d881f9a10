import type { SessionProvidersHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { SessionProviderService } from "./service.ts";

export const sessionProviderHandlers = (
  providers: SessionProviderService,
): SessionProvidersHandlers<RequestContext> => ({
  listSessionProviders: ({ path, query }, ctx) => providers.list(ctx.instanceId, path.session_id, query),
  getSessionProvider: ({ path }, ctx) => providers.get(ctx.instanceId, path.session_id, path.session_provider_id),
  createSessionProvider: ({ path, body }, ctx) => providers.create(ctx.instanceId, path.session_id, body),
  updateSessionProvider: ({ path, body }, ctx) =>
    providers.update(ctx.instanceId, path.session_id, path.session_provider_id, body),
  deleteSessionProvider: ({ path }, ctx) => providers.delete(ctx.instanceId, path.session_id, path.session_provider_id),
});
