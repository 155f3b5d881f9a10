import type { TaskSeen } from "./gateway.ts";
import { TERMINAL_TASK_STATUSES } from "./task-eras.ts";

/** A task a call of this process created: how to learn where it is, and to record that. */
export interface FollowedTask {
  /** Asks the upstream about the task: its status, and its outcome once it ended. */
  look: () => Promise<TaskSeen>;
  /** Writes what was seen into the call's record. */
  record: (seen: TaskSeen) => Promise<void>;
  /** The upstream's suggested polling interval and the task's time to live, as it created the task. */
  pollIntervalMs?: number;
  ttlMs?: number;
}

/**
 * How often a task is asked about at most (TOOLPLANE_TASK_FOLLOW_MS, default 1 s; 0 follows none) and at least, and
 * for how long at most, whatever the upstream says.
 */
const fastestPollMs = () => {
  const value = Number(process.env.TOOLPLANE_TASK_FOLLOW_MS ?? 1_000);
  return Number.isFinite(value) && value >= 0 ? value : 1_000;
};
const SLOWEST_POLL_MS = 60_000;
const LONGEST_FOLLOW_MS = 24 * 60 * 60_000;
/** Asks in a row that may fail (the upstream restarted and forgot it, say) before the task is left to its record. */
const FAILURES_TOLERATED = 5;
/** Tasks followed at once per process: a bound on the polling a burst of task-creating calls can start. */
const MOST_FOLLOWED = 1_000;

/**
 * Follows the tasks that calls through this process created until they end, so each call's record shows how its
 * task went even when no client polls it or listens for it (MCP leaves following a task to its requestor: tasks/get,
 * 2025-11-25 basic/utilities/tasks "Task Polling", and the Tasks extension's, tasks.md). Clients' own tasks/get and
 * status notifications keep writing what they see; this only fills in what nobody asked.
 *
 * The upstream's `pollIntervalMs` is honoured, but no faster than TOOLPLANE_TASK_FOLLOW_MS (1 s), and the interval
 * doubles (up to a minute) while the status stays the same. Following stops when the task ends (its outcome recorded: the
 * extension's tasks/get carries it, 2025's tasks/result gives it), when its time to live is over (a day at most),
 * after FAILURES_TOLERATED failed asks in a row, and when the process stops. Only the process that made the call
 * follows it; a task of a process that stopped keeps the last status recorded.
 */
export class TaskFollower {
  private readonly followed = new Map<string, AbortController>();

  /** Follows `task` (by `key`, once however often it is named), now in `status`. */
  follow(key: string, status: string, task: FollowedTask): void {
    const fastest = fastestPollMs();
    if (fastest === 0 || TERMINAL_TASK_STATUSES.has(status)) return;
    if (this.followed.has(key) || this.followed.size >= MOST_FOLLOWED) return;
    const stop = new AbortController();
    this.followed.set(key, stop);
    void this.run(status, task, Math.max(fastest, task.pollIntervalMs ?? 0), stop.signal).finally(() =>
      this.followed.delete(key),
    );
  }

  /** How many tasks are followed now. */
  get size(): number {
    return this.followed.size;
  }

  stopAll(): void {
    for (const stop of this.followed.values()) stop.abort();
    this.followed.clear();
  }

  private async run(status: string, task: FollowedTask, fastest: number, signal: AbortSignal): Promise<void> {
    const until = Date.now() + Math.min(task.ttlMs ?? LONGEST_FOLLOW_MS, LONGEST_FOLLOW_MS);
    let interval = fastest;
    let failures = 0;
    let last = status;
    while (Date.now() < until && failures < FAILURES_TOLERATED) {
      if (!(await pause(interval, signal))) return;
      try {
        const seen = await task.look();
        if (signal.aborted) return;
        failures = 0;
        if (seen.status !== last || TERMINAL_TASK_STATUSES.has(seen.status)) await task.record(seen);
        if (TERMINAL_TASK_STATUSES.has(seen.status)) return;
        interval = seen.status === last ? Math.min(interval * 2, SLOWEST_POLL_MS) : fastest;
        last = seen.status;
      } catch {
        failures += 1;
        interval = Math.min(interval * 2, SLOWEST_POLL_MS);
      }
    }
  }
}

/** Waits `ms` without keeping the process alive; false when `signal` aborted first. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", stopped);
      resolve(true);
    }, ms).unref();
    const stopped = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", stopped, { once: true });
  });
}

/** The tasks this process follows, whichever gateway instance's calls created them (stopped on shutdown). */
export const tasksFollowed = new TaskFollower();
