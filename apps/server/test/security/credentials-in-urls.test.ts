// Credentials never sit in URLs: the API refuses them in the URLs it stores (saying where they go), and logs and
// messages that quote a URL mask them.
import type { ErrorBody } from "@toolplane/client";
import { maskUrlCredentials } from "@toolplane/server-stubs";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";

const t = useTestServer({ logLevel: "info" });

const createRemote = (remote_url: string) =>
  t.fetch("/custom-providers", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Remote", from: { type: "remote", remote_url } }),
  });

describe("credentials in URLs", () => {
  it("refuses userinfo and secret query parameters in remote_url with a 400 that says where they go", async () => {
    for (const url of [
      "http://user:pass@mcp.example.com/mcp",
      "https://token@mcp.example.com/mcp",
      "https://mcp.example.com/mcp?api_key=sk_live_1",
      "https://mcp.example.com/mcp?x=1&Access-Token=abc",
      "https://mcp.example.com/mcp?password=hunter2",
    ]) {
      const res = await createRemote(url);
      expect(res.status, url).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, url).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(body.errors, url).toContainEqual(
        expect.objectContaining({ code: "credentials_in_url", path: ["from", "remote_url"] }),
      );
      expect(body.message).toMatch(/auth config/);
      expect(JSON.stringify(body)).not.toMatch(/hunter2|sk_live_1|user:pass@/);
    }
    // Ordinary query parameters are fine.
    expect((await createRemote("https://mcp.example.com/mcp?region=eu")).status).toBe(201);
  });

  it("refuses them in redirect_url too", async () => {
    // The body is validated before the deployment is looked up, so any well-formed id shows it.
    const res = await t.fetch("/provider-deployments/pde_01jqz7m3c8v4r2k9x5n6t0w1ya/setup-sessions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirectUrl: "https://app.example.com/done?token=abc" }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body.errors).toContainEqual(expect.objectContaining({ code: "credentials_in_url", path: ["redirectUrl"] }));
  });

  it("masks credentials in logged request URLs and in messages quoting a URL", async () => {
    await t.fetch("/provider-groups?api_key=sk_live_secret&limit=5");
    expect(t.logs()).toContain("api_key=[redacted]");
    expect(t.logs()).not.toContain("sk_live_secret");
    expect(
      maskUrlCredentials("fetch failed for http://user:pw@host:8/mcp?a=1&token=t0k&sig=x#frag (ECONNREFUSED)"),
    ).toBe("fetch failed for http://[redacted]@host:8/mcp?a=1&token=[redacted]&sig=[redacted]#frag (ECONNREFUSED)");
  });
});
