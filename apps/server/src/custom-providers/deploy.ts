import type { CatalogTool, CustomProviderSource, JsonObject, Runtime } from "../db/schema.ts";
import { challengeOf } from "../oauth/mcp-oauth.ts";
import type { UpstreamTarget } from "../runtimes/connect.ts";
import { applyTransformer } from "../runtimes/transformer.ts";
import { DockerEngine } from "./container-engine.ts";
import { DeployError } from "./deploy-error.ts";
import { materializeFunction } from "./function-runtime.ts";
import { ProbeError, probe } from "./probe.ts";

export interface DeployOptions {
  /** Where function versions' files are written. */
  functionsDir: string;
  /** The Docker Engine API endpoint (DOCKER_HOST); unset means no container engine. */
  dockerHost: string | undefined;
  /** Time limit of a remote version's probe (functions bring their own `timeout_ms`). */
  remoteTimeoutMs: number;
}

/** The probe target of a runtime under a config (null while deploying: no deployment config exists yet). */
export function upstreamTarget(runtime: Runtime, config: JsonObject | null): UpstreamTarget {
  return { runtime, ...applyTransformer(runtime.transformer, config) };
}

/**
 * Makes a version runnable and checks it: returns the provider version's final runtime and the tools it lists.
 * Throws ProbeError or DeployError with a code on failure.
 */
export async function deployVersion(
  version: { id: string; source: CustomProviderSource; runtime: Runtime; password: string | null },
  options: DeployOptions,
  signal: AbortSignal,
): Promise<{ runtime: Runtime; tools: CatalogTool[] }> {
  const { id: versionId, source, runtime } = version;
  switch (source.type) {
    case "remote": {
      try {
        const { tools } = await probe(upstreamTarget(runtime, null), { timeoutMs: options.remoteTimeoutMs, signal });
        return { runtime, tools };
      } catch (error) {
        // A server that wants MCP OAuth deploys without a tool list: its tools are listed once a user has signed
        // in through the provider's `mcp_oauth` method, in a session.
        const signIn =
          error instanceof ProbeError && error.code !== "timeout" && runtime.type === "remote"
            ? await challengeOf(runtime.url, fetch).catch(() => undefined)
            : undefined;
        if (signIn) return { runtime, tools: [] };
        throw error;
      }
    }
    case "function": {
      const started = { ...(await materializeFunction(options.functionsDir, versionId, source)), ...pick(runtime) };
      const { tools } = await probe(upstreamTarget(started, null), { timeoutMs: source.timeout_ms, signal });
      return { runtime: started, tools };
    }
    case "container": {
      if (!options.dockerHost) {
        throw new DeployError(
          "container_runtime_unavailable",
          "No container engine is configured: set DOCKER_HOST to a Docker Engine API endpoint (for example unix:///var/run/docker.sock) and restart the server, then create a new version.",
        );
      }
      const engine = new DockerEngine(options.dockerHost);
      const name = `toolplane-${versionId}`;
      await engine.pull(
        source.image_ref,
        source.username && version.password ? { username: source.username, password: version.password } : null,
      );
      const url = await engine.run(name, source.image_ref, applyTransformer(runtime.transformer, null).env);
      const started: Runtime = { type: "remote", url, protocol: "streamable_http", ...pick(runtime) };
      try {
        const tools = await probeWhileStarting(upstreamTarget(started, null), options.remoteTimeoutMs, signal);
        return { runtime: started, tools };
      } catch (error) {
        await engine.remove(name).catch(() => undefined);
        throw error;
      }
    }
  }
}

/** A fresh container needs a moment before it listens: retry while unreachable, within the time limit. */
async function probeWhileStarting(target: UpstreamTarget, timeoutMs: number, signal: AbortSignal) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return (await probe(target, { timeoutMs: Math.max(1000, deadline - Date.now()), signal })).tools;
    } catch (error) {
      if (!(error instanceof ProbeError) || error.code !== "upstream_unreachable" || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

const pick = (runtime: Runtime) => (runtime.transformer ? { transformer: runtime.transformer } : {});
