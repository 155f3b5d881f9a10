import { describe, expect, it } from "vitest";
import { MAX_KEY_LENGTH, Namespaces } from "../../src/mcp/keys.ts";

const one = new Namespaces([{ id: "spv_1", slug: "github" }]);
const two = new Namespaces([
  { id: "spv_1", slug: "github" },
  { id: "spv_2", slug: "linear" },
]);

describe("session-wide keys", () => {
  it("leave a one-provider session transparent: names and URIs as the upstream gave them", () => {
    expect(one.key("spv_1", "create_issue")).toBe("create_issue");
    expect(one.key("spv_1", "files.read")).toBe("files.read");
    // Even what MCP does not allow, or longer than a key may be with several providers: as the server shows it.
    expect(one.key("spv_1", "files.read/all")).toBe("files.read/all");
    const long = "report.generate.quarterly.summary.with.every.department.and.region.included";
    expect(one.key("spv_1", long)).toBe(long);
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

  it("leave a web URI as it is with several providers (the owner is found by the lists), and qualify it on demand", () => {
    expect(two.uri("spv_2", "https://linear.app/issue/1")).toBe("https://linear.app/issue/1");
    expect(two.uri("spv_2", "http://linear.local/issue/1")).toBe("http://linear.local/issue/1");
    expect(two.resolveUri("https://linear.app/issue/1")).toBeNull();
    // Qualified, as a web URI two providers list, or a task id, is: reversible.
    expect(two.qualified("spv_2", "https://linear.app/issue/1")).toBe("linear+https://linear.app/issue/1");
    expect(two.resolveUri("linear+https://linear.app/issue/1")).toEqual({
      providerId: "spv_2",
      uri: "https://linear.app/issue/1",
    });
    expect(two.qualified("spv_1", "task-1")).toBe("github+task-1");
    expect(one.qualified("spv_1", "https://x.test/a")).toBe("https://x.test/a");
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
    // Never the prefix of a provider whose own slug is that: each provider keeps a prefix of its own.
    const clash = new Namespaces([
      { id: "spv_1", slug: "github" },
      { id: "spv_2", slug: "github" },
      { id: "spv_3", slug: "github2" },
    ]);
    const keys = ["spv_1", "spv_2", "spv_3"].map((id) => clash.key(id, "x"));
    expect(keys).toEqual(["github_x", "github3_x", "github2_x"]);
    expect(clash.candidates("github3_x")).toEqual(["spv_2"]);
    expect(clash.resolveUri("github2+a://b")).toEqual({ providerId: "spv_3", uri: "a://b" });
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
    expect(key).toMatch(/^[a-zA-Z0-9_.~-]+$/);
    expect(key).toContain("report.generate_quarterly");
    expect(two.key("spv_1", `${name}.v2`)).not.toBe(key);
    expect(two.candidates(key)).toEqual(["spv_1"]);
  });

  it("keep a name MCP allows as it is, `.` included", () => {
    expect(two.key("spv_1", "files.read")).toBe("github_files.read");
    expect(two.key("spv_2", "get-issue_v2")).toBe("linear_get-issue_v2");
  });

  it("give two names of one provider two keys, however alike they are made, from the name alone", () => {
    const names = ["a.b", "a/b", "a b", "a_b", "a:b"];
    const keys = names.map((name) => two.key("spv_1", name));
    expect(new Set(keys).size).toBe(names.length);
    expect(keys[0]).toBe("github_a.b");
    expect(keys[3]).toBe("github_a_b");
    // A name changed to fit ends with a hash of the name as it was (the same in any session, whatever else it has).
    expect(keys[1]).toMatch(/^github_a_b_[0-9a-f]{8}$/);
    expect(
      new Namespaces([
        { id: "spv_9", slug: "github" },
        { id: "spv_8", slug: "x" },
      ]).key("spv_9", "a/b"),
    ).toBe(keys[1]);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_.-]+$/);

    const head = "x".repeat(MAX_KEY_LENGTH);
    const long = [`${head}.first`, `${head}.second`, `${head}/first`];
    const longKeys = long.map((name) => two.key("spv_1", name));
    expect(new Set(longKeys).size).toBe(long.length);
    for (const key of longKeys) expect(key.length).toBeLessThanOrEqual(MAX_KEY_LENGTH);
  });

  it("tell a tool filter the key a tool had before keys kept `.`", () => {
    expect(one.formerKey("spv_1", "files.read")).toBe("files_read");
    expect(two.formerKey("spv_2", "files.read")).toBe("linear_files_read");
  });
});
