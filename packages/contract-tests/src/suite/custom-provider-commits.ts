import { customProviderFixture, customProviderMisses } from "./custom-providers.ts";
import { checkMisses } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

/** Versions stay `queued` here (no job runner), so merges are `pending`; every check is independent of deploys. */
export const customProviderCommits = defineSuite({
  tag: "Custom provider commits",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await customProviderFixture(ctx, client, "commits");
    const theirs = await customProviderFixture(ctx, other, "commits, other tenant");
    const misses = customProviderMisses(ctx, theirs.path);
    const merge = {
      message: "Promote v1",
      action: {
        type: "merge_version_into_environment" as const,
        from_environment_id: mine.development,
        to_environment_id: mine.production,
      },
    };
    const commits = (body: unknown, who = client, path = mine.path) =>
      who.POST("/custom-providers/{custom_provider_id}/commits", { params: { path }, body: body as never });

    // createCustomProviderCommit
    const pending = await ctx.ok("createCustomProviderCommit", 201, commits(merge), {
      label: "201 merge of a queued version (pending)",
    });
    await ctx.check(
      "createCustomProviderCommit",
      400,
      commits({ ...merge, action: { ...merge.action, from_environment_id: mine.production } }),
      { code: "invalid_data", label: "400 same source and target environment" },
    );
    await ctx.check(
      "createCustomProviderCommit",
      409,
      commits({ message: "Undo", action: { type: "rollback", to_environment_id: mine.production } }),
      { code: "conflict", label: "409 rollback without an earlier version" },
    );
    await ctx.check(
      "createCustomProviderCommit",
      409,
      commits({
        message: "From empty",
        action: {
          type: "merge_version_into_environment",
          from_environment_id: mine.production,
          to_environment_id: mine.development,
        },
      }),
      { code: "conflict", label: "409 source environment holds no version" },
    );
    await ctx.check(
      "createCustomProviderCommit",
      404,
      commits({ ...merge, action: { ...merge.action, from_environment_id: theirs.development } }),
      { code: "not_found", label: "404 another tenant's environment" },
    );
    await checkMisses(ctx, "createCustomProviderCommit", mine.path, misses, merge);

    // listCustomProviderCommits
    await ctx.ok(
      "listCustomProviderCommits",
      200,
      client.GET("/custom-providers/{custom_provider_id}/commits", {
        params: {
          path: mine.path,
          query: {
            ids: [pending.id],
            custom_provider_version_ids: [pending.target_custom_provider_version.id],
            custom_provider_environment_ids: [mine.production],
            limit: 10,
          },
        },
      }),
    );
    await checkMisses(ctx, "listCustomProviderCommits", mine.path, misses);

    // getCustomProviderCommit
    const item = { ...mine.path, custom_provider_commit_id: pending.id };
    await ctx.ok(
      "getCustomProviderCommit",
      200,
      client.GET("/custom-providers/{custom_provider_id}/commits/{custom_provider_commit_id}", {
        params: { path: item },
      }),
    );
    const theirCommits = await ctx.ok(
      "listCustomProviderCommits",
      200,
      other.GET("/custom-providers/{custom_provider_id}/commits", { params: { path: theirs.path } }),
      { label: "200 as the other tenant" },
    );
    const theirCommitId = theirCommits.items[0]?.id ?? "";
    await checkMisses(ctx, "getCustomProviderCommit", item, [
      [{ ...mine.path, custom_provider_commit_id: ctx.unknownId("custom_provider_commit_id") }, "unknown commit"],
      [{ ...mine.path, custom_provider_commit_id: theirCommitId }, "another tenant's commit under my custom provider"],
      [{ ...theirs.path, custom_provider_commit_id: theirCommitId }, "another tenant's commit"],
    ]);
  },
});
