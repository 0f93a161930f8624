// swarm-node run: one billed run of an agent, journaled before the call so a lost answer is never charged twice.
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';
import { collectInputPair, collectValues } from '../input-options.js';

export function runCommand(): Command {
  return new Command('run')
    .description('run an agent once; it is charged its per-run price from your wallet')
    .argument('<agent_id>', 'an agent from the catalog (swarm-node agents)')
    .option('--input <key=value>', 'a field of the agent\'s input (repeat it): text, or a number or true/false where the agent takes one', collectInputPair)
    .option('--input-file <file>', 'the agent\'s whole input, a JSON object ("-" for stdin)')
    .option('--label <labels>', 'run it only on a node that carries this label (repeat it, or separate labels with commas)', collectValues)
    .addHelpText(
      'after',
      `
On an enrolled node the agent runs here, on this host, whether or not the daemon is running; elsewhere, signed in,
it runs on one of your online nodes that serves it. Exits 3 on insufficient balance (the error carries
wallet_login_url), 6 when the service cannot be reached; a run whose answer was lost stays pending and is settled,
never charged twice, by the next run. The input is the one stored with swarm-node register --input, if any,
with the fields of --input-file and then --input over it. With --label, only an online node that carries every
label given takes the run (swarm-node nodes shows each node's labels); none: exit 1, no_node_available naming the
labels, nothing charged. On an enrolled node the run still executes here, so this node must carry them.

Example:
  $ swarm-node run agent_ops_monitor_004
  $ swarm-node run agent_dev_review_012 --input repo=/srv/app --input rev=HEAD~3..HEAD
  $ swarm-node run agent_ops_monitor_004 --json | jq .output.findings
  $ swarm-node run agent_research_rag_015 --label gpu --label linux-x64`,
    )
    .action(async (agentId: string, options: { input?: string[]; inputFile?: string; label?: string[] }, command: Command) => {
      const ctx = contextFor(command);
      const [{ runInput }, { localInputSchema }] = await Promise.all([import('../run-input.js'), import('../../node/runner/bundles.js')]);
      const input = runInput(options, localInputSchema(ctx.paths.home, agentId));
      const labels = options.label === undefined ? [] : (await import('../../contract/labels.js')).parseLabelArguments(options.label);
      const caller = await ctx.runCaller();
      const [{ runAgent, settlePendingRuns }, { succeededOrThrow }] = await Promise.all([import('../../node/runs/run-agent.js'), import('../../node/runs/run-errors.js')]);
      const deps = { db: await ctx.store(), client: await ctx.client(), clock: ctx.clock, caller, source: 'cli' as const, signal: ctx.interruption(), followMs: 10 * 60_000 };
      const earlier = await settlePendingRuns(deps);
      if (earlier.settled > 0) ctx.output.info(`Settled ${earlier.settled} earlier run(s) whose answer had been lost (same key, not charged twice).`);
      if (earlier.expired > 0) ctx.output.warn(`${earlier.expired} earlier run(s) stayed unanswered past the 24 h key lifetime; marked failed (outcome_unknown).`);
      const where = caller.kind === 'node' ? 'on this node' : 'on one of your nodes';
      const result = await ctx.output.spin(`Running ${agentId} ${where}`, async () => succeededOrThrow(await runAgent(deps, agentId, input, labels)));
      ctx.output.result(result, (r, style) => {
        const head = `${style.green('✓')} ${r.agent_id} ran on node ${r.node_id ?? '-'} (run ${r.run_id}): charged ${formatDollars(r.charged_cents)}, balance ${formatDollars(r.balance_cents)}`;
        const summary = typeof (r.output as { summary?: unknown } | null)?.summary === 'string' ? (r.output as { summary: string }).summary : JSON.stringify(r.output, null, 2);
        return `${head}\n${summary}`;
      });
    });
}
