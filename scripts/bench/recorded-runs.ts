// A service database as it stands after a long life (bench:execute --recorded-runs,
// "execute after 1M recorded runs"): finished runs, their debits in the ledger, and their Idempotency-Keys, written
// straight into svc-api's SQLite file while the service is stopped. The keys are all younger than their retention
// (the worst case: none purged yet), and the runs belong to many users, the bench's user among them, with ids as
// execute makes them (time-ordered run ids, random Idempotency-Keys as clients send them).
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { timeOrderedId } from '../../src/lib/time-ordered-id.js';

const OTHER_USERS = 999;
const BATCH = 50_000;

export function recordRuns(databasePath: string, count: number, benchUser: string, agentId: string, priceCents: number): void {
  const db = new Database(databasePath);
  try {
    db.pragma('journal_mode = WAL');
    const run = db.prepare(
      `INSERT INTO runs (run_id, user_id, agent_id, status, charged_cents, input_json, output_json, bundle_digest, pinned_node_id,
         node_id, lease_id, lease_expires_at, finished_by, started_at, claimed_at, finished_at)
       VALUES (?, ?, ?, 'succeeded', ?, NULL, ?, NULL, NULL, ?, ?, ?, 'node', ?, ?, ?)`,
    );
    const debit = db.prepare(
      `INSERT INTO ledger_entries (user_id, kind, amount_cents, payment_id, run_id, created_at) VALUES (?, 'debit', ?, NULL, ?, ?)`,
    );
    const key = db.prepare(
      `INSERT INTO idempotency_keys (user_id, idempotency_key, request_hash, state, status_code, response_json, run_id, created_at)
       VALUES (?, ?, ?, 'done', 200, ?, ?, ?)`,
    );
    const now = Date.now();
    const spanMs = 23 * 3600_000;
    for (let done = 0; done < count; done += BATCH) {
      db.transaction(() => {
        for (let index = done; index < Math.min(count, done + BATCH); index += 1) {
          const user = index % (OTHER_USERS + 1) === 0 ? benchUser : `user-${index % (OTHER_USERS + 1)}@example.com`;
          const at = now - spanMs + Math.floor((index / count) * spanMs);
          const runId = timeOrderedId(at);
          const output = JSON.stringify({ summary: 'recorded', findings: [] });
          run.run(runId, user, agentId, priceCents, output, randomUUID(), randomUUID(), at + 45_000, at, at + 5, at + 40);
          debit.run(user, priceCents, runId, at);
          const response = JSON.stringify({
            run_id: runId,
            status: 'succeeded',
            agent_id: agentId,
            charged_cents: priceCents,
            output: JSON.parse(output),
          });
          key.run(user, randomUUID(), randomUUID().replaceAll('-', '') + randomUUID().replaceAll('-', ''), response, runId, at);
        }
      })();
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}
