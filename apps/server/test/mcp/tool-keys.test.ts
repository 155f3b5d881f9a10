import { describe, expect, it } from "vitest";
import { assignToolKeys, MAX_TOOL_KEY_LENGTH } from "../../src/mcp/tool-keys.ts";

const source = (id: string, slug: string, ...names: string[]) => ({ id, slug, names });

describe("assignToolKeys", () => {
  it("keeps unique names, replacing characters outside [a-zA-Z0-9_-]", () => {
    expect(assignToolKeys([source("spv_1", "github", "get_me", "search.code", "list issues")])).toEqual([
      ["get_me", "search_code", "list_issues"],
    ]);
  });

  it("prefixes names that collide across providers with the provider slug", () => {
    expect(assignToolKeys([source("spv_1", "everything", "echo", "add"), source("spv_2", "ours", "echo")])).toEqual([
      ["everything_echo", "add"],
      ["ours_echo"],
    ]);
  });

  it("adds a hash of the session provider when the slug does not separate them (same provider twice)", () => {
    const [first, second] = assignToolKeys([source("spv_1", "ev", "echo"), source("spv_2", "ev", "echo")]);
    expect(first?.[0]).toMatch(/^ev_echo_[0-9a-f]{8}$/);
    expect(second?.[0]).toMatch(/^ev_echo_[0-9a-f]{8}$/);
    expect(first?.[0]).not.toBe(second?.[0]);
  });

  it("keeps every key within 60 characters, distinct for names that share a long head", () => {
    const long = "x".repeat(80);
    const [[a, b] = []] = assignToolKeys([source("spv_1", "p", `${long}1`, `${long}2`)]);
    expect(a?.length).toBe(MAX_TOOL_KEY_LENGTH);
    expect(b?.length).toBe(MAX_TOOL_KEY_LENGTH);
    expect(a).not.toBe(b);
    const [[prefixed] = [], [other] = []] = assignToolKeys([
      source("spv_1", "a-very-long-provider-slug-indeed", "x".repeat(55)),
      source("spv_2", "b", "x".repeat(55)),
    ]);
    expect(prefixed?.length).toBeLessThanOrEqual(MAX_TOOL_KEY_LENGTH);
    expect(prefixed).toMatch(/^a-very-long-provider-slug-indeed_x+_[0-9a-f]{8}$/);
    expect(other).toMatch(/^b_x+$/);
  });

  it("is deterministic", () => {
    const sources = [source("spv_1", "a", "echo", "sum"), source("spv_2", "b", "echo")];
    expect(assignToolKeys(sources)).toEqual(assignToolKeys(structuredClone(sources)));
  });
});
