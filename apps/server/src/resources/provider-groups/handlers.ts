import type { ProviderGroupsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderGroupService } from "./service.ts";

export const providerGroupHandlers = (groups: ProviderGroupService): ProviderGroupsHandlers<RequestContext> => ({
  listProviderGroups: ({ query }, ctx) => groups.list(ctx.instanceId, query),
  getProviderGroup: ({ path }, ctx) => groups.get(ctx.instanceId, path.provider_group_id),
  createProviderGroup: ({ body }, ctx) => groups.create(ctx.instanceId, body),
  updateProviderGroup: ({ path, body }, ctx) => groups.update(ctx.instanceId, path.provider_group_id, body),
  addProviderGroupListing: ({ path, body }, ctx) =>
    groups.addListing(ctx.instanceId, path.provider_group_id, body.provider_listing_id),
  removeProviderGroupListing: ({ path }, ctx) =>
    groups.removeListing(ctx.instanceId, path.provider_group_id, path.provider_listing_id),
});
