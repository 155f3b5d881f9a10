import type { ProviderVersionsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderVersionService } from "./service.ts";

export const providerVersionHandlers = (
  versions: ProviderVersionService,
): ProviderVersionsHandlers<RequestContext> => ({
  listProviderVersions: ({ path, query }, ctx) => versions.list(ctx.instanceId, path.provider_id, query ?? {}),
  getProviderVersion: ({ path }, ctx) => versions.get(ctx.instanceId, path.provider_id, path.provider_version_id),
});
