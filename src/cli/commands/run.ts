// swarm-node run: one billed run of an agent, journaled before the call so a lost answer is never charged twice.
import { Command, Option } from 'commander';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';
import { collectInputPair, collectValues } from '../input-options.js';
import { renderRunOutput } from '../../lib/run-output.js';
import { escapeName } from '../../lib/terminal-text.js';
import { countParser } from '../count-option.js';
import { MAX_QUEUE_SECONDS, MAX_RUN_SECONDS } from '../../contract/job-limits.js';
import type { RunResponse } from '../../contract/schemas.js';
import type { RunInFlight } from '../../node/runs/run-errors.js';

export function runCommand(): Command {
  return new Command('run')
    .description('run an agent once; it is charged its per-run price from your wallet')
    .argument('<agent_id>', 'an agent from the catalog (swarm-node agents)')
    .option(
      '--input <key=value>',
      "a field of the agent's input (repeat it): text, or a number or true/false where the agent takes one",
      collectInputPair,
    )
    .option('--input-file <file>', 'the agent\'s whole input, a JSON object ("-" for stdin)')
    .option('--label <labels>', 'run it only on a node that carries this label (repeat it, or separate labels with commas)', collectValues)
    .option(
      '--queue-seconds <s>',
      `how long the run may wait for a node (0: only an online one now; default the service's, 600)`,
      countParser(0, MAX_QUEUE_SECONDS),
    )
    .option('--timeout-seconds <s>', "a time limit below the agent's own (agent.json timeout_seconds)", countParser(1, MAX_RUN_SECONDS))
    .addOption(
      new Option('--fail-on <status>', "exit 10 when the agent's answer has a status at or above this one (the ops monitor's)").choices(
        STATUSES.slice(1),
      ),
    )
    .addHelpText(
      'after',
      `
On an enrolled node the agent runs here, on this host, whether or not the daemon is running; elsewhere, signed in,
it runs on one of your online nodes that serves it. Exits 3 on insufficient balance (the error carries
wallet_login_url), 6 when the service cannot be reached: a run that never reached it (connection refused) is
journaled not_sent and never runs; one whose answer was lost stays pending, and the next run settles it by asking
the service for its key (never charged twice, never run again). The input is the one stored with swarm-node register --input, if any,
with the fields of --input-file and then --input over it. With --label, only an online node that carries every
label given takes the run (swarm-node nodes shows each node's labels); none: exit 1, no_node_available naming the
labels, nothing charged. On an enrolled node the run still executes here, so this node must carry them.
Elsewhere a run for a node of yours that is offline waits for it (--queue-seconds, default 600; 0: refused at
once, exit 1, when none is online), and is refunded not_picked_up if none comes. With --fail-on, a run whose answer
has a status (ok, warning, critical) at or above the one given exits 10 after printing it: it ran and was charged,
and cron or CI alerts on the exit. Ctrl+C ends the wait, not the run (exit 130): it prints the run's id, what
is charged for it, and the commands that cancel it (swarm-node cancel) and follow it again (swarm-node logs --follow).

Example:
  $ swarm-node run agent_ops_monitor_004
  $ swarm-node run agent_dev_review_012 --input repo=/srv/app --input rev=HEAD~3..HEAD
  $ swarm-node run agent_ops_monitor_004 --json | jq .output.findings
  $ swarm-node run agent_research_rag_015 --label gpu --label linux-x64
  $ swarm-node run agent_ops_monitor_004 --fail-on critical || notify-ops   # from cron`,
    )
    .action(
      async (
        agentId: string,
        options: {
          input?: string[];
          inputFile?: string;
          label?: string[];
          queueSeconds?: number;
          timeoutSeconds?: number;
          failOn?: string;
        },
        command: Command,
      ) => {
        const ctx = contextFor(command);
        const [{ runInput }, { localInputSchema }] = await Promise.all([import('../run-input.js'), import('../../node/runner/bundles.js')]);
        const input = runInput(options, localInputSchema(ctx.paths.home, agentId));
        const labels = options.label === undefined ? [] : (await import('../../contract/labels.js')).parseLabelArguments(options.label);
        const caller = await ctx.runCaller();
        // A node that runs agents unsandboxed without having asked to says so at each run, not only in status.
        if (caller.kind === 'node') {
          const { isolationFallback } = await import('../../node/runner/isolation.js');
          const fallback = isolationFallback(ctx.config().agent_isolation, caller.executor.runner.isolation);
          if (fallback !== undefined) ctx.output.warn(fallback);
        }
        // Run here: what became of the files it left in SWARM_ARTIFACTS_DIR (docs/api.md "Run artifacts").
        if (caller.kind === 'node') {
          caller.executor.onArtifacts((run, report) => {
            if (report.uploaded.length > 0)
              ctx.output.info(`${report.uploaded.length} artifact(s) uploaded: swarm-node artifacts ${run.run_id}`);
            for (const entry of [...report.skipped, ...report.not_kept])
              ctx.output.warn(`artifact ${escapeName(entry.name)} not kept: ${entry.reason}`);
          });
        }
        const [{ runAgent, settlePendingRuns }, { succeededOrThrow, interruptedRun }] = await Promise.all([
          import('../../node/runs/run-agent.js'),
          import('../../node/runs/run-errors.js'),
        ]);
        // The run as its last answer had it, until it ends: what Ctrl+C leaves billed at the service.
        let inFlight: RunInFlight | undefined;
        ctx.onInterrupt(() => (inFlight === undefined ? undefined : interruptedRun(inFlight, caller.kind === 'node')));
        const onRunState = (run: RunResponse): void => {
          const first = inFlight === undefined;
          const { run_id, agent_id, status, node_id, charged_cents, balance_cents } = run;
          inFlight = { run_id, agent_id, status, node_id, charged_cents, balance_cents };
          if (first)
            ctx.output.info(
              `Run ${run_id} started (${status}${node_id === null ? ', waiting for a node' : `, on node ${node_id}`}): ${formatDollars(charged_cents)} charged, refunded if it fails.`,
            );
        };
        const deps = {
          onRunState,
          db: await ctx.store(),
          client: await ctx.client(),
          clock: ctx.clock,
          caller,
          source: 'cli' as const,
          signal: ctx.interruption(),
          followMs: 10 * 60_000,
        };
        const earlier = await settlePendingRuns(deps);
        if (earlier.settled > 0)
          ctx.output.info(
            `Settled ${earlier.settled} earlier run(s) whose answer had been lost, by asking the service for their keys (never charged twice, never run again).`,
          );
        if (earlier.expired > 0)
          ctx.output.warn(
            `${earlier.expired} earlier run(s) stayed unanswered past the 24 h key lifetime; marked failed (outcome_unknown).`,
          );
        const where = caller.kind === 'node' ? 'on this node' : 'on one of your nodes';
        const result = await ctx.output.spin(`Running ${agentId} ${where}`, async () => {
          const terms = {
            ...(options.queueSeconds === undefined ? {} : { queue_seconds: options.queueSeconds }),
            ...(options.timeoutSeconds === undefined ? {} : { timeout_seconds: options.timeoutSeconds }),
          };
          // A node's own run: its labels are changed by the command that changes this home (sudo on an install).
          const here =
            caller.kind === 'node' ? { program: ctx.enrollCommand().startsWith('sudo ') ? 'sudo swarm-node' : 'swarm-node' } : undefined;
          const outcome = await runAgent(deps, agentId, input, labels, terms);
          // The wait is over: what it prints now says how the run ended, and Ctrl+C leaves nothing behind.
          inFlight = undefined;
          return succeededOrThrow(outcome, here);
        });
        ctx.output.result(result, (r, style) => {
          const head = `${style.green('✓')} ${r.agent_id} ran on node ${r.node_id ?? '-'} (run ${r.run_id}): charged ${formatDollars(r.charged_cents)}, balance ${formatDollars(r.balance_cents)}`;
          return `${head}\n${renderRunOutput(r.output, style, r.run_id)}`;
        });
        failOnStatus(result.output, options.failOn);
      },
    );
}

/** The severities an agent's answer may carry as `status`, least first (docs/sections/starter-agents.md). */
const STATUSES = ['ok', 'warning', 'critical'];

/** `--fail-on`: exit 10 (status_alert) when the answer's status ranks at or above `threshold`. */
function failOnStatus(output: unknown, threshold: string | undefined): void {
  if (threshold === undefined) return;
  const status = (output as { status?: unknown } | null)?.status;
  if (typeof status === 'string' && STATUSES.indexOf(status) >= STATUSES.indexOf(threshold)) {
    throw new SvcError('status_alert', `the agent's status is ${status}, at or above --fail-on ${threshold}`);
  }
}
