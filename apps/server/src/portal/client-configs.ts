/** Ready-to-paste configuration of one AI client for a connection. */
export interface ClientConfig {
  client: string;
  where: string;
  text: string;
}

/** A server name clients accept: letters, digits and dashes. */
const serverName = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40) || "toolplane";

/**
 * How to add a connection to the clients people use. Every one sends the secret as a bearer header (the gateway
 * never takes it in the URL, where it would end up in logs).
 */
export function clientConfigs(name: string, url: string, secret: string): ClientConfig[] {
  const key = serverName(name);
  const json = (value: unknown) => JSON.stringify(value, null, 2);
  const bearer = `Bearer ${secret}`;
  return [
    {
      client: "Claude Code",
      where: "Run in a terminal:",
      text: `claude mcp add --transport http ${key} ${url} --header "Authorization: ${bearer}"`,
    },
    {
      client: "Claude Desktop",
      where: "Add to claude_desktop_config.json (Settings → Developer → Edit Config); it connects through mcp-remote:",
      text: json({
        mcpServers: {
          [key]: {
            command: "npx",
            // mcp-remote expands ${AUTH_HEADER} itself; the env keeps the space of "Bearer …" out of the args.
            // biome-ignore lint/suspicious/noTemplateCurlyInString: a placeholder for mcp-remote, not for us
            args: ["-y", "mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"],
            env: { AUTH_HEADER: bearer },
          },
        },
      }),
    },
    {
      client: "Cursor",
      where: "Add to ~/.cursor/mcp.json (or .cursor/mcp.json in a project):",
      text: json({ mcpServers: { [key]: { url, headers: { Authorization: bearer } } } }),
    },
    {
      client: "VS Code",
      where: "Add to .vscode/mcp.json in your workspace (or run “MCP: Open User Configuration”):",
      text: json({ servers: { [key]: { type: "http", url, headers: { Authorization: bearer } } } }),
    },
    {
      client: "MCP Inspector",
      where: "List the tools from a terminal (drop --cli and the method to open the Inspector's web page):",
      text: `npx @modelcontextprotocol/inspector --cli ${url} --transport http --header "Authorization: ${bearer}" --method tools/list`,
    },
  ];
}
