import type { ProviderListingsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderListingService } from "./service.ts";

export const providerListingHandlers = (
  listings: ProviderListingService,
): ProviderListingsHandlers<RequestContext> => ({
  listProviderListings: ({ query }, ctx) => listings.list(ctx.instanceId, query ?? {}),
  getProviderListing: ({ path }, ctx) => listings.get(ctx.instanceId, path.provider_listing_id),
});
