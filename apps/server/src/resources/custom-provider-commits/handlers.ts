import type { CustomProviderCommitsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { Db } from "../../db/database.ts";
import type { CustomProviderService } from "../custom-providers/service.ts";
import type { CustomProviderCommitService } from "./service.ts";

export const customProviderCommitHandlers = (
  db: Db,
  customProviders: CustomProviderService,
  commits: CustomProviderCommitService,
): CustomProviderCommitsHandlers<RequestContext> => {
  const ref = (ctx: RequestContext, id: string) => customProviders.ref(db, ctx.instanceId, id);
  return {
    listCustomProviderCommits: async ({ path, query }, ctx) =>
      commits.list(await ref(ctx, path.custom_provider_id), query ?? {}),
    getCustomProviderCommit: async ({ path }, ctx) =>
      commits.get(await ref(ctx, path.custom_provider_id), path.custom_provider_commit_id),
    createCustomProviderCommit: ({ path, body }, ctx) => commits.create(ctx.instanceId, path.custom_provider_id, body),
  };
};
