// Messages between main.ts and a target server process (target.ts), over the fork IPC channel.

export interface Seeded {
  rows: number;
  /** Wall time of the bulk load, index rebuild and ANALYZE. */
  ms: number;
  /** Seeded row 20: a page after it is shallow. */
  shallowId: string;
  /** Seeded row rows-30: a page after it lies about `rows` deep. */
  deepId: string;
}

export type ParentMessage =
  | { type: "seed"; rows: number }
  | { type: "profile-start" }
  | { type: "profile-stop"; file: string }
  | { type: "stop" };

export type TargetMessage =
  | {
      type: "ready";
      url: string;
      apiKey: string;
      /** The built-in github provider (what figures 1–3 deploy). */
      providerId: string;
      /** Every catalog provider's id by slug. */
      providers: Record<string, string>;
      instanceId: string;
      pid: number;
      database: "pglite" | "postgres" | null;
    }
  | ({ type: "seeded" } & Seeded)
  | { type: "profiling" }
  | { type: "profiled"; file: string }
  | { type: "stopped" }
  | { type: "error"; message: string };
