import { deploymentRef, deploymentWithConfig } from "./sessions.ts";
import { defineSuite } from "./types.ts";

export const sessionTemplates = defineSuite({
  tag: "Session templates",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await deploymentWithConfig(ctx, client, "templates");
    const second = await deploymentWithConfig(ctx, client, "templates, second");
    const theirs = await deploymentWithConfig(ctx, other, "templates, other tenant");
    const entry = { provider_deployment: deploymentRef(mine.deployment.id) };

    // createSessionTemplate
    const template = await ctx.ok(
      "createSessionTemplate",
      201,
      client.POST("/session-templates", {
        body: { name: "Contract template", description: "Made by the contract tests", providers: [entry] },
      }),
    );
    await ctx.ok(
      "createSessionTemplate",
      201,
      client.POST("/session-templates", { body: { name: "Copy", providers: { session_template_id: template.id } } }),
      { label: "201 from another template" },
    );
    await ctx.check(
      "createSessionTemplate",
      400,
      client.POST("/session-templates", {
        body: {
          name: "Mismatch",
          providers: { ...entry, provider_config: { type: "reference", provider_config_id: second.config.id } },
        },
      }),
      { code: "invalid_data", label: "400 config of another deployment" },
    );
    await ctx.check(
      "createSessionTemplate",
      404,
      client.POST("/session-templates", {
        body: { name: "Theirs", providers: { provider_deployment: deploymentRef(theirs.deployment.id) } },
      }),
      { code: "not_found", label: "404 another tenant's deployment" },
    );
    await ctx.standardErrors("createSessionTemplate");
    const theirTemplate = await ctx.ok(
      "createSessionTemplate",
      201,
      other.POST("/session-templates", { body: { name: "Their template" } }),
      { label: "201 as the other tenant" },
    );

    // listSessionTemplates
    await ctx.ok("listSessionTemplates", 200, client.GET("/session-templates", { params: { query: { limit: 1 } } }));
    await ctx.standardErrors("listSessionTemplates");

    // getSessionTemplate
    const item = { session_template_id: template.id };
    const unknown = { session_template_id: ctx.unknownId("session_template_id") };
    const theirItem = { session_template_id: theirTemplate.id };
    await ctx.ok(
      "getSessionTemplate",
      200,
      client.GET("/session-templates/{session_template_id}", { params: { path: item } }),
    );
    await ctx.notFound("getSessionTemplate", unknown, "unknown id");
    await ctx.notFound("getSessionTemplate", theirItem, "another tenant's template");
    await ctx.standardErrors("getSessionTemplate", item);

    // updateSessionTemplate
    await ctx.ok(
      "updateSessionTemplate",
      200,
      client.PATCH("/session-templates/{session_template_id}", {
        params: { path: item },
        body: { name: "Renamed template", description: null, metadata: null },
      }),
    );
    await ctx.notFound("updateSessionTemplate", unknown, "unknown id", { name: "x" });
    await ctx.notFound("updateSessionTemplate", theirItem, "another tenant's template", { name: "x" });
    await ctx.standardErrors("updateSessionTemplate", item);
  },
});
