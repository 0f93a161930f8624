// When a held poll looks at its node's queue (docs/api.md "Storage"): the look costs a claim (a write lock on
// SQLite, a statement on PostgreSQL), and most looks of an idle node found nothing. A poll looks when woken for a
// run queued; at its start and at its rechecks only when something was queued since its node last found the queue
// drained, unless runs may be queued unheard (another instance, a notification lost: then every recheck looks); and
// of a node's several held polls, one recheck a recheck period is the bound, so the others need not.
import type { Clock } from '../../lib/clock.js';
import type { RunEvents, Wake } from './run-events.js';

/** Nodes remembered at most (the oldest go first: their polls look at once, as before). */
const NODES_REMEMBERED = 100_000;

export interface QueueLooks {
  /** Whether the poll looks now; `queued` is the user's queued count to pass to drained when it found the queue so. */
  shouldLook(userId: string, nodeId: string, wake: Wake): { look: boolean; queued: number | undefined };
  /** The node's look took all it could: nothing more was queued for it at `queued`. */
  drained(nodeId: string, queued: number | undefined): void;
}

export function createQueueLooks(events: RunEvents, clock: Clock): QueueLooks {
  /** node → the user's queued count when its claim last took all it could. */
  const drainedAt = new Map<string, number>();
  /** node → when one of its polls last looked. */
  const lookedAt = new Map<string, number>();
  const put = (map: Map<string, number>, nodeId: string, value: number): void => {
    map.delete(nodeId);
    if (map.size >= NODES_REMEMBERED) map.delete(map.keys().next().value!);
    map.set(nodeId, value);
  };
  return {
    shouldLook(userId, nodeId, wake) {
      const queued = events.queuedCount(userId);
      const counted = wake.reason === 'first' || (wake.reason === 'recheck' && events.hearsEverything());
      if (counted && queued !== undefined && drainedAt.get(nodeId) === queued) return { look: false, queued };
      const now = clock.now();
      if (wake.reason === 'recheck' && now - (lookedAt.get(nodeId) ?? Number.NEGATIVE_INFINITY) < events.recheckMs)
        return { look: false, queued };
      put(lookedAt, nodeId, now);
      return { look: true, queued };
    },
    drained(nodeId, queued) {
      if (queued === undefined) drainedAt.delete(nodeId);
      else put(drainedAt, nodeId, queued);
    },
  };
}
