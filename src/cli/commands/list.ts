// swarm-node list: the registered agents with schedule, cap, last run and today's spend (UTC day).
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { formatDuration } from '../../node/agents/duration.js';
import { contextFor, type CommandContext } from '../context.js';
import { messageOf } from '../../contract/errors.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { ServiceView } from '../../node/agents/registrations.js';
import { shortTime, table } from '../table.js';

export function listCommand(): Command {
  return new Command('list')
    .description('list the agents registered on this node')
    .addHelpText(
      'after',
      "\n\"Spent today\" counts charges since 00:00 UTC, the day the daily cap counts: the service's figure for the agent when a\nschedule of it is registered (its runs are the service's), else this node's own runs.\n\nExample:\n  $ swarm-node list\n  $ swarm-node list --json | jq -r '.registrations[].agent_id'",
    )
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { registrationList } = await import('../../node/agents/registrations.js');
      const db = await ctx.store();
      const list = registrationList(db, ctx.clock.now(), await schedulesAtService(ctx, db, ctx.clock.now()));
      ctx.output.result(list, ({ registrations: rows }, style) => {
        if (rows.length === 0) return '';
        return table(
          ['AGENT', 'EVERY', 'DAILY CAP', 'SPENT TODAY', 'LAST RUN', 'NEXT RUN'].map((h) => style.bold(h)),
          rows.map((r) => [
            r.agent_id,
            r.every_seconds === null ? 'manual' : formatDuration(r.every_seconds),
            r.daily_cap_cents === null ? '-' : formatDollars(r.daily_cap_cents),
            formatDollars(r.spent_today_cents),
            r.last_run_at === null ? '-' : `${shortTime(r.last_run_at)} ${r.last_run_status}`,
            r.paused_reason !== null
              ? `paused: ${r.paused_reason}`
              : r.next_run_at !== null
                ? shortTime(r.next_run_at)
                : r.every_seconds !== null && r.schedule_id === null
                  ? "at the daemon's start"
                  : '-',
          ]),
          ['left', 'left', 'right', 'right'],
        );
      });
      if (list.registrations.length === 0)
        ctx.output.next(
          'No agents registered. Register one of the catalog (swarm-node agents), for example: swarm-node register agent_ops_monitor_004.',
        );
    });
}

/**
 * The service's view of the schedules register made (their next times, their pauses) and of today's spend, whose
 * runs are the service's: asked only when such a schedule is registered, and only with a sign-in; without either,
 * the list is the node's own and says so.
 */
async function schedulesAtService(ctx: CommandContext, db: SqliteDatabase, nowMs: number): Promise<ServiceView> {
  const { listRegistrations } = await import('../../node/store/registrations.js');
  if (!listRegistrations(db).some((registration) => registration.schedule_id !== null)) return { schedules: new Map() };
  try {
    const [{ listSchedules }, { usageOf }] = await Promise.all([
      import('../../node/service/schedules-api.js'),
      import('../../node/service/usage-api.js'),
    ]);
    const client = await ctx.client();
    const token = ctx.requireJwt().token;
    const today = new Date(nowMs).toISOString().slice(0, 10);
    const [{ schedules }, usage] = await Promise.all([listSchedules(client, token), usageOf(client, token, { from: today, to: today })]);
    return {
      schedules: new Map(schedules.map((schedule) => [schedule.schedule_id, schedule])),
      spentTodayCents: new Map(usage.by_agent.map((row) => [row.agent_id, row.net_cents])),
    };
  } catch (error) {
    ctx.output.warn(`the schedules at the service and today's spend there are not shown: ${messageOf(error)}`);
    return { schedules: new Map() };
  }
}
