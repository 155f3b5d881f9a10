import type { PortalsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { PortalService } from "./service.ts";

export const portalHandlers = (portals: PortalService): PortalsHandlers<RequestContext> => ({
  listPortals: ({ query }, ctx) => portals.list(ctx.instanceId, query),
  getPortal: ({ path }, ctx) => portals.get(ctx.instanceId, path.portal_id),
  createPortal: ({ body }, ctx) => portals.create(ctx.instanceId, body),
  updatePortal: ({ path, body }, ctx) => portals.update(ctx.instanceId, path.portal_id, body),
  deletePortal: ({ path }, ctx) => portals.delete(ctx.instanceId, path.portal_id),
});
