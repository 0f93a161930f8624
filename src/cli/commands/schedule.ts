// swarm-node schedule add | list | show | pause | resume | rm | backfill: schedules kept by the service (docs/api.md "Schedules"),
// which fire whether or not this host is up. Adding and resuming need a sign-in within 15 minutes; pausing and
// removing never do. What a schedule costs a day and a month is the service's count of its own fire times.
import { Command, InvalidArgumentError, Option } from 'commander';
import { formatDollars, parseDollarsToCents } from '../../contract/money.js';
import { SvcError } from '../../contract/errors.js';
import { BACKFILL_CONFIRM_OVER, OVERLAP_POLICIES } from '../../contract/schedule-terms.js';
import type { Schedule, ScheduleDetail, ScheduleRequest } from '../../contract/schedules.js';
import { withRecentSignIn } from '../step-up.js';
import { contextFor } from '../context.js';
import { confirmRemoval } from '../confirm-removal.js';
import { countParser } from '../count-option.js';
import { collectInputPair, collectValues } from '../input-options.js';
import { shortTime, table } from '../table.js';

const api = () => import('../../node/service/schedules-api.js');

function cents(value: string): number {
  const parsed = parseDollarsToCents(value);
  if (parsed === undefined) throw new InvalidArgumentError('give dollars such as 1.50 or 2');
  return parsed;
}

