import type { CustomProviderVersionsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { Db } from "../../db/database.ts";
import type { CustomProviderService } from "../custom-providers/service.ts";
import type { CustomProviderVersionService } from "./service.ts";

export const customProviderVersionHandlers = (
  db: Db,
  customProviders: CustomProviderService,
  versions: CustomProviderVersionService,
): CustomProviderVersionsHandlers<RequestContext> => {
  const ref = (ctx: RequestContext, id: string) => customProviders.ref(db, ctx.instanceId, id);
  return {
    listCustomProviderVersions: async ({ path, query }, ctx) =>
      versions.list(await ref(ctx, path.custom_provider_id), query ?? {}),
    getCustomProviderVersion: async ({ path }, ctx) =>
      versions.get(await ref(ctx, path.custom_provider_id), path.custom_provider_version_id),
    createCustomProviderVersion: ({ path, body }, ctx) =>
      versions.create(ctx.instanceId, path.custom_provider_id, body),
  };
};
