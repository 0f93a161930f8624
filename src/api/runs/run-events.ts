// Waiting without busy loops (docs/api.md "Runs on the node"): execute and GET /v1/swarm/runs/{id}?wait= wait for a
// run to finish, and a node's long poll waits for work. Whatever changes a run in this process wakes its waiters at
// once; a waiter also looks at the database every `recheckMs`, so a change made by another service instance (or a
// wake-up lost to a race) is seen within that bound.
import { EventEmitter } from 'node:events';

export interface RunEvents {
  /** A run finished (the node's result, the sweeper). */
  finished(runId: string): void;
  /** A run of this user was queued: its nodes' polls look for work. */
  queued(userId: string): void;
  /**
   * Resolves with `check()`'s first defined answer, asked at once, on every wake-up of `topic` and every `recheckMs`;
   * undefined when `waitMs` passed or `signal` aborted first.
   */
  waitFor<T>(topic: EventTopic, check: () => T | undefined, waitMs: number, signal: AbortSignal): Promise<T | undefined>;
}

export type EventTopic = { run: string } | { user: string };

export function createRunEvents(recheckMs: number): RunEvents {
  const emitter = new EventEmitter();
  // Every long poll and every waiting execute listens: thousands are normal, not a leak.
  emitter.setMaxListeners(0);
  const nameOf = (topic: EventTopic): string => ('run' in topic ? `run:${topic.run}` : `user:${topic.user}`);

  return {
    finished: (runId) => void emitter.emit(`run:${runId}`),
    queued: (userId) => void emitter.emit(`user:${userId}`),
    waitFor(topic, check, waitMs, signal) {
      const first = check();
      if (first !== undefined || waitMs <= 0 || signal.aborted) return Promise.resolve(first);
      return new Promise((resolve) => {
        const name = nameOf(topic);
        const done = (value: ReturnType<typeof check>): void => {
          clearTimeout(deadline);
          clearInterval(recheck);
          emitter.off(name, look);
          signal.removeEventListener('abort', stop);
          resolve(value);
        };
        const look = (): void => {
          const value = check();
          if (value !== undefined) done(value);
        };
        const stop = (): void => done(undefined);
        const deadline = setTimeout(stop, waitMs);
        const recheck = setInterval(look, recheckMs);
        emitter.on(name, look);
        signal.addEventListener('abort', stop, { once: true });
      });
    },
  };
}
