import { checkMisses, createAuthConfig, TOKENS } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerAuthExports = defineSuite({
  tag: "Provider auth exports",
  async run(ctx) {
    const { client, other } = ctx;
    const { path: mine } = await createAuthConfig(ctx, client, "exports");
    const { path: theirs } = await createAuthConfig(ctx, other, "exports, other tenant");
    const unknownConfig = { ...mine, provider_auth_config_id: ctx.unknownId("provider_auth_config_id") };
    const base = "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}";
    const collection = `${base}/exports` as const;
    const body = { note: "Contract tests export" };

    // createProviderAuthExport: a pending auth config (no tokens yet) has nothing to export.
    await ctx.check("createProviderAuthExport", 409, client.POST(collection, { params: { path: mine }, body }), {
      code: "conflict",
      label: "409 auth config still pending",
    });
    const importTokens = (path: typeof mine, who: typeof client, label: string) =>
      ctx.ok(
        "createProviderAuthImport",
        201,
        who.POST(`${base}/imports`, { params: { path }, body: { note: "Tokens to export", value: TOKENS } }),
        { label: `201 tokens to export (${label})` },
      );
    await importTokens(mine, client, "mine");
    await importTokens(theirs, other, "theirs");
    const exported = await ctx.ok(
      "createProviderAuthExport",
      201,
      client.POST(collection, { params: { path: mine }, body: { ...body, metadata: { ticket: "QA-2" } } }),
    );
    await ctx.check(
      "createProviderAuthExport",
      400,
      client.POST(collection, { params: { path: mine }, body: { note: "" } }),
      { code: "invalid_data", label: "400 empty note" },
    );
    await checkMisses(
      ctx,
      "createProviderAuthExport",
      mine,
      [
        [unknownConfig, "unknown auth config"],
        [theirs, "another tenant's auth config"],
      ],
      body,
    );
    const theirExport = await ctx.ok(
      "createProviderAuthExport",
      201,
      other.POST(collection, { params: { path: theirs }, body }),
      {
        label: "201 as the other tenant",
      },
    );

    // listProviderAuthExports
    await ctx.ok(
      "listProviderAuthExports",
      200,
      client.GET(collection, { params: { path: mine, query: { order: "desc" } } }),
    );
    await checkMisses(ctx, "listProviderAuthExports", mine, [
      [unknownConfig, "unknown auth config"],
      [theirs, "another tenant's auth config"],
    ]);

    // getProviderAuthExport
    const item = { ...mine, provider_auth_export_id: exported.id };
    await ctx.ok(
      "getProviderAuthExport",
      200,
      client.GET(`${collection}/{provider_auth_export_id}`, { params: { path: item } }),
    );
    await checkMisses(ctx, "getProviderAuthExport", item, [
      [{ ...mine, provider_auth_export_id: ctx.unknownId("provider_auth_export_id") }, "unknown id"],
      [{ ...theirs, provider_auth_export_id: theirExport.id }, "another tenant's export"],
    ]);
  },
});
