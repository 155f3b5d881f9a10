// A server under test, in its own process (forked by main.ts with IPC), so the load generator never shares its
// event loop or its core with the server it measures.
//   BENCH_MODE=full  the real app (createApp) on PGlite (BENCH_DATA_DIR) or PostgreSQL (DATABASE_URL), with the
//                    production logger at LOG_LEVEL (default info; main.ts sends stdout to /dev/null), the
//                    built-in catalog and BENCH_CATALOG_DIR's entries
//   BENCH_MODE=bare  a bare Express 5 app with the same app settings and two JSON routes that answer BENCH_PAYLOAD
// Both print nothing; they report over IPC: { type: "ready", url, … } and answer { type: "seed" } and { type: "stop" }.
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import {
  bundledSpec,
  createApiKey,
  createApp,
  createInstance,
  createLogger,
  type DatabaseHandle,
  openMigratedDatabase,
  SecretBox,
} from "@toolplane/server";
import express, { type Express } from "express";
import type { ParentMessage, TargetMessage } from "./protocol.ts";
import { seedDeployments } from "./seed.ts";

const send = (message: TargetMessage) => process.send?.(message);
const BUILTIN_CATALOG = fileURLToPath(new URL("../../catalog/", import.meta.url));

async function listen(app: Express): Promise<{ server: Server; url: string }> {
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** The control baseline: Express 5 with the app's settings, no middleware, a constant JSON body. */
function bareApp(payload: unknown): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", false);
  app.get("/provider-deployments/:id", (_req, res) => {
    res.json(payload);
  });
  app.post("/provider-deployments", express.json({ limit: 1024 * 1024 }), (_req, res) => {
    res.status(201).json(payload);
  });
  return app;
}

async function main() {
  const mode = process.env.BENCH_MODE;
  let database: DatabaseHandle | undefined;
  let instanceId = "";
  let providerId = "";
  let providers: Record<string, string> = {};
  let app: Express;
  let apiKey = "";
  if (mode === "bare") {
    app = bareApp(JSON.parse(process.env.BENCH_PAYLOAD ?? "{}"));
  } else if (mode === "full") {
    const databaseUrl = process.env.DATABASE_URL || undefined;
    const dataDir = process.env.BENCH_DATA_DIR ?? "";
    if (!databaseUrl && !dataDir) throw new Error("full mode needs DATABASE_URL or BENCH_DATA_DIR");
    // BENCH_CATALOG_DIR adds catalog entries (figures 4 and 5: a provider whose upstream the benchmark runs).
    const extraCatalog = process.env.BENCH_CATALOG_DIR;
    const catalogDirs = extraCatalog ? [BUILTIN_CATALOG, extraCatalog] : undefined;
    database = await openMigratedDatabase({ databaseUrl, dataDir, catalogDirs });
    instanceId = await createInstance(database.db, "bench");
    apiKey = (await createApiKey(database.db, instanceId, "bench")).key;
    const catalog = await database.db
      .selectFrom("providers")
      .select(["id", "slug"])
      .where("instance_id", "is", null)
      .execute();
    providers = Object.fromEntries(catalog.map((p) => [p.slug, p.id]));
    providerId = providers.github ?? "";
    if (!providerId) throw new Error("the built-in catalog has no github provider");
    app = createApp({
      db: database.db,
      spec: bundledSpec,
      logger: createLogger(process.env.LOG_LEVEL ?? "info"),
      publicUrl: "http://127.0.0.1",
      bodyLimitBytes: 1024 * 1024,
      secrets: new SecretBox([{ id: "bench", key: randomBytes(32) }]),
      changes: database.changes,
    });
  } else {
    throw new Error(`BENCH_MODE must be full or bare, got ${mode}`);
  }

  const { server, url } = await listen(app);
  const handle = database;
  let profiler: Session | undefined;
  process.on("message", (message: ParentMessage) => {
    void (async () => {
      if (message.type === "seed") {
        if (!handle) throw new Error("seed needs a database");
        const seeded = await seedDeployments(handle.db, { instanceId, providerId, rows: message.rows });
        send({ type: "seeded", ...seeded });
      } else if (message.type === "profile-start") {
        // The V8 sampling profiler over exactly the measured window (not start-up, not the warm-up).
        profiler = new Session();
        profiler.connect();
        await profiler.post("Profiler.enable");
        await profiler.post("Profiler.setSamplingInterval", { interval: 200 });
        await profiler.post("Profiler.start");
        send({ type: "profiling" });
      } else if (message.type === "profile-stop") {
        if (!profiler) throw new Error("not profiling");
        const { profile } = await profiler.post("Profiler.stop");
        profiler.disconnect();
        profiler = undefined;
        writeFileSync(message.file, JSON.stringify(profile));
        send({ type: "profiled", file: message.file });
      } else if (message.type === "stop") {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await handle?.close();
        send({ type: "stopped" });
        process.disconnect?.();
        process.exit(0);
      }
    })().catch((err: unknown) => {
      send({ type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    });
  });
  send({
    type: "ready",
    url,
    apiKey,
    providerId,
    providers,
    instanceId,
    pid: process.pid,
    database: handle?.kind ?? null,
  });
}

main().catch((err: unknown) => {
  send({ type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exitCode = 1;
});
