// Waiting without busy loops (docs/api.md "Runs on the node"): execute and GET /v1/swarm/runs/{id}?wait= wait for a
// run to finish, a node's long poll waits for work, and a follow of a run's log (docs/api.md "Run logs") for its
// next entries. Whatever changes a run in this process wakes its waiters at
// once, and on PostgreSQL every other instance's too (LISTEN/NOTIFY); a waiter also looks at the database every
// `recheckMs`, so a change whose notification was lost (or a wake-up lost to a race) is seen within that bound.
import { EventEmitter } from 'node:events';
import type { Notifications } from '../store/postgres-notifications.js';

export interface RunEvents {
  /** A run finished (the node's result, the sweeper). */
  finished(runId: string): void;
  /** A run of this user was queued: its nodes' polls look for work. */
  queued(userId: string): void;
  /** Entries of a run's log were stored: its followers read them. */
  logged(runId: string): void;
  /**
   * Resolves with `check()`'s first defined answer, asked at once, on every wake-up of `topic` (or of any of
   * several) and every `recheckMs`; undefined when `waitMs` passed or `signal` aborted first.
   */
  waitFor<T>(topic: EventTopic | readonly EventTopic[], check: () => Promise<T | undefined>, waitMs: number, signal: AbortSignal): Promise<T | undefined>;
}

export type EventTopic = { run: string } | { user: string } | { logs: string };

/**
 * `notifications` (PostgreSQL): what changes here is told to the other instances on the database, and what they
 * tell wakes the waiters here, at once rather than at their next recheck.
 */
export function createRunEvents(recheckMs: number, notifications?: Notifications): RunEvents {
  const emitter = new EventEmitter();
  // Every long poll and every waiting execute listens: thousands are normal, not a leak.
  emitter.setMaxListeners(0);
  const nameOf = (topic: EventTopic): string => ('run' in topic ? `run:${topic.run}` : 'user' in topic ? `user:${topic.user}` : `logs:${topic.logs}`);
  const changed = (name: string): void => {
    emitter.emit(name);
    notifications?.publish(name);
  };
  void notifications?.listen((name) => emitter.emit(name));

  return {
    finished: (runId) => changed(`run:${runId}`),
    queued: (userId) => changed(`user:${userId}`),
    logged: (runId) => changed(`logs:${runId}`),
    async waitFor(topic, check, waitMs, signal) {
      if (waitMs <= 0 || signal.aborted) return check();
      return new Promise((resolve, reject) => {
        const names = (Array.isArray(topic) ? topic : [topic as EventTopic]).map(nameOf);
        let looking = false;
        let again = false;
        let stopping = false;
        let settled = false;
        /** Ends the wait once, with its value or the check's error, and lets go of every listener and timer. */
        const settle = (end: () => void): void => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          clearInterval(recheck);
          for (const name of names) emitter.off(name, look);
          signal.removeEventListener('abort', stop);
          end();
        };
        const done = (value: Awaited<ReturnType<typeof check>>): void => settle(() => resolve(value));
        // One check at a time: a wake-up during a check asks again right after it, never a second check alongside.
        const look = (): void => {
          if (settled) return;
          if (looking) {
            again = true;
            return;
          }
          looking = true;
          check().then(
            (value) => {
              looking = false;
              if (value !== undefined || stopping) done(value as Awaited<ReturnType<typeof check>>);
              else if (again) {
                again = false;
                look();
              }
            },
            (error: unknown) => settle(() => reject(error)),
          );
        };
        // The end of the wait lets a check under way finish and answers with what it found: a poll's check may have
        // leased runs by then, which would otherwise wait out their lease for nobody.
        const stop = (): void => {
          if (looking) stopping = true;
          else done(undefined);
        };
        const deadline = setTimeout(stop, waitMs);
        const recheck = setInterval(look, recheckMs);
        // Listening before the first check: a change while that check is under way (a poll's lease waits for its
        // group commit) asks again right after it, where listening after it would miss the change until the recheck.
        for (const name of names) emitter.on(name, look);
        signal.addEventListener('abort', stop, { once: true });
        look();
      });
    },
  };
}
