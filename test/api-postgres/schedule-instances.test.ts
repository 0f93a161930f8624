// Two svc-api instances on one PostgreSQL database fire one schedule (docs/api.md "Schedules"): both run their
// scheduler loops, and each occurrence is also fired by several rounds of each at once; every occurrence makes one
// run, charged once.
import { afterAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
import { MovableClock } from '../helpers/clock.js';
import { useSvcApiPair } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/wait.js';
import { paidUserWithNode, stopNodes, TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { createScheduler } from '../../src/api/schedules/scheduler.js';

const MONITOR = 'agent_ops_monitor_004';
const PRICE = 4;
const MINUTE = 60_000;
const OCCURRENCES = 5;

describe('a schedule fired by two instances on one database', () => {
  const clock = new MovableClock();
  const [a, b] = useSvcApiPair({ clock, runTiming: TEST_RUN_TIMING });
  afterAll(stopNodes);
  const setTime = (ms: number) => clock.advance(ms - clock.now());

  it('makes one run of each occurrence, charged once', async () => {
    setTime(Date.parse('2027-08-01T10:00:30Z'));
    const user = await paidUserWithNode(a, 1000, { agents: [MONITOR], capacity: 8 });
    const made = await httpRequest(`${b.baseUrl}/v1/swarm/schedules`, {
      method: 'POST',
      token: user.token,
      body: { agent_id: MONITOR, cron: '* * * * *', overlap: 'allow' },
    });
    expect(made.status, made.text).toBe(201);
    const id = made.body.schedule_id as string;
    const schedulers = [createScheduler(a.ctx), createScheduler(b.ctx)];
    const occurrences = () =>
      a.db.prepare('SELECT fire_at, run_id FROM schedule_occurrences WHERE schedule_id = ? ORDER BY fire_at').all(id) as Array<{
        fire_at: number;
        run_id: string | null;
      }>;
    for (let minute = 1; minute <= OCCURRENCES; minute += 1) {
      const now = Date.parse('2027-08-01T10:00:00Z') + minute * MINUTE + 200;
      setTime(now);
      // The two loops, and three rounds of each instance at once.
      await Promise.all(schedulers.flatMap((scheduler) => [0, 1, 2].map(() => scheduler.round(now))));
      await waitFor(
        async () => (occurrences().length === minute && occurrences().every((o) => o.run_id !== null) ? true : undefined),
        `occurrence ${minute}`,
      );
    }
    const runs = a.db.prepare('SELECT run_id, charged_cents FROM runs WHERE user_id = ?').all(user.email) as Array<{
      run_id: string;
      charged_cents: number;
    }>;
    expect(runs).toHaveLength(OCCURRENCES);
    expect(new Set(occurrences().map((o) => o.run_id))).toEqual(new Set(runs.map((r) => r.run_id)));
    const debits = a.db
      .prepare("SELECT COUNT(*) AS n, SUM(amount_cents) AS cents FROM ledger_entries WHERE user_id = ? AND kind = 'debit'")
      .get(user.email) as {
      n: number;
      cents: number;
    };
    expect(Number(debits.n)).toBe(OCCURRENCES);
    expect(Math.abs(Number(debits.cents))).toBe(OCCURRENCES * PRICE);
  });
});
