// POST /v1/swarm/runs/{run_id}/cancel (docs/api.md "Cancel"). A queued run ends at once, cancelled and refunded. A
// running one is marked: its node learns it at its next contact (a held poll ends at once; a log batch's answer says
// so too), stops the agent and reports it cancelled; a node that stays silent past the cancel grace (RunTiming) has the run ended
// by the sweep. Either way the run's charge is refunded once, by the finisher that ends it: a cancelled run costs
// nothing, as a failed one. A node's success that arrives before it saw the cancel stands (the user got the result).
import { SvcError } from '../../contract/errors.js';
import type { RunResponse } from '../../contract/schemas.js';
import type { ServiceContext } from '../context.js';
import { failed, type FinishRun } from './finish-run.js';
import type { RunStore } from './run-store.js';
import { runView, shownStatus } from './run-view.js';

export type CancelRun = (userId: string, runId: string) => Promise<{ run: RunResponse; stopping: boolean }>;

export function createRunCanceller(ctx: ServiceContext, runs: RunStore, finish: FinishRun): CancelRun {
  return async (userId, runId) => {
    const asked = await ctx.store.transaction(async () => {
      const row = await runs.getForUpdate(runId);
      if (row === undefined || row.user_id !== userId) throw new SvcError('run_not_found', `no run ${runId} of yours`);
      if (row.status === 'succeeded' || row.status === 'failed') {
        // A repeat of a cancel that took effect answers as the first did; any other end cannot be cancelled.
        if (row.cancelled_at !== null) return { row, ended: true };
        throw new SvcError('run_finished', `run ${runId} already ended ${shownStatus(row)}; there is nothing to cancel`, {
          remedy: `Nothing is left to stop: see how it ended with swarm-node runs show ${runId} (GET /v1/swarm/runs/${runId}).`,
          extensions: { run_id: runId, run_status: shownStatus(row) },
        });
      }
      await runs.requestCancel(runId, ctx.clock.now());
      if (row.status === 'queued') {
        const ended = await finish(runId, failed('cancelled', 'cancelled by its user before a node took it; it was refunded'), {
          kind: 'queued',
          attempt: row.attempt,
        });
        return { row, ended: ended.kind === 'finished' };
      }
      return { row, ended: false };
    });
    if (asked.ended) ctx.runEvents.finished(runId);
    // Its node's held poll wakes with the user's topic, and finds the cancel.
    else ctx.runEvents.cancelAsked(userId);
    const now = (await runs.get(runId))!;
    return { run: runView(now, await ctx.ledger.balance(userId)), stopping: !asked.ended };
  };
}
