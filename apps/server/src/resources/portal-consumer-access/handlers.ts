import type { PortalConsumerAccessHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { PortalConsumerAccessService } from "./service.ts";

export const portalConsumerAccessHandlers = (
  access: PortalConsumerAccessService,
): PortalConsumerAccessHandlers<RequestContext> => ({
  listPortalConsumerAccess: ({ path, query }, ctx) => access.list(ctx.instanceId, path.portal_id, query),
  getPortalConsumerAccess: ({ path }, ctx) => access.get(ctx.instanceId, path.portal_id, path.consumer_access_id),
  createPortalConsumerAccess: ({ path, body }, ctx) => access.create(ctx.instanceId, path.portal_id, body),
  deletePortalConsumerAccess: ({ path }, ctx) => access.delete(ctx.instanceId, path.portal_id, path.consumer_access_id),
});
