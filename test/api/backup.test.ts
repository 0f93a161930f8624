// `svc-api backup` (docs/operations.md "Backing up svc-api"), run as the built program against a running svc-api
// that keeps writing: the copy is consistent, private, and restores to a working service with the same data.
import { copyFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { SVC_API_BIN, spawnSvcApi, type SpawnedSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';

const ENV = { SVC_JWT_SECRET: randomBytes(32).toString('base64url'), SVC_WEBHOOK_SECRET: `whsec_${randomBytes(12).toString('hex')}` };

function backup(args: string[], env: Record<string, string> = {}) {
  return execa('node', [SVC_API_BIN, 'backup', ...args], { reject: false, env, extendEnv: true });
}

describe('svc-api backup', () => {
  const started: SpawnedSvcApi[] = [];
  afterAll(async () => {
    await Promise.all(started.map((service) => service.stop()));
    removeTempDirs();
  });

  it('copies the database while the service writes, and the copy restores to a working service', async () => {
    const original = await spawnSvcApi({ env: ENV });
    started.push(original);
    const email = uniqueEmail('backup');
    const token = await signIn(original.baseUrl, email);
    await fundWallet(original.baseUrl, email, 700);

    // Writes go on during the whole backup: checkouts at the sandbox provider, each a row.
    const api = apiClient(original.baseUrl);
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      while (writing) {
        const response = await api.post('/sandbox/payments', {
          offer_id: 'svc_pay_wallet_fund',
          customer_email: uniqueEmail('load'),
          amount_cents: 100,
        });
        expect(response.status, response.text).toBe(201);
        writes += 1;
      }
    })();
    await waitFor(async () => (writes >= 20 ? true : undefined), 'writes under way');
    const out = join(tempDir('svc-backup-'), 'svc-api-copy.db');
    const result = await backup(['--data-dir', original.dataDir, '--out', out, '--json']);
    const writesDuringBackup = writes;
    writing = false;
    await writer;

    expect(result.exitCode, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as { out: string; schema_version: number; pages: number; bytes: number };
    expect(report).toMatchObject({ out, schema_version: expect.any(Number), pages: expect.any(Number) });
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(statSync(out).size).toBe(report.bytes);
    const copy = new Database(out, { readonly: true });
    const copied = copy.prepare('SELECT count(*) FROM sandbox_payments').pluck().get() as number;
    copy.close();
    // A snapshot taken somewhere within the writes: every row before the backup began, none from after it ended.
    expect(copied).toBeGreaterThanOrEqual(20);
    expect(copied).toBeLessThanOrEqual(writesDuringBackup + 10);
    await original.stop();

    // Restore: the copy becomes svc-api.db of a data directory; the keys come from the same environment.
    const restoredDir = tempDir('svc-restored-');
    copyFileSync(out, join(restoredDir, 'svc-api.db'));
    const restored = await spawnSvcApi({ dataDir: restoredDir, env: ENV });
    started.push(restored);
    expect((await httpRequest(`${restored.baseUrl}/readyz`)).status).toBe(200);
    const wallet = await httpRequest(`${restored.baseUrl}/v1/swarm/wallet`, { token });
    expect(wallet.status, wallet.text).toBe(200);
    expect(wallet.body.balance_cents).toBe(700);
    // And it takes writes again.
    await fundWallet(restored.baseUrl, email, 50);
    expect((await httpRequest(`${restored.baseUrl}/v1/swarm/wallet`, { token })).body.balance_cents).toBe(750);
  });

  it('never replaces an existing file, and leaves nothing behind when it fails', async () => {
    const dataDir = tempDir('svc-backup-src-');
    const service = await spawnSvcApi({ dataDir, env: ENV });
    started.push(service);
    const outDir = tempDir('svc-backup-out-');
    const out = join(outDir, 'taken.db');
    writeFileSync(out, 'an older backup');
    const refused = await backup(['--data-dir', dataDir, '--out', out]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(/exists; a backup never replaces a file/);
    expect(readFileSync(out, 'utf8')).toBe('an older backup');

    const missing = await backup(['--data-dir', join(dataDir, 'nothing-here'), '--out', join(outDir, 'other.db')]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toMatch(/there is no svc-api database at/);
    expect(existsSync(join(outDir, 'other.db'))).toBe(false);
  });

  it('says how it is used: --out is required, and PostgreSQL is backed up with pg_dump', async () => {
    const noOut = await backup(['--data-dir', tempDir()]);
    expect(noOut.exitCode).toBe(2);
    expect(noOut.stderr).toMatch(/^svc-api backup: --out is required/);
    const postgres = await backup(['--data-dir', tempDir(), '--out', join(tempDir(), 'x.db')], {
      SVC_DATABASE_URL: 'postgres://svc@127.0.0.1/svc',
    });
    expect(postgres.exitCode).toBe(2);
    expect(postgres.stderr).toMatch(/pg_dump/);
    const help = await backup(['--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/Example:\n {2}svc-api backup --data-dir/);
  });
});
