// swarm-node register: add an agent to this node, or change its schedule and daily cap (docs/operations.md
// "Day to day on the host").
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { intervalCost } from '../../contract/schedule-terms.js';
import { formatDuration } from '../../node/agents/duration.js';
import { SvcError } from '../../contract/errors.js';
import { contextFor } from '../context.js';
import { withRecentSignIn } from '../step-up.js';
import { collectInputPair } from '../input-options.js';
import { cleared, parseDailyCap, parseEvery, type Cleared } from '../schedule-options.js';

interface RegisterOptions {
  every?: number | Cleared;
  dailyCap?: number | Cleared;
  input?: string[];
  inputFile?: string;
  clearInput?: boolean;
}

export function registerCommand(): Command {
  return new Command('register')
    .description('register an agent on this node, which then serves it (again: change its schedule or cap)')
    .argument('<agent_id>', 'an agent from the catalog (swarm-node agents)')
    .option('--every <duration>', 'run it on a schedule kept by the service: 1m..7d, e.g. 5m, 1h (none: manual runs only)', parseEvery)
    .option('--daily-cap <dollars>', 'spend at most this much on it per UTC day (none: no cap)', parseDailyCap)
    .option(
      '--input <key=value>',
      'a field of the input its runs start from (repeat it): text, or a number or true/false where the agent takes one',
      collectInputPair,
    )
    .option('--input-file <file>', 'the whole input its runs start from, a JSON object ("-" for stdin)')
    .option('--clear-input', 'forget the stored input: runs start from nothing but their own')
    .addHelpText(
      'after',
      `
Needs an enrolled node (swarm-node install) and a JWT of its user that the service accepts (swarm-node login).
The service is told that this node serves the agent: runs started anywhere with the JWT (curl, another machine)
are sent here and run on this host. Options left out keep their current value.

--every makes a schedule at the service pinned to this node (swarm-node schedule show <id> lists its next runs):
UTC, one run of the agent at a time, missed occurrences coalesced into one run. The service fires it whether or not
the daemon runs; this node's daemon runs what it queues. Making or changing it needs a recent sign-in (renewed in a
terminal); --every none removes it and needs none. For a cron, a time zone or a label set: swarm-node schedule add.

--input and --input-file store the input the agent's runs here start from (the daemon's scheduled runs, and
swarm-node run, whose own --input fields go over it); they replace the stored one whole. It is checked against
the agent's input_schema first. Runs started elsewhere (curl, another machine) bring their own input.

Example:
  $ swarm-node register agent_ops_monitor_004 --every 1h --daily-cap 1.00
  $ swarm-node register agent_research_rag_015 --input corpus=/srv/handbook
  $ swarm-node run agent_research_rag_015 --input question="How do I rotate the keys?"
  $ swarm-node register agent_ops_monitor_004 --every none`,
    )
    .action(async (agentId: string, options: RegisterOptions, command: Command) => {
      const givesInput = options.input !== undefined || options.inputFile !== undefined;
      if (givesInput && options.clearInput === true) throw new SvcError('usage', 'give --input/--input-file or --clear-input, not both');
      const ctx = contextFor(command);
      const [{ runInput }, { localInputSchema }] = await Promise.all([import('../run-input.js'), import('../../node/runner/bundles.js')]);
      const defaultInput = givesInput
        ? (runInput(options, localInputSchema(ctx.paths.home, agentId)) ?? {})
        : options.clearInput === true
          ? null
          : undefined;
      ctx.requireJwt();
      const node = await ctx.requireNode();
      const { registerAgent } = await import('../../node/agents/registrations.js');
      const deps = {
        db: await ctx.store(),
        client: await ctx.client(),
        clock: ctx.clock,
        credentialsFile: ctx.paths.credentialsFile,
        node,
        localInputSchema: (id: string) => localInputSchema(ctx.paths.home, id),
      };
      const change = {
        agent_id: agentId,
        every_seconds: cleared(options.every),
        daily_cap_cents: cleared(options.dailyCap),
        default_input: defaultInput,
      };
      // Raising or removing the agent's daily cap at the service needs a recent sign-in (step-up.ts): renewed, then
      // the whole registration again, since nothing of it was written before the cap was.
      const outcome = await withRecentSignIn(ctx, () => registerAgent({ ...deps, jwt: ctx.requireJwt() }, change));
      const { registration, agent } = outcome;
      const every = registration.every_seconds === null ? null : formatDuration(registration.every_seconds);
      const result = {
        created: outcome.created,
        agent_id: agent.agent_id,
        name: agent.name,
        price_cents: agent.price_cents,
        every,
        every_seconds: registration.every_seconds,
        daily_cap_cents: registration.daily_cap_cents,
        default_input: outcome.default_input,
        user_id: outcome.user_id,
        node_id: outcome.node_id,
        schedule_id: outcome.schedule?.schedule_id ?? null,
        next_run_at: outcome.schedule?.next_fire_at ?? null,
        // As the service counts an interval's (schedule-terms.ts), held to the agent's daily cap, which every run of
        // it is held to.
        cost:
          registration.every_seconds === null || outcome.schedule === null
            ? null
            : intervalCost(registration.every_seconds, agent.price_cents, registration.daily_cap_cents),
      };
      ctx.output.result(result, (r) => {
        const schedule = r.every === null ? 'manual runs only' : `every ${r.every}`;
        const cap = r.daily_cap_cents === null ? 'no daily cap' : `daily cap ${formatDollars(r.daily_cap_cents)}`;
        const input = r.default_input === null ? '' : `, runs start from the input {${Object.keys(r.default_input).join(', ')}}`;
        const cost =
          r.cost === null
            ? ''
            : `\nCosts up to ${formatDollars(r.cost.per_day_cents)} a day (${runs(r.cost.runs_per_day)}) and ${formatDollars(r.cost.per_month_cents)} a month (${runs(r.cost.runs_per_month)})${r.daily_cap_cents === null ? '' : ', held to the daily cap'}.`;
        return `${r.created ? 'Registered' : 'Updated'} ${r.agent_id} (${r.name}, ${formatDollars(r.price_cents)} per run): ${schedule}, ${cap}${input}.${cost}`;
      });
      ctx.output.next(
        result.schedule_id === null
          ? `Next: swarm-node run ${agent.agent_id}`
          : `The service starts it every ${every}${result.next_run_at === null ? '' : `, next at ${result.next_run_at}`}, and this node's daemon runs it (whether it is running: swarm-node status). Its runs: swarm-node schedule show ${result.schedule_id}; run it now: swarm-node run ${agent.agent_id}`,
      );
    });
}

const runs = (count: number): string => `${count} run${count === 1 ? '' : 's'}`;
