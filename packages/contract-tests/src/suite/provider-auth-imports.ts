import { checkMisses, createAuthConfig, TOKENS } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerAuthImports = defineSuite({
  tag: "Provider auth imports",
  async run(ctx) {
    const { client, other } = ctx;
    const { path: mine, oauthMethodId, tokenMethodId } = await createAuthConfig(ctx, client, "imports");
    const { path: theirs } = await createAuthConfig(ctx, other, "imports, other tenant");
    const unknownConfig = { ...mine, provider_auth_config_id: ctx.unknownId("provider_auth_config_id") };
    const unknownMethod = "pam_00000000000000000000000000";
    const collection = "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}/imports";
    const body = { note: "From the contract tests", value: TOKENS };

    // getProviderAuthImportSchema
    const schemaPath = `${collection}/schema` as const;
    await ctx.ok("getProviderAuthImportSchema", 200, client.GET(schemaPath, { params: { path: mine } }));
    if (tokenMethodId) {
      await ctx.ok(
        "getProviderAuthImportSchema",
        200,
        client.GET(schemaPath, { params: { path: mine, query: { provider_auth_method_id: tokenMethodId } } }),
        { label: "200 for another auth method" },
      );
    }
    await ctx.check(
      "getProviderAuthImportSchema",
      404,
      client.GET(schemaPath, { params: { path: mine, query: { provider_auth_method_id: unknownMethod } } }),
      { code: "not_found", label: "404 unknown auth method" },
    );
    await checkMisses(ctx, "getProviderAuthImportSchema", mine, [
      [unknownConfig, "unknown auth config"],
      [theirs, "another tenant's auth config"],
    ]);

    // createProviderAuthImport
    const imported = await ctx.ok(
      "createProviderAuthImport",
      201,
      client.POST(collection, { params: { path: mine }, body: { ...body, metadata: { ticket: "QA-1" } } }),
    );
    await ctx.ok(
      "createProviderAuthImport",
      201,
      client.POST(collection, { params: { path: mine }, body: { ...body, providerAuthMethodId: oauthMethodId } }),
      { label: "201 naming the auth method" },
    );
    await ctx.check(
      "createProviderAuthImport",
      400,
      client.POST(collection, {
        params: { path: mine },
        body: { note: "No access token", value: { token_type: "Bearer" } },
      }),
      { code: "invalid_data", label: "400 value breaks the import schema" },
    );
    await ctx.notFound("createProviderAuthImport", mine, "unknown auth method", {
      ...body,
      providerAuthMethodId: unknownMethod,
    });
    await checkMisses(
      ctx,
      "createProviderAuthImport",
      mine,
      [
        [unknownConfig, "unknown auth config"],
        [theirs, "another tenant's auth config"],
      ],
      body,
    );
    const theirImport = await ctx.ok(
      "createProviderAuthImport",
      201,
      other.POST(collection, { params: { path: theirs }, body }),
      {
        label: "201 as the other tenant",
      },
    );

    // listProviderAuthImports
    await ctx.ok(
      "listProviderAuthImports",
      200,
      client.GET(collection, { params: { path: mine, query: { limit: 1 } } }),
    );
    await checkMisses(ctx, "listProviderAuthImports", mine, [
      [unknownConfig, "unknown auth config"],
      [theirs, "another tenant's auth config"],
    ]);

    // getProviderAuthImport
    const item = { ...mine, provider_auth_import_id: imported.id };
    await ctx.ok(
      "getProviderAuthImport",
      200,
      client.GET(`${collection}/{provider_auth_import_id}`, { params: { path: item } }),
    );
    await checkMisses(ctx, "getProviderAuthImport", item, [
      [{ ...mine, provider_auth_import_id: ctx.unknownId("provider_auth_import_id") }, "unknown id"],
      [{ ...theirs, provider_auth_import_id: theirImport.id }, "another tenant's import"],
      [{ ...mine, provider_auth_import_id: theirImport.id }, "another tenant's import id under my auth config"],
    ]);
  },
});
