import { request } from "node:http";
import { DeployError } from "./deploy-error.ts";

/** The port a container version's image serves MCP (Streamable HTTP at /mcp) on; it also gets PORT=8080. */
export const CONTAINER_PORT = 8080;
const API = "/v1.41";

interface Endpoint {
  socketPath?: string;
  host?: string;
  port?: number;
  /** The host a published port is reached on. */
  publishedHost: string;
}

/** DOCKER_HOST as Docker's own CLI reads it: `unix:///var/run/docker.sock` or `tcp://host:2375` (no TLS). */
function parseDockerHost(dockerHost: string): Endpoint {
  if (dockerHost.startsWith("unix://"))
    return { socketPath: dockerHost.slice("unix://".length), publishedHost: "127.0.0.1" };
  const url = new URL(dockerHost.replace(/^tcp:/, "http:"));
  if (url.protocol !== "http:") {
    throw new DeployError(
      "container_runtime_unavailable",
      `DOCKER_HOST must be unix:///path or tcp://host:port (TLS is not supported), got a ${url.protocol} URL.`,
    );
  }
  return { host: url.hostname, port: Number(url.port || 2375), publishedHost: url.hostname };
}

/** Where `docker login` would send the credentials: the first segment when it names a host, else Docker Hub. */
function registryOf(imageRef: string): string {
  const [first, ...rest] = imageRef.split("/");
  return rest.length > 0 && first && (first.includes(".") || first.includes(":") || first === "localhost")
    ? first
    : "https://index.docker.io/v1/";
}

/**
 * The few Docker Engine API calls a container version needs: pull the image (with registry credentials), replace
 * the version's container, start it with its port published, and read the published port.
 */
export class DockerEngine {
  private readonly endpoint: Endpoint;

  constructor(dockerHost: string) {
    this.endpoint = parseDockerHost(dockerHost);
  }

  private call(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; text: string }> {
    const { socketPath, host, port } = this.endpoint;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath,
          host,
          port,
          method,
          path: `${API}${path}`,
          headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("error", (error) =>
        reject(
          new DeployError(
            "container_runtime_unavailable",
            `The container engine at DOCKER_HOST could not be reached: ${(error as NodeJS.ErrnoException).code ?? error.message}.`,
          ),
        ),
      );
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }

  /** Pulls the image; the engine streams progress and reports a failure as an `error` line, not a status. */
  async pull(imageRef: string, credentials: { username: string; password: string } | null): Promise<void> {
    const auth: Record<string, string> = credentials
      ? {
          "x-registry-auth": Buffer.from(
            JSON.stringify({ ...credentials, serveraddress: registryOf(imageRef) }),
          ).toString("base64url"),
        }
      : {};
    const res = await this.call("POST", `/images/create?fromImage=${encodeURIComponent(imageRef)}`, undefined, auth);
    const failed =
      res.status >= 400
        ? res.text
        : res.text
            .split("\n")
            .map((line) => {
              try {
                return (JSON.parse(line) as { error?: string }).error;
              } catch {
                return undefined;
              }
            })
            .find(Boolean);
    if (failed) {
      throw new DeployError("image_pull_failed", `Pulling ${imageRef} failed: ${failed.trim().slice(0, 300)}.`);
    }
  }

  /** Replaces the container `name` with a new one of `imageRef` and starts it; returns its MCP endpoint. */
  async run(name: string, imageRef: string, env: Record<string, string>): Promise<string> {
    await this.remove(name);
    const portKey = `${CONTAINER_PORT}/tcp`;
    const created = await this.call("POST", `/containers/create?name=${encodeURIComponent(name)}`, {
      Image: imageRef,
      Env: Object.entries({ ...env, PORT: String(CONTAINER_PORT) }).map(([k, v]) => `${k}=${v}`),
      ExposedPorts: { [portKey]: {} },
      Labels: { "dev.toolplane.managed": "true" },
      HostConfig: {
        // Published on loopback when the engine is local; a remote engine's host must reach it.
        PortBindings: { [portKey]: [{ HostIp: this.endpoint.socketPath ? "127.0.0.1" : "", HostPort: "" }] },
        RestartPolicy: { Name: "unless-stopped" },
      },
    });
    if (created.status !== 201) throw this.failure("creating the container", created);
    const { Id: id } = JSON.parse(created.text) as { Id: string };
    const started = await this.call("POST", `/containers/${id}/start`);
    if (started.status !== 204 && started.status !== 304) throw this.failure("starting the container", started);
    const inspected = await this.call("GET", `/containers/${id}/json`);
    if (inspected.status !== 200) throw this.failure("inspecting the container", inspected);
    const info = JSON.parse(inspected.text) as {
      NetworkSettings?: { Ports?: Record<string, { HostPort?: string }[] | null> };
    };
    const hostPort = info.NetworkSettings?.Ports?.[portKey]?.[0]?.HostPort;
    if (!hostPort) {
      throw new DeployError("container_start_failed", `The container did not publish port ${CONTAINER_PORT}.`);
    }
    return `http://${this.endpoint.publishedHost}:${hostPort}/mcp`;
  }

  /** Removes the container if it exists (a redeploy after a restart replaces the previous attempt's). */
  async remove(name: string): Promise<void> {
    const res = await this.call("DELETE", `/containers/${encodeURIComponent(name)}?force=true`);
    if (res.status !== 204 && res.status !== 404) throw this.failure("removing the previous container", res);
  }

  private failure(step: string, res: { status: number; text: string }): DeployError {
    let message = res.text;
    try {
      message = (JSON.parse(res.text) as { message?: string }).message ?? res.text;
    } catch {
      // not JSON: keep the text
    }
    return new DeployError(
      "container_start_failed",
      `The container engine refused ${step} (HTTP ${res.status}): ${message.trim().slice(0, 300)}.`,
    );
  }
}
