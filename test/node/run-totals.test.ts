// `runs` totals come from a table the journal's triggers keep (node migration 5), not from a scan: they must equal a
// count of every row after any mix of writes, and after the migration of a journal that already held runs.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type SqliteDatabase } from '../../src/lib/sqlite.js';
import { NODE_MIGRATIONS, openNodeStore } from '../../src/node/store/database.js';
import { journalRunSettled, journalRunStarted, runHistory, type RunSource, type RunStatus } from '../../src/node/store/journal.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

afterAll(() => removeTempDirs());

const AGENTS = ['agent_ops_monitor_004', 'agent_dev_review_012', 'agent_svc_skills_005'];
const SETTLED: Array<Exclude<RunStatus, 'pending'>> = ['succeeded', 'failed', 'insufficient_balance'];

/** The totals as a scan of every row counts them: what the kept totals must equal. */
function scanned(db: SqliteDatabase, agentId?: string): ReturnType<typeof runHistory>['totals'] {
  const rows = db
    .prepare(
      `SELECT status, COUNT(*) AS n, SUM(charged_cents) AS cents FROM runs ${agentId === undefined ? '' : 'WHERE agent_id = ?'} GROUP BY status`,
    )
    .all(...(agentId === undefined ? [] : [agentId])) as Array<{ status: RunStatus; n: number; cents: number }>;
  const totals = { runs: 0, charged_cents: 0, by_status: { succeeded: 0, failed: 0, insufficient_balance: 0, pending: 0 } };
  for (const row of rows) {
    totals.runs += row.n;
    totals.charged_cents += row.cents;
    totals.by_status[row.status] = row.n;
  }
  return totals;
}

/** A journal row started as the schema of version 4 has it (before the totals, and the labels of version 6). */
function startedAtVersion4(
  db: SqliteDatabase,
  run: { idempotency_key: string; agent_id: string; source: RunSource; price_cents: number },
  now: number,
): void {
  db.prepare(`INSERT INTO runs (idempotency_key, agent_id, source, status, price_cents, started_at) VALUES (?, ?, ?, 'pending', ?, ?)`).run(
    run.idempotency_key,
    run.agent_id,
    run.source,
    run.price_cents,
    now,
  );
}

/** A pseudo-random but repeatable mix: runs started, some settled (a few twice, as a replay rewrites its row). */
function journalSome(db: SqliteDatabase, count: number, seed: number, start: typeof startedAtVersion4 = journalRunStarted): void {
  let state = seed;
  const next = (n: number): number => (state = (state * 1103515245 + 12345) % 2 ** 31) % n;
  for (let i = 0; i < count; i += 1) {
    const key = randomUUID();
    start(db, { idempotency_key: key, agent_id: AGENTS[next(AGENTS.length)]!, source: 'cli', price_cents: 4 }, i);
    const settles = next(4);
    for (let s = 0; s < Math.min(settles, 2); s += 1) {
      const status = SETTLED[next(SETTLED.length)]!;
      journalRunSettled(db, { idempotency_key: key, status, charged_cents: status === 'succeeded' ? 1 + next(15) : 0 }, i + 1);
    }
  }
}

describe('run totals', () => {
  it('equal a scan of the journal after starts, settlements and re-settlements, per agent and in all', () => {
    const db = openNodeStore(join(tempDir('totals-'), 'swarm-node.db'));
    journalSome(db, 400, 7);
    expect(runHistory(db, { limit: 1 }).totals).toEqual(scanned(db));
    for (const agentId of AGENTS) expect(runHistory(db, { agentId, limit: 1 }).totals).toEqual(scanned(db, agentId));
    db.prepare('DELETE FROM runs WHERE rowid % 3 = 0').run();
    expect(runHistory(db, { limit: 1 }).totals).toEqual(scanned(db));
    expect(runHistory(db, { agentId: 'agent_sales_outreach_008', limit: 1 }).totals).toEqual(scanned(db, 'agent_sales_outreach_008'));
    db.close();
  });

  it('are filled from the rows a journal held before the migration that keeps them', () => {
    const path = join(tempDir('totals-old-'), 'swarm-node.db');
    const old = openDatabase(path, { migrations: NODE_MIGRATIONS.slice(0, 4) });
    journalSome(old, 200, 11, startedAtVersion4);
    const before = scanned(old);
    expect(before.runs).toBe(200);
    old.close();
    const db = openNodeStore(path);
    expect(runHistory(db, { limit: 1 }).totals).toEqual(before);
    db.close();
  });
});
