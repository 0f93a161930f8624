// The database out of reach (docs/api.md "Storage"): at start svc-api exits with one clear error naming
// SVC_DATABASE_URL (and never its password); mid-load each request answers 503 with Retry-After and leaves nothing
// half-written, and the service serves again once the database is back, without a restart.
import { randomUUID } from 'node:crypto';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../src/api/server.js';
import { paidUserWithNode, stopNodes, TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { dbSnapshot } from '../api/support/paygate-support.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { SVC_API_BIN, type TestService } from '../helpers/svc-api.js';
import { syncPostgres, type SyncPostgres } from '../helpers/sync-postgres.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { postgresDatabaseFor } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { smtpUrl } from '../helpers/mailbox.js';

describe('PostgreSQL out of reach', () => {
  it('at start: exits 1 with one error naming SVC_DATABASE_URL, without the password', async () => {
    const result = await execa('node', [SVC_API_BIN, '--port', '0', '--data-dir', tempDir('svc-api-')], {
      env: { SVC_DATABASE_URL: 'postgres://svc:s3cret-password@127.0.0.1:1/svc', SVC_SMTP_URL: smtpUrl(), SVC_LOG_LEVEL: 'silent' },
      reject: false,
      timeout: 30_000,
    });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^svc-api: cannot reach the PostgreSQL database of SVC_DATABASE_URL \(postgres:\/\/svc@127\.0\.0\.1:1\/svc\)/,
    );
    expect(result.stderr).not.toContain('s3cret-password');
  });

  it('at start: a SVC_DATABASE_URL that is not postgres:// is refused by name', async () => {
    const result = await execa('node', [SVC_API_BIN, '--port', '0', '--data-dir', tempDir('svc-api-')], {
      env: { SVC_DATABASE_URL: 'mysql://localhost/svc', SVC_SMTP_URL: smtpUrl(), SVC_LOG_LEVEL: 'silent' },
      reject: false,
      timeout: 30_000,
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('SVC_DATABASE_URL must be a postgres:// URL');
  });

  describe('mid-load', () => {
    let proxy: TcpProxy;
    let running: RunningService;
    let service: TestService;
    let reader: SyncPostgres;

    beforeAll(async () => {
      const direct = new URL(await postgresDatabaseFor(tempDir('svc-pg-cut-')));
      proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port) });
      const through = new URL(direct);
      through.port = String(proxy.port);
      running = await startService({
        dataDir: tempDir('svc-api-'),
        sandbox: true,
        env: { SVC_DATABASE_URL: through.toString(), SVC_SMTP_URL: smtpUrl() },
        runTiming: TEST_RUN_TIMING,
      });
      // The test reads the database directly, not through the proxy it cuts.
      reader = syncPostgres(direct.toString());
      service = { ...running, db: reader.db };
    });
    afterAll(async () => {
      proxy?.restore();
      await stopNodes();
      await running?.close();
      await reader?.close();
      await proxy?.close();
      removeTempDirs();
    });

    it('answers 503 with Retry-After and writes nothing while the database is away, then serves again', async () => {
      const user = await paidUserWithNode(service, 100);
      const body = { user_id: user.email, agent_id: 'agent_ops_monitor_004' };
      const send = (key = randomUUID()) =>
        httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
          method: 'POST',
          token: user.token,
          headers: { 'idempotency-key': key },
          body,
        });
      expect((await send()).status).toBe(200);

      const before = dbSnapshot(reader.db);
      proxy.cut();
      const key = randomUUID();
      const refused = await send(key);
      expect(refused.status, refused.text).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(refused.body).toMatchObject({ code: 'service_unavailable' });
      expect(refused.text).not.toContain('ECONN');
      const wallet = await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token: user.token });
      expect(wallet.status).toBe(503);
      expect(dbSnapshot(reader.db)).toEqual(before);

      proxy.restore();
      // The same key again once the database is back: the run happens, once. (Until the node's next poll reaches
      // the service it may count as offline: 409, nothing charged, the key not kept, so the same key may come again.)
      const retried = await waitFor(
        async () => {
          const response = await send(key);
          return response.status === 503 || response.status === 409 ? undefined : response;
        },
        'the service to reach the database again',
        30_000,
      );
      expect(retried.status, retried.text).toBe(200);
      expect(retried.body).toMatchObject({ status: 'succeeded', charged_cents: 4, balance_cents: 92 });
    });
  });
});
