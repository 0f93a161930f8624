// Counts runs and their money for the metrics once their transaction has committed: wrapped around the starter and
// the finisher (runs.ts), so a run refused or rolled back is never counted, and one finished twice (a result and the
// sweep at once) is counted by the one call that finished it.
import type { ServiceContext } from '../context.js';
import type { FinishRun } from '../runs/finish-run.js';
import type { StartRun } from '../runs/start-run.js';

export function countStartedRuns(ctx: Pick<ServiceContext, 'metrics'>, start: StartRun): StartRun {
  return async (call) => {
    const started = await start(call);
    if (started.kind === 'started') ctx.metrics.runAccepted(started.run.charged_cents);
    return started;
  };
}

export function countFinishedRuns(ctx: Pick<ServiceContext, 'metrics'>, finish: FinishRun): FinishRun {
  return async (runId, outcome, expected) => {
    const finished = await finish(runId, outcome, expected);
    if (finished.kind === 'finished') {
      const reason = outcome.status === 'failed' ? outcome.output.error : undefined;
      ctx.metrics.runFinished(outcome.status, reason, finished.refunded_cents);
    }
    return finished;
  };
}
