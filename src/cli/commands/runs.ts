// swarm-node runs: the signed-in user's runs as the service has them (docs/api.md "Run history"), newest first,
// filtered, a page at a time; --local shows this host's run journal with its totals instead. `runs show` renders
// one run for a person.
import { Command, Option } from 'commander';
import type { ChalkInstance } from 'chalk';
import { SvcError } from '../../contract/errors.js';
import { MAX_RUNS_PAGE } from '../../contract/job-limits.js';
import { formatDollars } from '../../contract/money.js';
import { RUN_STATUSES } from '../../contract/run-status.js';
import { inFlagTerms, type FlagTerms } from '../../lib/flag-terms.js';
import { UUID_PATTERN } from '../../contract/uuid.js';
import { countParser } from '../count-option.js';
import { contextFor } from '../context.js';
import { shortTime, table } from '../table.js';
import { runsShowCommand } from './runs-show.js';

const MAX_LOCAL_LIMIT = 10_000;

/**
 * The query fields this command fills from its flags: a refusal of one (`since must be an ISO 8601 time`) names the
 * flag (the CLI's entry words the remedy). Only a refused request: other errors' words stay.
 */
const RUNS_TERMS: FlagTerms = {
  fields: { agent_id: '--agent', status: '--status', node_id: '--node-id', since: '--since', until: '--until', cursor: '--cursor' },
};
const NODE_ID = new RegExp(UUID_PATTERN);

function checkNodeId(value: string): void {
  if (!NODE_ID.test(value))
    throw new SvcError('usage', `--node-id ${JSON.stringify(value)} is not a node id`, {
      remedy: 'Take the id from the NODE column of swarm-node nodes.',
    });
}

interface RunsOptions {
  agent?: string;
  status?: string;
  nodeId?: string;
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
  local?: boolean;
}

export function runsCommand(): Command {
  return (
    new Command('runs')
      .description("list your runs at the service, newest first: status, charge, node (--local: this host's journal, with totals)")
      .option('--agent <agent_id>', 'only this agent')
      .addOption(new Option('--status <status>', 'only runs in this state').choices([...RUN_STATUSES]))
      // Not --node: that is the global option naming a node of this host (install --name), which takes the value
      // wherever it stands on the line.
      .option('--node-id <node_id>', 'only runs of this node (its id: swarm-node nodes)')
      .option('--since <time>', 'only runs started at or after this time (ISO 8601: 2026-11-26 or 2026-11-26T12:00:00Z)')
      .option('--until <time>', 'only runs started before this time')
      .option('--limit <n>', `show at most n runs (default 20; at most ${MAX_RUNS_PAGE} from the service)`, countParser(1, MAX_LOCAL_LIMIT))
      .option('--cursor <cursor>', 'the page after the one that printed this cursor')
      .option('--local', "this host's run journal instead (every run started here, pending ones too), with totals")
      .addCommand(runsShowCommand())
      .addHelpText(
        'after',
        `
The service's history holds every run of yours, wherever it was started (the CLI, the daemon, curl) and whichever
node ran it; a failed or cancelled run shows why. TRIGGER says what started it: manual (swarm-node run), schedule
(a node's daemon), rerun (the console's "Run again") or api (any other call to execute). swarm-node runs show RUN_ID renders what a run produced.
Needs a signed-in user (exit 4 otherwise: swarm-node login); --local needs none. Exits 5 when --agent names no
agent of the catalog (swarm-node agents), which lists your own uploaded agents too.

Example:
  $ swarm-node runs
  $ swarm-node runs --agent agent_dev_review_012 --status failed --since 2026-11-01
  $ swarm-node runs --node-id 0193c1d2-7f4e-7a01-9c3b-5d2e8f1a4b6c
  $ swarm-node runs --json | jq -r '.runs[] | select(.status == "cancelled") | .run_id'
  $ swarm-node runs --local --limit 5`,
      )
      .action(async (options: RunsOptions, command: Command) => {
        const ctx = contextFor(command);
        if (options.local === true) return localRuns(command, options);
        const limit = options.limit ?? 20;
        if (limit > MAX_RUNS_PAGE)
          throw new SvcError('usage', `--limit: the service shows at most ${MAX_RUNS_PAGE} runs a page (--cursor gives the next)`);
        if (options.nodeId !== undefined) checkNodeId(options.nodeId);
        const jwt = ctx.requireJwt();
        // A catalog id is known here; an id of the user's own agent is one the service's catalog lists for them.
        if (options.agent !== undefined)
          await (await import('../../node/service/catalog.js')).agentToRun(await ctx.client(), options.agent, jwt.token);
        const { RunsApi } = await import('../../node/service/runs-api.js');
        const page = await new RunsApi(await ctx.client())
          .list(jwt.token, {
            agent_id: options.agent,
            status: options.status,
            node_id: options.nodeId,
            since: options.since,
            until: options.until,
            limit,
            cursor: options.cursor,
          })
          .catch((error: unknown) => {
            throw error instanceof SvcError && error.code === 'invalid_request' ? inFlagTerms(error, RUNS_TERMS) : error;
          });
        ctx.output.result(page, ({ runs, next_cursor: next }, style) => {
          if (runs.length === 0) return '';
          const rows = table(
            ['STARTED', 'AGENT', 'STATUS', 'CHARGED', 'NODE', 'TRIGGER', 'RUN ID'].map((h) => style.bold(h)),
            runs.map((run) => [
              shortTime(run.started_at),
              run.agent_id,
              `${statusColour(run.status, style)}${run.error === null ? '' : ` (${run.error.error})`}${run.attempt > 1 ? ` attempt ${run.attempt}` : ''}`,
              formatDollars(run.charged_cents),
              run.node_id?.slice(0, 8) ?? '-',
              // What started it (docs/api.md "Triggers"); a run from before the service recorded it has none.
              run.trigger ?? '—',
              run.run_id,
            ]),
            ['left', 'left', 'left', 'right'],
          );
          const charged = runs.reduce((sum, run) => sum + run.charged_cents, 0);
          const more =
            next === null ? '' : `\nOlder runs: swarm-node runs --cursor ${next}${options.limit === undefined ? '' : ` --limit ${limit}`}`;
          return `${rows}\n\n${runs.length} run(s) shown, ${formatDollars(charged)} charged for them. See one: swarm-node runs show ${runs[0]!.run_id}.${more}`;
        });
        if (page.runs.length === 0 && options.cursor !== undefined) ctx.output.info('No older runs.');
        else if (page.runs.length === 0) {
          ctx.output.next(
            options.agent === undefined
              ? 'No runs match. Run an agent of the catalog (swarm-node agents), for example: swarm-node run agent_ops_monitor_004.'
              : `No runs of ${options.agent} match. Run it: swarm-node run ${options.agent}.`,
          );
        }
      })
  );
}

