import type { PortalConsumersHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { PortalConsumerService } from "./service.ts";

export const portalConsumerHandlers = (consumers: PortalConsumerService): PortalConsumersHandlers<RequestContext> => ({
  listPortalConsumers: ({ path, query }, ctx) => consumers.list(ctx.instanceId, path.portal_id, query),
  getPortalConsumer: ({ path }, ctx) => consumers.get(ctx.instanceId, path.portal_id, path.consumer_id),
  revokePortalConsumer: ({ path }, ctx) => consumers.revoke(ctx.instanceId, path.portal_id, path.consumer_id),
  listPortalConsumerSessions: ({ path, query }, ctx) => consumers.listSessions(ctx.instanceId, path.portal_id, query),
  revokePortalConsumerSession: ({ path }, ctx) =>
    consumers.revokeSession(ctx.instanceId, path.portal_id, path.consumer_session_id),
});
