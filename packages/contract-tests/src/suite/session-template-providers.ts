import { deploymentRef, deploymentWithConfig } from "./sessions.ts";
import { defineSuite } from "./types.ts";

export const sessionTemplateProviders = defineSuite({
  tag: "Session template providers",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await deploymentWithConfig(ctx, client, "template providers");
    const second = await deploymentWithConfig(ctx, client, "template providers, second");
    const theirs = await deploymentWithConfig(ctx, other, "template providers, other tenant");
    const entry = { provider_deployment: deploymentRef(mine.deployment.id) };
    const template = await ctx.ok(
      "createSessionTemplate",
      201,
      client.POST("/session-templates", { body: { name: "Template for providers" } }),
      { label: "201 template for providers" },
    );
    const theirTemplate = await ctx.ok(
      "createSessionTemplate",
      201,
      other.POST("/session-templates", {
        body: { name: "Their template", providers: { provider_deployment: deploymentRef(theirs.deployment.id) } },
      }),
      { label: "201 template (other tenant)" },
    );
    const templatePath = { session_template_id: template.id };
    const theirTemplatePath = { session_template_id: theirTemplate.id };
    const unknownTemplate = { session_template_id: ctx.unknownId("session_template_id") };

    // createSessionTemplateProvider
    const added = await ctx.ok(
      "createSessionTemplateProvider",
      201,
      client.POST("/session-templates/{session_template_id}/providers", {
        params: { path: templatePath },
        body: {
          ...entry,
          provider_config: { type: "reference", provider_config_id: mine.config.id },
          tool_filters: { tool_keys: ["echo"] },
          name: "Contract template provider",
        },
      }),
    );
    await ctx.check(
      "createSessionTemplateProvider",
      400,
      client.POST("/session-templates/{session_template_id}/providers", {
        params: { path: templatePath },
        body: { ...entry, provider_config: { type: "reference", provider_config_id: second.config.id } },
      }),
      { code: "invalid_data", label: "400 config of another deployment" },
    );
    await ctx.check(
      "createSessionTemplateProvider",
      404,
      client.POST("/session-templates/{session_template_id}/providers", {
        params: { path: templatePath },
        body: { provider_deployment: deploymentRef(theirs.deployment.id) },
      }),
      { code: "not_found", label: "404 another tenant's deployment" },
    );
    await ctx.notFound("createSessionTemplateProvider", unknownTemplate, "unknown template", entry);
    await ctx.notFound("createSessionTemplateProvider", theirTemplatePath, "another tenant's template", entry);
    await ctx.standardErrors("createSessionTemplateProvider", templatePath);

    // listSessionTemplateProviders
    await ctx.ok(
      "listSessionTemplateProviders",
      200,
      client.GET("/session-templates/{session_template_id}/providers", {
        params: { path: templatePath, query: { limit: 1, provider_id: [added.provider_id] } },
      }),
    );
    await ctx.notFound("listSessionTemplateProviders", unknownTemplate, "unknown template");
    await ctx.notFound("listSessionTemplateProviders", theirTemplatePath, "another tenant's template");
    await ctx.standardErrors("listSessionTemplateProviders", templatePath);

    // getSessionTemplateProvider
    const theirProviders = await ctx.ok(
      "listSessionTemplateProviders",
      200,
      other.GET("/session-templates/{session_template_id}/providers", { params: { path: theirTemplatePath } }),
      { label: "200 as the other tenant" },
    );
    const item = { ...templatePath, session_template_provider_id: added.id };
    const unknown = { ...templatePath, session_template_provider_id: ctx.unknownId("session_template_provider_id") };
    const theirItem = { ...theirTemplatePath, session_template_provider_id: theirProviders.items[0]?.id ?? "" };
    await ctx.ok(
      "getSessionTemplateProvider",
      200,
      client.GET("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path: item },
      }),
    );
    await ctx.notFound("getSessionTemplateProvider", unknown, "unknown id");
    await ctx.notFound("getSessionTemplateProvider", theirItem, "another tenant's provider");
    await ctx.standardErrors("getSessionTemplateProvider", item);

    // updateSessionTemplateProvider
    await ctx.ok(
      "updateSessionTemplateProvider",
      200,
      client.PATCH("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path: item },
        body: {
          provider_deployment: deploymentRef(second.deployment.id),
          provider_config: null,
          tool_filters: null,
          name: null,
        },
      }),
    );
    await ctx.check(
      "updateSessionTemplateProvider",
      400,
      client.PATCH("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path: item },
        body: { provider_config: { type: "reference", provider_config_id: mine.config.id } },
      }),
      { code: "invalid_data", label: "400 config of another deployment" },
    );
    await ctx.notFound("updateSessionTemplateProvider", unknown, "unknown id", { name: "x" });
    await ctx.notFound("updateSessionTemplateProvider", theirItem, "another tenant's provider", { name: "x" });
    await ctx.standardErrors("updateSessionTemplateProvider", item);

    // deleteSessionTemplateProvider
    await ctx.ok(
      "deleteSessionTemplateProvider",
      200,
      client.DELETE("/session-templates/{session_template_id}/providers/{session_template_provider_id}", {
        params: { path: item },
      }),
    );
    await ctx.notFound("deleteSessionTemplateProvider", item, "already deleted");
    await ctx.notFound("deleteSessionTemplateProvider", theirItem, "another tenant's provider");
    await ctx.standardErrors("deleteSessionTemplateProvider", item);
  },
});
