import type { PortalInvitationsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { PortalInvitationService } from "./service.ts";

export const portalInvitationHandlers = (
  invitations: PortalInvitationService,
): PortalInvitationsHandlers<RequestContext> => ({
  listPortalInvitations: ({ path, query }, ctx) => invitations.list(ctx.instanceId, path.portal_id, query),
  createPortalInvitation: ({ path, body }, ctx) => invitations.create(ctx.instanceId, path.portal_id, body),
  getPortalInvitation: ({ path }, ctx) => invitations.get(ctx.instanceId, path.portal_id, path.invitation_id),
  revokePortalInvitation: ({ path }, ctx) => invitations.revoke(ctx.instanceId, path.portal_id, path.invitation_id),
});
