import { accessSync, constants } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import type { Runtime, RuntimePackage } from "../db/schema.ts";

/** What runs each kind of package, and what installs that runner. */
const RUNNERS: Record<Exclude<RuntimePackage["registry_type"], "mcpb">, { label: string; install: string }> = {
  npm: { label: "npm", install: "Node.js with npm" },
  pypi: { label: "PyPI", install: "uv (https://docs.astral.sh/uv/)" },
  nuget: { label: "NuGet", install: "the .NET 10 SDK" },
  oci: { label: "OCI image", install: "the Docker CLI" },
};

export function onPath(command: string, path = process.env.PATH ?? ""): boolean {
  const candidates = isAbsolute(command) ? [command] : path.split(delimiter).map((dir) => join(dir, command));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Why this server cannot run a runtime's package (an MCP Registry import), or null when it can or the runtime
 * runs no package. Deployments of such a version are refused with it, and the gateway answers it instead of
 * spawning a command that is not there.
 */
export function runnerProblem(runtime: Runtime): string | null {
  const pkg = runtime.package;
  if (!pkg || runtime.type !== "stdio") return null;
  const version = pkg.version ? ` ${pkg.version}` : "";
  if (pkg.registry_type === "mcpb") {
    return `${pkg.identifier} is an MCP bundle (mcpb), which this server does not run; deploy a version of the provider that has a remote or an npm, PyPI, NuGet or OCI package.`;
  }
  const runner = RUNNERS[pkg.registry_type];
  const what = `The ${runner.label} package ${pkg.identifier}${version}`;
  if (!onPath(runtime.command)) {
    return `${what} runs with \`${runtime.command}\`, which is not installed on this server: install ${runner.install} so that \`${runtime.command}\` is on the server's PATH, then deploy again.`;
  }
  if (pkg.registry_type === "oci" && !process.env.DOCKER_HOST) {
    return `${what} runs in a container, and no container engine is configured: set DOCKER_HOST to a Docker Engine API endpoint (for example unix:///var/run/docker.sock) and restart the server, then deploy again.`;
  }
  return null;
}

/** Variables a package's runner needs from the server's environment: the container engine for `docker`. */
export function runnerEnv(runtime: Runtime): Record<string, string> {
  const host = process.env.DOCKER_HOST;
  return runtime.package?.registry_type === "oci" && host ? { DOCKER_HOST: host } : {};
}
