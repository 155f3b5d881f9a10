import { toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { memorySkillFiles, SkillsExtension } from "@modelcontextprotocol/server/ext/skills";
import express from "express";
import { listenOnLoopback } from "./loopback.ts";

export interface SkillsUpstream {
  /** The MCP endpoint (2026-07-28, and stateless 2025 requests), served by the SDK v2's createMcpHandler. */
  url: string;
  close(): Promise<void>;
}

/** A skill's SKILL.md: the frontmatter the Agent Skills specification requires, and a body naming `who`. */
const skillFile = (name: string, description: string, who: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n\nServed by ${who}. See references/GUIDE.md.\n`;

/**
 * An upstream of the MCP Skills extension (`io.modelcontextprotocol/skills`, SEP-2640), built with the SDK v2's
 * SkillsExtension over files in memory: `skill://git-workflow/…` (SKILL.md and references/GUIDE.md) whose text names
 * `who` (two of these upstreams serve the same URIs with different content, as the extension allows), and one
 * skill of its own, `skill://<who>/<who>-only/SKILL.md`. Its catalog also answers `resources/directory/read`.
 */
export async function startSkillsUpstream(who: string): Promise<SkillsUpstream> {
  const skills = await SkillsExtension.load(
    memorySkillFiles({
      "git-workflow/SKILL.md": skillFile("git-workflow", "Follow the team's Git conventions", who),
      "git-workflow/references/GUIDE.md": `# Guide of ${who}\n`,
      [`${who}/${who}-only/SKILL.md`]: skillFile(`${who}-only`, `A skill only ${who} serves`, who),
    }),
    { cacheHint: { ttlMs: 60_000, cacheScope: "public" }, onWarning: () => undefined },
  );
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: `skills-${who}`, version: "1.0.0" }, { capabilities: { resources: {} } });
    skills.attach(server);
    return server;
  });
  const app = express();
  app.all("/mcp", toNodeHandler(handler));
  const { base, close } = await listenOnLoopback(app);
  return {
    url: `${base}/mcp`,
    close,
  };
}
