// One user's executes never take every pooled connection (src/api/store/execute-slots.ts): with fifty of them
// waiting for their wallet's row, locked here by another transaction, the user's node still polls and reports its
// result, and the execute that waits for that result is answered, before the wallet is free again.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { waitFor } from '../helpers/funnel.js';
import type { Answer } from '../helpers/protocol-node.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { postgresDatabaseFor } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { TEST_RUN_TIMING, execute, paidUserWithNode, runsOf, stopNodes } from '../api/execute-fixtures.js';

const AGENT = 'agent_ops_monitor_004';

describe("one user's executes and its node share the PostgreSQL pool", () => {
  let service: TestService | undefined;
  afterAll(async () => {
    await stopNodes();
    await service?.close();
    removeTempDirs();
  });

  it("a node's poll and result find a connection while fifty executes of its user wait for their wallet's row", async () => {
    const dataDir = tempDir('svc-pg-slots-');
    service = await startSvcApi({ dataDir, runTiming: { ...TEST_RUN_TIMING, leaseMs: 30_000 } });
    const started: AssignedRun[] = [];
    let release!: (answer: Answer) => void;
    const answered = new Promise<Answer>((resolve) => (release = resolve));
    const user = await paidUserWithNode(service, 1000, {
      agents: [AGENT],
      capacity: 8,
      answer: (run) => {
        started.push(run);
        return started.length === 1 ? answered : { status: 'succeeded', output: {} };
      },
    });
    const body = { user_id: user.email, agent_id: AGENT };
    const first = execute(service, user.token, body, randomUUID(), { prefer: 'wait=60' });
    await waitFor(async () => (started.length === 1 ? true : undefined), 'the node holding the first run');

    const locker = new pg.Client({ connectionString: await postgresDatabaseFor(dataDir) });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT balance_cents FROM wallets WHERE user_id = $1 FOR UPDATE', [user.email]);
      const waiting = Array.from({ length: 50 }, () => execute(service!, user.token, body, randomUUID(), { prefer: 'wait=60' }));
      // The executes hold every connection they may: the rest of them wait in the process, holding none.
      await waitFor(
        async () => {
          const { rows } = await locker.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
          );
          return rows[0]!.n >= 8 ? true : undefined;
        },
        'the executes waiting for the wallet',
      );
      release({ status: 'succeeded', output: { answered: 'while the wallet was locked' } });
      const answer = await first;
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toMatchObject({ status: 'succeeded', output: { answered: 'while the wallet was locked' } });
      await locker.query('COMMIT');
      const rest = await Promise.all(waiting);
      expect(rest.map((response) => `${response.status} ${response.body.status}`)).toEqual(Array.from({ length: 50 }, () => '200 succeeded'));
      expect(runsOf(service, user.email).filter((run) => run.status === 'succeeded')).toHaveLength(51);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });
});
