// A flood of requests for one counted limit's lock (docs/api.md "Counted limits under concurrency") while another
// transaction holds it (a test's own, here): they wait in the process, one of them at the database, so the pool's
// connections stay free and the service answers everyone else meanwhile; once the lock is let go, the limit holds.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { postgresDatabaseFor } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';

/** More than the pool's 10 connections (src/api/store/open-postgres.ts). */
const FLOOD = 30;

describe('requests queued for one lock of a counted limit (PostgreSQL)', () => {
  let service: TestService;
  let url: string;
  beforeAll(async () => {
    const dataDir = tempDir('svc-pg-limit-locks-');
    service = await startSvcApi({ dataDir });
    url = await postgresDatabaseFor(dataDir);
  });
  afterAll(async () => {
    await service?.close();
    removeTempDirs();
  });

  it("30 sign-in codes for one address wait for its lock holding one connection: another user's request is answered", async () => {
    const other = await signIn(service.baseUrl, uniqueEmail('bystander'));
    const email = uniqueEmail('locked-address');
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      // The lock the sign-in codes of this address take (auth/email-codes.ts, Store.lock).
      await locker.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`sign-in-codes:address:${email}`]);
      const flood = Array.from({ length: FLOOD }, () => httpRequest(`${service.baseUrl}/v1/auth/email-code`, { body: { email } }));
      const waitingForLocks = async (): Promise<number> => {
        // Read afresh each time: inside a transaction the activity is otherwise the snapshot of its first read.
        await locker.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await locker.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event = 'advisory' AND pid <> pg_backend_pid()`,
        );
        return rows[0]!.n;
      };
      await waitFor(async () => ((await waitingForLocks()) >= 1 ? true : undefined), 'a sign-in code waiting for the lock');
      // Had every request of the flood taken a connection to wait at the lock, this one would wait 5 s for one: 503.
      const wallet = await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token: other });
      expect(wallet.status, wallet.text).toBe(200);
      expect(await waitingForLocks()).toBe(1);
      await locker.query('COMMIT');
      const statuses = (await Promise.all(flood)).map((response) => response.status);
      expect(statuses.filter((status) => status === 202)).toHaveLength(5);
      expect(statuses.filter((status) => status === 429)).toHaveLength(FLOOD - 5);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });
});
