import { describe, expect, it } from "vitest";
import { MAX_KEY_LENGTH, Namespaces } from "../../src/mcp/keys.ts";

const one = new Namespaces([{ id: "spv_1", slug: "github" }]);
const two = new Namespaces([
  { id: "spv_1", slug: "github" },
  { id: "spv_2", slug: "linear" },
]);

describe("session-wide keys", () => {
  it("leave a one-provider session transparent: names made safe, URIs as the upstream gave them", () => {
    expect(one.key("spv_1", "create_issue")).toBe("create_issue");
    expect(one.key("spv_1", "files.read/all")).toBe("files_read_all");
    expect(one.uri("spv_1", "file:///tmp/a")).toBe("file:///tmp/a");
    expect(one.resolveUri("file:///tmp/a")).toEqual({ providerId: "spv_1", uri: "file:///tmp/a" });
  });

  it("prefix every key and URI with the provider's slug when there are several, whichever names collide", () => {
    expect(two.key("spv_1", "create_issue")).toBe("github_create_issue");
    expect(two.key("spv_2", "search")).toBe("linear_search");
    expect(two.uri("spv_2", "linear://issue/1")).toBe("linear+linear://issue/1");
    expect(two.resolveUri("linear+linear://issue/1")).toEqual({ providerId: "spv_2", uri: "linear://issue/1" });
    expect(two.resolveUri("jira+x://1")).toBeNull();
    // An MCP Apps UI resource keeps the `ui://` scheme hosts know it by.
    expect(two.uri("spv_2", "ui://board/app.html")).toBe("ui://linear+board/app.html");
    expect(two.resolveUri("ui://linear+board/app.html")).toEqual({ providerId: "spv_2", uri: "ui://board/app.html" });
    expect(two.resolveUri("ui://board/app.html")).toBeNull();
    expect(two.candidates("github_create_issue")).toEqual(["spv_1"]);
  });

  it("depend on the configured providers only, so a key survives an upstream that does not answer", () => {
    const again = new Namespaces([
      { id: "spv_1", slug: "github" },
      { id: "spv_2", slug: "linear" },
    ]);
    expect(again.key("spv_1", "create_issue")).toBe(two.key("spv_1", "create_issue"));
  });

  it("number a slug that two providers share, in the order of their session provider ids", () => {
    const twice = new Namespaces([
      { id: "spv_1", slug: "github" },
      { id: "spv_2", slug: "github" },
    ]);
    expect(twice.key("spv_1", "x")).toBe("github_x");
    expect(twice.key("spv_2", "x")).toBe("github2_x");
    expect(twice.resolveUri("github2+a://b")).toEqual({ providerId: "spv_2", uri: "a://b" });
  });

  it("keep the tool's own name whole when a long slug would push the key past 60 characters", () => {
    const long = new Namespaces([
      { id: "spv_1", slug: "enterprise-knowledge-base-connector-for-the-whole-company" },
      { id: "spv_2", slug: "other" },
    ]);
    const key = long.key("spv_1", "search_documents");
    expect(key.length).toBeLessThanOrEqual(MAX_KEY_LENGTH);
    expect(key.endsWith("_search_documents")).toBe(true);
    expect(long.candidates(key)).toEqual(["spv_1"]);
  });

  it("cut only a name that is itself longer than a key, ending it with a hash of the whole", () => {
    const name = "report.generate/quarterly.summary.with.every.department.and.region.included";
    const key = two.key("spv_1", name);
    expect(key.length).toBe(MAX_KEY_LENGTH);
    expect(key).toMatch(/^[a-zA-Z0-9_~-]+$/);
    expect(key).toContain("report_generate_quarterly");
    expect(two.key("spv_1", `${name}.v2`)).not.toBe(key);
    expect(two.candidates(key)).toEqual(["spv_1"]);
  });
});
