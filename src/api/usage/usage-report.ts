// GET /v1/swarm/usage (docs/api.md "Usage"): the ledger's debits and refunds of the user's runs started in the
// range, grouped by the day the run started, its agent and its node, in one query; the rollups by day, agent and
// node are added up from those rows, so every figure of the answer is the same cents.
import { sql } from 'kysely';
import { SvcError } from '../../contract/errors.js';
import {
  DEFAULT_USAGE_DAYS,
  MAX_USAGE_DAYS,
  USAGE_DATE_PATTERN,
  type UsageFigures,
  type UsageQuery,
  type UsageResponse,
} from '../../contract/usage.js';
import { DAY_MS, startOfUtcDay } from '../../lib/clock.js';
import type { Store } from '../store/store.js';

export interface UsageRange {
  /** Midnight UTC of the first day, and of the day after the last. */
  fromMs: number;
  toMs: number;
}

/** The range a query asks for (400 for a date that is not one, a reversed or too long range). */
export function usageRangeOf(query: UsageQuery, now: number): UsageRange {
  const dayOf = (text: string, field: 'from' | 'to'): number => {
    const ms = new RegExp(USAGE_DATE_PATTERN).test(text) ? Date.parse(`${text}T00:00:00Z`) : Number.NaN;
    if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text) {
      throw new SvcError('invalid_request', `${field} must be a date as YYYY-MM-DD (UTC)`, {
        extensions: { errors: [{ path: `/query/${field}`, message: 'must be a date as YYYY-MM-DD' }] },
      });
    }
    return ms;
  };
  const last = query.to === undefined ? startOfUtcDay(now) : dayOf(query.to, 'to');
  const first = query.from === undefined ? last - (DEFAULT_USAGE_DAYS - 1) * DAY_MS : dayOf(query.from, 'from');
  if (first > last)
    throw new SvcError('invalid_request', 'from is after to', {
      extensions: { errors: [{ path: '/query/from', message: 'must be on or before to' }] },
    });
  if ((last - first) / DAY_MS + 1 > MAX_USAGE_DAYS) {
    throw new SvcError('invalid_request', `a range is at most ${MAX_USAGE_DAYS} days`, {
      extensions: { errors: [{ path: '/query/from', message: `at most ${MAX_USAGE_DAYS} days before to` }] },
    });
  }
  return { fromMs: first, toMs: last + DAY_MS };
}

const zero = (): UsageFigures => ({ runs: 0, charged_cents: 0, refunded_cents: 0, net_cents: 0 });
const add = (into: UsageFigures, from: UsageFigures): void => {
  into.runs += from.runs;
  into.charged_cents += from.charged_cents;
  into.refunded_cents += from.refunded_cents;
  into.net_cents += from.net_cents;
};
const dateOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export async function usageReport(store: Store, userId: string, range: UsageRange): Promise<UsageResponse> {
  // A literal, not a parameter: PostgreSQL must see the same expression in the select list and in GROUP BY.
  const day = sql<number>`cast(r.started_at / ${sql.lit(DAY_MS)} as bigint)`;
  const grouped = await store.db
    .selectFrom('runs as r')
    .innerJoin('ledger_entries as l', 'l.run_id', 'r.run_id')
    .select([
      day.as('day'),
      'r.agent_id',
      'r.node_id',
      sql<number>`cast(sum(case when l.kind = 'debit' then 1 else 0 end) as bigint)`.as('runs'),
      sql<number>`cast(sum(case when l.kind = 'debit' then l.amount_cents else 0 end) as bigint)`.as('charged'),
      sql<number>`cast(sum(case when l.kind = 'refund' then l.amount_cents else 0 end) as bigint)`.as('refunded'),
    ])
    .where('r.user_id', '=', userId)
    .where('l.user_id', '=', userId)
    .where('r.started_at', '>=', range.fromMs)
    .where('r.started_at', '<', range.toMs)
    .groupBy([day, 'r.agent_id', 'r.node_id'])
    .execute();
  const totals = zero();
  const days = new Map<string, UsageFigures>();
  for (let day = range.fromMs; day < range.toMs; day += DAY_MS) days.set(dateOf(day), zero());
  const agents = new Map<string, UsageFigures>();
  const nodes = new Map<string | null, UsageFigures>();
  const rows = grouped
    .map((row) => {
      const charged = Number(row.charged);
      const refunded = Number(row.refunded);
      const figures = { runs: Number(row.runs), charged_cents: charged, refunded_cents: refunded, net_cents: charged - refunded };
      const date = dateOf(Number(row.day) * DAY_MS);
      add(totals, figures);
      add(days.get(date)!, figures);
      add(agents.get(row.agent_id) ?? agents.set(row.agent_id, zero()).get(row.agent_id)!, figures);
      add(nodes.get(row.node_id) ?? nodes.set(row.node_id, zero()).get(row.node_id)!, figures);
      return { date, agent_id: row.agent_id, node_id: row.node_id, ...figures };
    })
    .sort(
      (a, b) => a.date.localeCompare(b.date) || a.agent_id.localeCompare(b.agent_id) || String(a.node_id).localeCompare(String(b.node_id)),
    );
  return {
    from: dateOf(range.fromMs),
    to: dateOf(range.toMs - DAY_MS),
    totals,
    days: [...days].map(([date, figures]) => ({ date, ...figures })),
    by_agent: [...agents]
      .map(([agent_id, figures]) => ({ agent_id, ...figures }))
      .sort((a, b) => b.net_cents - a.net_cents || a.agent_id.localeCompare(b.agent_id)),
    by_node: [...nodes].map(([node_id, figures]) => ({ node_id, ...figures })).sort((a, b) => b.net_cents - a.net_cents),
    rows,
  };
}
