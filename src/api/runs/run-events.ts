// Waiting without busy loops (docs/api.md "Runs on the node"): execute and GET /v1/swarm/runs/{id}?wait= wait for a
// run to finish, a node's long poll waits for work, and a follow of a run's log (docs/api.md "Run logs") for its
// next entries. Whatever changes a run in this process wakes its waiters at once, and on PostgreSQL every other
// instance's too (LISTEN/NOTIFY); a waiter also looks at the database every `recheckMs`, so a change whose
// notification was lost (or a wake-up lost to a race) is seen within that bound.
//
// Each wake-up wakes what it concerns, once (docs/api.md "Storage"): a queued run wakes one held poll of each of its
// user's nodes, not all of them (a node takes any run of its user it can, up to its capacity, so one of its polls is
// enough); a cancel wakes every poll of the user, since only the node's poll that lists the run stops it; a run
// finished here hands its final answer to its waiters, which then need not read it back.
import { EventEmitter } from 'node:events';
import type { Notifications } from '../store/postgres-notifications.js';

export interface RunEvents {
  /** How often a waiter looks at the database without a wake-up. */
  readonly recheckMs: number;
  /** A run finished (the node's result, the sweeper); `answer`: its final answer, handed to the waiters here. */
  finished(runId: string, answer?: string): void;
  /** A run of this user was queued (or may now be taken by a node): one poll of each of its nodes looks for work. */
  queued(userId: string): void;
  /** A cancel of a run of this user was asked for: every held poll of its nodes looks at the runs it holds. */
  cancelAsked(userId: string): void;
  /** Entries of a run's log, or events of it, were stored: their followers read them. */
  logged(runId: string): void;
  /**
   * How many runs of this user were queued (or became takable) as this instance heard of them: a poll that found
   * the queue drained at a count need not look again before it moves (dispatch.ts). Undefined: none heard of yet.
   */
  queuedCount(userId: string): number | undefined;
  /**
   * Whether every run queued reaches queuedCount: one process on its SQLite file, or the only instance on its
   * PostgreSQL database while it listens. Otherwise another instance's runs are heard only when its notification is.
   */
  hearsEverything(): boolean;
  /**
   * Resolves with `check()`'s first defined answer, asked at once, on every wake-up of `topic` (or of any of
   * several) and every `recheckMs`; undefined when `waitMs` passed or `signal` aborted first. `check` is told why it
   * looks, with what the wake-up handed over (the final answer of a run finished here).
   */
  waitFor<T>(
    topic: EventTopic | readonly EventTopic[],
    check: (wake: Wake) => Promise<T | undefined>,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<T | undefined>;
}

/** `work`: a poll of node `node` waiting for the runs its user queues (one per node is woken). */
export type EventTopic = { run: string } | { user: string } | { logs: string } | { work: string; node: string };

export interface Wake {
  /** first: the look before any wake-up; event: a wake-up of a topic; recheck: the periodic look. */
  reason: 'first' | 'event' | 'recheck';
  /** What the wake-up handed over: a run's final answer. */
  hint?: string;
}

/**
 * A final answer up to this size goes with its run's notification to the other instances (PostgreSQL's payload is
 * at most 8,000 bytes, and several topics share one), so their waiting execute need not read it; a longer one is read.
 */
const MAX_ANSWER_NOTIFIED_BYTES = 3_000;

/** Users whose queued runs are counted at most (the oldest go first: their polls look, as for a user never heard of). */
const COUNTED_USERS = 100_000;

interface WorkWaiter {
  look(wake: Wake): void;
  busy(): boolean;
}

/**
 * `notifications` (PostgreSQL): what changes here is told to the other instances on the database, and what they
 * tell wakes the waiters here, at once rather than at their next recheck.
 */
export function createRunEvents(recheckMs: number, notifications?: Notifications): RunEvents {
  const emitter = new EventEmitter();
  // Every long poll and every waiting execute listens: thousands are normal, not a leak.
  emitter.setMaxListeners(0);
  /** user → node → the polls of that node waiting for work, the one woken last at the end. */
  const work = new Map<string, Map<string, WorkWaiter[]>>();
  const nameOf = (topic: Exclude<EventTopic, { work: string }>): string =>
    'run' in topic ? `run:${topic.run}` : 'user' in topic ? `user:${topic.user}` : `logs:${topic.logs}`;
  const counts = new Map<string, number>();
  /** One poll of each node of the user: an idle one if there is, else the one woken longest ago (it looks again). */
  const wakeWork = (userId: string): void => {
    const count = (counts.get(userId) ?? 0) + 1;
    counts.delete(userId);
    if (counts.size >= COUNTED_USERS) counts.delete(counts.keys().next().value!);
    counts.set(userId, count);
    for (const waiters of work.get(userId)?.values() ?? []) {
      const index = Math.max(
        0,
        waiters.findIndex((waiter) => !waiter.busy()),
      );
      const [chosen] = waiters.splice(index, 1);
      waiters.push(chosen!);
      chosen!.look({ reason: 'event' });
    }
  };
  const heard = (line: string): void => {
    if (line.startsWith('work:')) return wakeWork(line.slice('work:'.length));
    // `run:<id> <answer>`: a run finished elsewhere, with its final answer.
    const space = line.indexOf(' ');
    if (space < 0) emitter.emit(line, { reason: 'event' } satisfies Wake);
    else emitter.emit(line.slice(0, space), { reason: 'event', hint: line.slice(space + 1) } satisfies Wake);
  };
  void notifications?.listen(heard);

  return {
    recheckMs,
    finished(runId, answer) {
      emitter.emit(`run:${runId}`, { reason: 'event', ...(answer === undefined ? {} : { hint: answer }) } satisfies Wake);
      // A JSON text holds no line break, so it goes on the topic's line.
      const told = answer !== undefined && Buffer.byteLength(answer) <= MAX_ANSWER_NOTIFIED_BYTES ? ` ${answer}` : '';
      notifications?.publish(`run:${runId}${told}`);
    },
    queued(userId) {
      wakeWork(userId);
      notifications?.publish(`work:${userId}`);
    },
    cancelAsked(userId) {
      emitter.emit(`user:${userId}`, { reason: 'event' } satisfies Wake);
      notifications?.publish(`user:${userId}`);
    },
    logged(runId) {
      emitter.emit(`logs:${runId}`, { reason: 'event' } satisfies Wake);
      notifications?.publish(`logs:${runId}`);
    },
    queuedCount: (userId) => counts.get(userId),
    hearsEverything: () => notifications === undefined || notifications.alone(),
    async waitFor(topic, check, waitMs, signal) {
      if (waitMs <= 0 || signal.aborted) return check({ reason: 'first' });
      return new Promise((resolve, reject) => {
        const topics = Array.isArray(topic) ? topic : [topic as EventTopic];
        const names = topics.filter((each): each is Exclude<EventTopic, { work: string }> => !('work' in each)).map(nameOf);
        const polls = topics.filter((each): each is { work: string; node: string } => 'work' in each);
        let looking = false;
        /** A wake-up during a check: looked at right after it, with what it handed over. */
        let again: Wake | undefined;
        let stopping = false;
        let settled = false;
        const waiter: WorkWaiter = { look: (wake) => look(wake), busy: () => looking };
        /** Ends the wait once, with its value or the check's error, and lets go of every listener and timer. */
        const settle = (end: () => void): void => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          clearInterval(recheck);
          for (const name of names) emitter.off(name, look);
          for (const poll of polls) {
            const nodes = work.get(poll.work);
            const waiters = nodes?.get(poll.node);
            waiters?.splice(waiters.indexOf(waiter), 1);
            if (waiters?.length === 0) nodes!.delete(poll.node);
            if (nodes?.size === 0) work.delete(poll.work);
          }
          signal.removeEventListener('abort', stop);
          end();
        };
        const done = (value: Awaited<ReturnType<typeof check>>): void => settle(() => resolve(value));
        // One check at a time: a wake-up during a check asks again right after it, never a second check alongside.
        const look = (wake: Wake): void => {
          if (settled) return;
          if (looking) {
            again = again?.hint !== undefined && wake.hint === undefined ? again : wake;
            return;
          }
          looking = true;
          check(wake).then(
            (value) => {
              looking = false;
              if (value !== undefined || stopping) done(value as Awaited<ReturnType<typeof check>>);
              else if (again !== undefined) {
                const next = again;
                again = undefined;
                look(next);
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
        const recheck = setInterval(() => look({ reason: 'recheck' }), recheckMs);
        // Listening before the first check: a change while that check is under way (a poll's lease waits for its
        // group commit) asks again right after it, where listening after it would miss the change until the recheck.
        for (const name of names) emitter.on(name, look);
        for (const poll of polls) {
          let nodes = work.get(poll.work);
          if (nodes === undefined) work.set(poll.work, (nodes = new Map()));
          let waiters = nodes.get(poll.node);
          if (waiters === undefined) nodes.set(poll.node, (waiters = []));
          waiters.unshift(waiter);
        }
        signal.addEventListener('abort', stop, { once: true });
        look({ reason: 'first' });
      });
    },
  };
}
