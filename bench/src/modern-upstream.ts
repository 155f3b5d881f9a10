// The 2026-07-28 upstream of figure 4, in its own process (mcp.ts starts it): the server tests' fixture, so the
// bench calls the same server the proxy tests do. Sends its URL to the parent and stops on SIGTERM.
import { startModernUpstream } from "../../apps/server/test/support/upstream-modern.ts";

const upstream = await startModernUpstream();
process.send?.({ url: upstream.url });
process.once("SIGTERM", () => {
  void upstream.close().then(() => process.exit(0));
});