function statusColour(status: string, style: ChalkInstance): string {
  if (status === 'succeeded') return style.green(status);
  if (status === 'queued' || status === 'running' || status === 'pending') return style.yellow(status);
  return style.red(status);
}

/** --local: the journal of runs started from this host, with totals (what it was before the service kept a history). */
async function localRuns(command: Command, options: RunsOptions): Promise<void> {
  const ctx = contextFor(command);
  const { runsOf } = await import('../../node/runs/run-history.js');
  const history = runsOf(await ctx.store(), {
    ...(options.agent === undefined ? {} : { agentId: options.agent }),
    limit: options.limit ?? 20,
  });
  ctx.output.result(history, ({ runs, totals }, style) => {
    if (runs.length === 0) return '';
    const rows = table(
      ['STARTED', 'AGENT', 'STATUS', 'CHARGED', 'RUN ID'].map((h) => style.bold(h)),
      runs.map((r) => [
        shortTime(r.started_at),
        r.agent_id,
        `${statusColour(r.status, style)}${r.error_code === null || r.status === 'insufficient_balance' ? '' : ` (${r.error_code})`}`,
        formatDollars(r.charged_cents),
        r.run_id ?? '-',
      ]),
      ['left', 'left', 'left', 'right'],
    );
    const counts = Object.entries(totals.by_status)
      .filter(([, count]) => count > 0)
      .map(([status, count]) => `${count} ${status}`)
      .join(', ');
    return `${rows}\n\n${runs.length} of ${totals.runs} run(s) started here shown; in total ${formatDollars(totals.charged_cents)} charged (${counts}). Runs started elsewhere: swarm-node runs.`;
  });
  if (history.runs.length === 0) {
    ctx.output.next(
      options.agent === undefined
        ? 'No runs started here yet. Run an agent of the catalog (swarm-node agents), for example: swarm-node run agent_ops_monitor_004.'
        : `No runs of ${options.agent} started here yet. Run it: swarm-node run ${options.agent}.`,
    );
  }
}
