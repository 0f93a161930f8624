// swarm-node runs show RUN_ID: one run as the service has it, for a person: how it ended and what it cost, what it
// produced (the findings with file and line, the drafts, the quiz: src/lib/run-output.ts), its attempts, and the
// commands that show its logs and artifacts.
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';
import { renderRunOutput } from '../../lib/run-output.js';
import { shortTime } from '../table.js';

export function runsShowCommand(): Command {
  return new Command('show')
    .description('show one run: how it ended, its charge, what it produced, its attempts, where its logs and artifacts are')
    .argument('<run_id>', 'a run id (swarm-node runs lists them)')
    .addHelpText(
      'after',
      `
Exits 5 when you have no such run (another user's runs are not yours to see), 4 when not signed in.

Example:
  $ swarm-node runs show 01a218c2-3c74-74bd-abe3-e4b2f0c1d9a7
  $ swarm-node runs show 01a218c2-3c74-74bd-abe3-e4b2f0c1d9a7 --json | jq .output.findings`,
    )
    .action(async (runId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const { RunsApi } = await import('../../node/service/runs-api.js');
      const run = await new RunsApi(await ctx.client()).get(jwt.token, runId);
      ctx.output.result(run, (shown, style) => {
        const ended = shown.finished_at !== null;
        const took = ended ? ` · took ${seconds(Date.parse(shown.finished_at!) - Date.parse(shown.started_at))}` : '';
        const where = shown.node_id === null ? 'waiting for a node' : `on node ${shown.node_id}`;
        const lines = [
          `${style.bold(`Run ${shown.run_id}`)} of ${shown.agent_id}: ${shown.status} ${where}${(shown.attempt ?? 1) > 1 ? ` (attempt ${shown.attempt})` : ''}`,
          `Charged ${formatDollars(shown.charged_cents)} · started ${shortTime(shown.started_at)} (trigger ${shown.trigger ?? '—'})${took}${shown.timeout_seconds === undefined ? '' : ` · time limit ${seconds(shown.timeout_seconds * 1000)}`}`,
        ];
        if (shown.status === 'succeeded') lines.push('', renderRunOutput(shown.output, style, shown.run_id));
        else if (ended) {
          const failure = (shown.output ?? {}) as { error?: string; message?: string };
          lines.push('', `${style.red(failure.error ?? shown.status)}: ${failure.message ?? ''}`.trimEnd());
        } else {
          if (shown.waiting_for_node !== undefined)
            lines.push(
              `Pinned to node ${shown.waiting_for_node.node_id}, drained since ${shortTime(shown.waiting_for_node.drained_at)}: it waits for swarm-node nodes resume ${shown.waiting_for_node.node_id}.`,
            );
          if (shown.queue_expires_at) lines.push(`Waits for a node until ${shortTime(shown.queue_expires_at)}, then is refunded.`);
          if (shown.cancel_requested_at) lines.push(`Cancel asked at ${shortTime(shown.cancel_requested_at)}: its node stops it.`);
          else lines.push(`Cancel it: swarm-node cancel ${shown.run_id}`);
        }
        if (shown.attempts.length > 1 || (shown.attempt ?? 1) > 1) {
          lines.push('', style.bold('Attempts:'));
          for (const attempt of shown.attempts)
            lines.push(
              `  ${attempt.attempt}. ${attempt.outcome ?? 'running'} on node ${attempt.node_id ?? '-'}${attempt.message === undefined ? '' : `: ${attempt.message}`}`,
            );
        }
        lines.push(
          '',
          `Logs: swarm-node logs ${shown.run_id}${ended ? '' : ' --follow'} · Artifacts: swarm-node artifacts ${shown.run_id}`,
        );
        return lines.join('\n');
      });
    });
}

function seconds(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}