function every(value: string): number {
  const match = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  const seconds = match === null ? NaN : Number(match[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as 's' | 'm' | 'h' | 'd'];
  if (!Number.isInteger(seconds) || seconds < 60) throw new InvalidArgumentError('give an interval of at least 1m, such as 5m, 1h or 1d');
  return seconds;
}

const when = (s: Schedule): string =>
  s.cron !== null
    ? `cron ${s.cron}`
    : s.interval_seconds! < 60
      ? `every ${s.interval_seconds} s (kept from a node's daemon: new schedules are at least 1 min apart)`
      : `every ${s.interval_seconds} s`;
const state = (s: Schedule): string => (s.paused ? `paused (${s.pause_reason ?? 'user'})` : 'active');

const runs = (count: number): string => `${count} ${count === 1 ? 'run' : 'runs'}`;

/** The human rendering of one schedule: when, where, what it costs, its next fire times and its skips. */
function describe(s: ScheduleDetail): string {
  const pin = s.node_id !== null ? `node ${s.node_id}` : s.labels.length > 0 ? `labels ${s.labels.join(',')}` : 'any of your nodes';
  const cap = s.daily_cap_cents === null ? '' : `, capped at ${formatDollars(s.daily_cap_cents)} a day`;
  return [
    `Schedule ${s.schedule_id}: ${s.agent_id}, ${when(s)} in ${s.time_zone} (tz ${s.tz_version}); ${state(s)}.`,
    `Runs on ${pin}; overlap ${s.overlap}; catch-up ${s.catch_up_seconds} s.`,
    `Costs up to ${formatDollars(s.cost.per_day_cents)} a day (${runs(s.cost.runs_per_day)} of ${formatDollars(s.price_cents)})` +
      ` and ${formatDollars(s.cost.per_month_cents)} a month (${runs(s.cost.runs_per_month)})${cap}.`,
    s.next_fire_times.length === 0 ? 'It fires no more.' : `Next: ${s.next_fire_times.map(shortTime).join(', ')}`,
    ...s.skips.slice(0, 5).map((k) => `Skipped ${k.count}× (${k.reason}) from ${shortTime(k.first_at)} to ${shortTime(k.last_at)}`),
  ].join('\n');
}

export function scheduleCommand(): Command {
  const schedule = new Command('schedule')
    .description('schedules the service keeps and fires, whether or not this host is up: add, list, show, pause, resume, rm, backfill')
    .addHelpText(
      'after',
      `
A schedule runs an agent on a cron expression (5 fields, or @hourly, @daily, @weekly, @monthly, @yearly) or an
interval of at least 1m, in an IANA time zone, on your nodes (or the one --node names). Each occurrence is run once
and charged once; refused for the balance or a budget, it pauses and resumes by itself once a run is covered.
Exits 0 on success; 2 on a usage error or a schedule the service refuses (invalid_schedule, input_invalid); 4 when
a sign-in within 15 minutes is needed off a terminal (swarm-node login); 5 for schedule_not_found or
agent_not_found; 6 when the service cannot be reached.

Example:
  $ swarm-node schedule add agent_ops_monitor_004 --cron "30 2 * * *" --tz Europe/Berlin --daily-cap 1.00
  $ swarm-node schedule add agent_ops_monitor_004 --every 1h
  $ swarm-node schedule list
  $ swarm-node schedule pause 0193c1f2-…`,
    );

  schedule.addCommand(
    new Command('add')
      .description('make a schedule; shows what it costs a day and a month, and its next fire times')
      .argument('<agent_id>', 'the agent to run')
      .option('--cron <expression>', 'when: 5 fields or @hourly-style, in --tz')
      .option('--every <interval>', 'or how often: 1m or more (5m, 1h, 1d)', every)
      .option('--tz <zone>', 'the IANA time zone of --cron and of the daily cap (default UTC)')
      .addOption(new Option('--overlap <policy>', 'while a run of it is still queued or running (default skip)').choices(OVERLAP_POLICIES))
      .option('--catch-up <seconds>', 'missed occurrences within this long make one run (default 0)', countParser(0, 7 * 86_400))
      // Not --node: that is the program's own option, which names a node of this host by its install name.
      .option('--node-id <node_id>', 'run only on this node of yours (swarm-node nodes lists them)')
      .option('--here', "run only on this host's node")
      .option('--label <label>', 'run only on a node with this label (repeatable)', collectValues)
      .option('--daily-cap <dollars>', 'spend at most this a day (in --tz)', cents)
      .option('--pause-after-failures <n>', 'pause after this many failed runs in a row', countParser(1, 1000))
      .option('--input <key=value>', 'an input field of every run (repeatable)', collectInputPair)
      .option('--input-file <file>', 'the input of every run, a JSON object')
      .addHelpText('after', '\nExample:\n  $ swarm-node schedule add agent_ops_monitor_004 --every 1h --daily-cap 1.00')
      .action(async (agentId: string, options: Record<string, unknown>, command: Command) => {
        const ctx = contextFor(command);
        if ((options.cron === undefined) === (options.every === undefined))
          throw new InvalidArgumentError('give --cron or --every, one of them');
        if (options.here === true && options.nodeId !== undefined) throw new InvalidArgumentError('give --here or --node-id, not both');
        const nodeId = options.here === true ? (await ctx.requireNode()).node_id : (options.nodeId as string | undefined);
        const { runInput } = await import('../run-input.js');
        const input = runInput(options as { input?: string[]; inputFile?: string });
        const labels =
          options.label === undefined
            ? undefined
            : (await import('../../contract/labels.js')).parseLabelArguments(options.label as string[]);
        const given: ScheduleRequest = {
          agent_id: agentId,
          ...(options.cron === undefined ? {} : { cron: options.cron as string }),
          ...(options.every === undefined ? {} : { interval_seconds: options.every as number }),
          ...(options.tz === undefined ? {} : { time_zone: options.tz as string }),
          ...(options.overlap === undefined ? {} : { overlap: options.overlap as ScheduleRequest['overlap'] }),
          ...(options.catchUp === undefined ? {} : { catch_up_seconds: options.catchUp as number }),
          ...(nodeId === undefined ? {} : { node_id: nodeId }),
          ...(labels === undefined ? {} : { labels }),
          ...(options.dailyCap === undefined ? {} : { daily_cap_cents: options.dailyCap as number }),
          ...(options.pauseAfterFailures === undefined ? {} : { pause_after_failures: options.pauseAfterFailures as number }),
          ...(input === undefined ? {} : { input }),
        };
        const { addSchedule } = await api();
        const client = await ctx.client();
        const made = await withRecentSignIn(ctx, (token) => addSchedule(client, token, given));
        ctx.output.result(made, describe);
      }),
  );

  schedule.addCommand(
    new Command('list')
      .description('your schedules')
      .addHelpText('after', '\nExample:\n  $ swarm-node schedule list')
      .action(async (_options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { listSchedules } = await api();
        const listed = await listSchedules(await ctx.client(), ctx.requireJwt().token);
        ctx.output.result(listed, (l) =>
          l.schedules.length === 0
            ? 'No schedules: swarm-node schedule add AGENT --every 1h'
            : table(
                ['ID', 'AGENT', 'WHEN', 'ZONE', 'STATE', 'NEXT'],
                l.schedules.map((s) => [
                  s.schedule_id,
                  s.agent_id,
                  when(s),
                  s.time_zone,
                  state(s),
                  s.next_fire_at === null ? '-' : shortTime(s.next_fire_at),
                ]),
              ),
        );
      }),
  );

  schedule.addCommand(
    new Command('show')
      .description('a schedule: its next five fire times, what it costs a day and a month, its coalesced skips')
      .argument('<id>', 'the schedule (swarm-node schedule list)')
      .addHelpText('after', '\nExample:\n  $ swarm-node schedule show 0193c1f2-…')
      .action(async (id: string, _options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { showSchedule } = await api();
        ctx.output.result(await showSchedule(await ctx.client(), ctx.requireJwt().token, id), describe);
      }),
  );

  schedule.addCommand(
    new Command('pause')
      .description('stop firing it until resumed (never needs a fresh sign-in)')
      .argument('<id>', 'the schedule')
      .addHelpText('after', '\nExample:\n  $ swarm-node schedule pause 0193c1f2-…')
      .action(async (id: string, _options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { pauseSchedule } = await api();
        const paused = await pauseSchedule(await ctx.client(), ctx.requireJwt().token, id);
        ctx.output.result(paused, (s) => `Paused ${s.schedule_id}.`);
      }),
  );

  schedule.addCommand(
    new Command('resume')
      .description('fire it again from its next fire time (needs a sign-in within 15 minutes)')
      .argument('<id>', 'the schedule')
      .addHelpText('after', '\nExample:\n  $ swarm-node schedule resume 0193c1f2-…')
      .action(async (id: string, _options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { resumeSchedule } = await api();
        const client = await ctx.client();
        const resumed = await withRecentSignIn(ctx, (token) => resumeSchedule(client, token, id));
        ctx.output.result(
          resumed,
          (s) => `Resumed ${s.schedule_id}; next at ${s.next_fire_at === null ? '-' : shortTime(s.next_fire_at)}.`,
        );
      }),
  );

  schedule.addCommand(
    new Command('rm')
      .description('remove a schedule (its runs stay)')
      .argument('<id>', 'the schedule')
      .option('-y, --yes', 'remove without asking (needed when stdin is not a terminal)')
      .addHelpText('after', '\nExample:\n  $ swarm-node schedule rm 0193c1f2-… --yes')
      .action(async (id: string, options: { yes?: boolean }, command: Command) => {
        const ctx = contextFor(command);
        await confirmRemoval(ctx, {
          yes: options.yes,
          what: `schedule ${id}`,
          question: `Remove the schedule ${id}?`,
          again: `swarm-node schedule rm ${id}`,
        });
        const { removeSchedule } = await api();
        await removeSchedule(await ctx.client(), ctx.requireJwt().token, id);
        ctx.output.result({ schedule_id: id, removed: true }, () => `Removed ${id}.`);
      }),
  );

  schedule.addCommand(
    new Command('backfill')
      .description('run the occurrences of a past range that have no run; says how many and what they cost first')
      .argument('<id>', 'the schedule')
      .requiredOption('--from <time>', 'ISO time: the first occurrence it may run')
      .requiredOption('--to <time>', 'ISO time, not after now: the last')
      .option('-y, --yes', `run without asking when over ${BACKFILL_CONFIRM_OVER} runs (needed off a terminal)`)
      .option('--dry-run', 'say what it would run and cost, run nothing')
      .addHelpText('after', '\nExample:\n  $ swarm-node schedule backfill 0193c1f2-… --from 2027-03-01T00:00:00Z --to 2027-03-02T00:00:00Z')
      .action(async (id: string, options: { from: string; to: string; yes?: boolean; dryRun?: boolean }, command: Command) => {
        const ctx = contextFor(command);
        const { backfillSchedule } = await api();
        const client = await ctx.client();
        const range = { from: options.from, to: options.to };
        const plan = await withRecentSignIn(ctx, (token) => backfillSchedule(client, token, id, { ...range, dry_run: true }));
        const said = (b: typeof plan) =>
          `${b.dry_run ? 'Would run' : 'Ran'} ${b.runs} occurrence(s) for up to ${formatDollars(b.cost_cents)}; ${b.already_run} had a run already.`;
        if (options.dryRun === true || plan.runs === 0) return ctx.output.result(plan, said);
        if (plan.runs > BACKFILL_CONFIRM_OVER && options.yes !== true) {
          const again = `swarm-node schedule backfill ${id} --from ${options.from} --to ${options.to}`;
          if (!ctx.canPrompt())
            throw new SvcError('usage', `this backfill runs ${plan.runs} occurrences for up to ${formatDollars(plan.cost_cents)}`, {
              remedy: `Add --yes: ${again} --yes`,
            });
          const { confirm } = await import('@inquirer/prompts');
          if (
            !(await confirm(
              { message: `Run ${plan.runs} occurrences for up to ${formatDollars(plan.cost_cents)}?`, default: false },
              { output: process.stderr },
            ))
          )
            throw new SvcError('failed', 'not confirmed: nothing was run');
        }
        const done = await withRecentSignIn(ctx, (token) => backfillSchedule(client, token, id, { ...range, confirm_runs: plan.runs }));
        ctx.output.result(done, said);
      }),
  );

  return schedule;
}
