// Offline nodes do not pile up in a fleet (actions/runner#1364; docs/api.md "Removing a node"): a node that has
// neither polled nor run anything of its own for `svc-api --stale-node-after` (default 14 days, GitHub's bound for a
// self-hosted runner) is removed, its agents withdrawn and its credential answered 410 node_removed from then on.
import { isoTime } from '../../lib/clock.js';
import { repeatByServiceClock, type ServiceContext } from '../context.js';
import { createNodeRemoval } from './node-removal.js';
import { mailNodeRemovalPauses } from '../schedules/schedule-mail.js';

export const DEFAULT_STALE_NODE_AFTER_MS = 14 * 86_400_000;
/** How often offline nodes are looked for, by the service's clock: a node goes at most this long after its time. */
export const STALE_SWEEP_EVERY_MS = 60_000;
/** Nodes removed in one transaction; more wait for the next round, which then comes at the next run sweep. */
const BATCH = 200;

interface SweepLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/**
 * Looks for stale nodes at each run sweep (every `sweepMs`) and does the work once a minute by the service's clock,
 * so a test that moves the clock sees it within a sweep. `staleAfterMs` 0: nodes are kept however long they are away.
 */
export function scheduleStaleNodeSweep(ctx: ServiceContext, staleAfterMs: number, log: SweepLog): void {
  if (staleAfterMs <= 0) return;
  const removal = createNodeRemoval(ctx.store, ctx.revocations, mailNodeRemovalPauses(ctx));
  const round = async (now: number): Promise<boolean> => {
    const removed = await removal.staleSince(now - staleAfterMs, now, BATCH);
    for (const node of removed) {
      log.info(
        {
          node_id: node.node_id,
          last_seen_at: node.last_seen_at === null ? null : isoTime(node.last_seen_at),
          agents_withdrawn: node.agents_withdrawn,
        },
        'stale node removed: offline longer than --stale-node-after',
      );
    }
    return removed.length === BATCH;
  };
  repeatByServiceClock(ctx, STALE_SWEEP_EVERY_MS, round, 'stale node sweep', log);
}
