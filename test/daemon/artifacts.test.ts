// A run's artifacts end to end (docs/api.md "Run artifacts"): the daemon as a process runs an agent that writes into
// SWARM_ARTIFACTS_DIR, uploads its files to the real svc-api and logs what it did not keep; the built CLI lists and
// downloads them, each checked against its sha256, never over a file without --force; another user's run and an
// unknown one exit 5.
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { cli, DaemonProcess, register, signedInNode } from './support.js';

const AGENT = 'agent_sales_outreach_008';
const KiB = 1024;
/** A user's artifacts quota small enough for one of the run's files to go over it. */
const QUOTA = 64 * KiB;

const service = useSvcApi({ artifactLimits: { maxUserBytes: QUOTA } });
afterAll(() => removeTempDirs());

const DRAFTS = 'name,email,subject\nAda,ada@example.com,Hello Ada\nGrace,grace@example.com,Hello Grace\n';
const SARIF = JSON.stringify({ version: '2.1.0', runs: [{ tool: { driver: { name: 'review' } }, results: [] }] });
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

it('the daemon uploads what a run wrote and says what it did not keep; `artifacts` lists and downloads them, checked against their sha256', async () => {
  const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'artifacts' });
  installTestBundle(
    node.home,
    AGENT,
    agentProgram(`const fs = await import('node:fs');
      const dir = process.env.SWARM_ARTIFACTS_DIR;
      fs.writeFileSync(dir + '/drafts.csv', ${JSON.stringify(DRAFTS)});
      fs.writeFileSync(dir + '/review.sarif', ${JSON.stringify(SARIF)});
      fs.writeFileSync(dir + '/big.bin', Buffer.alloc(${QUOTA + KiB}, 1));
      fs.symlinkSync('/etc/shadow', dir + '/shadow.txt');
      process.stdout.write(JSON.stringify({ summary: 'drafted 2' }));`),
  );
  await register(node, AGENT, '--every', '1h');
  const daemon = DaemonProcess.start(node);
  const succeeded = await daemon.waitForEvent('run_succeeded', () => true, 30_000);
  const runId = succeeded.run_id!;
  // Said in its log: what went up, and what did not, with why; the run succeeded all the same.
  expect(daemon.events('artifacts_uploaded')).toMatchObject([{ run_id: runId, count: '2', bytes: String(DRAFTS.length + SARIF.length) }]);
  expect(daemon.events('artifact_not_kept')).toMatchObject([
    { run_id: runId, name: 'big.bin', reason: expect.stringContaining('artifact_quota_exceeded') },
  ]);
  expect(daemon.events('artifact_skipped')).toMatchObject([
    { run_id: runId, name: 'shadow.txt', reason: expect.stringContaining('symbolic link') },
  ]);
  expect(await daemon.stop()).toBe(0);

  const listed = await cli(node, ['artifacts', runId, '--json']);
  expect(listed.exitCode, listed.stderr).toBe(0);
  const listing = JSON.parse(listed.stdout) as {
    artifacts: Array<{ name: string; size_bytes: number; sha256: string }>;
    expires_at: string;
  };
  expect(listing.artifacts.map(({ name, size_bytes, sha256: digest }) => ({ name, size_bytes, sha256: digest }))).toEqual([
    { name: 'drafts.csv', size_bytes: DRAFTS.length, sha256: sha256(DRAFTS) },
    { name: 'review.sarif', size_bytes: SARIF.length, sha256: sha256(SARIF) },
  ]);
  expect(Date.parse(listing.expires_at)).toBeGreaterThan(Date.now() + 29 * 86_400_000);
  const human = await cli(node, ['artifacts', runId]);
  expect(human.stdout).toMatch(/NAME\s+BYTES\s+SHA256\ndrafts\.csv\s+\d+\s+[0-9a-f]{64}\nreview\.sarif/);

  const dir = join(tempDir('artifacts-download-'), 'drafts');
  const download = await cli(node, ['artifacts', runId, '--download', dir]);
  expect(download.exitCode, download.stderr).toBe(0);
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  expect(readdirSync(dir).sort()).toEqual(['drafts.csv', 'review.sarif']);
  expect(sha256(readFileSync(join(dir, 'drafts.csv')))).toBe(sha256(DRAFTS));
  expect(sha256(readFileSync(join(dir, 'review.sarif')))).toBe(sha256(SARIF));

  // A file of the same name is never replaced without --force, and nothing is downloaded then.
  writeFileSync(join(dir, 'drafts.csv'), 'my own edits');
  const refused = await cli(node, ['artifacts', runId, '--download', dir]);
  expect(refused.exitCode).toBe(1);
  expect(refused.stderr).toContain('drafts.csv');
  expect(refused.stderr).toContain('--force');
  expect(readFileSync(join(dir, 'drafts.csv'), 'utf8')).toBe('my own edits');
  const forced = await cli(node, ['artifacts', runId, '--download', dir, '--force']);
  expect(forced.exitCode, forced.stderr).toBe(0);
  expect(readFileSync(join(dir, 'drafts.csv'), 'utf8')).toBe(DRAFTS);
  expect(readdirSync(dir).filter((name) => name.startsWith('.'))).toEqual([]);

  // Bytes that are not the listed ones (the stored chunk altered behind the service's back) never take the name.
  const blob = service.db.prepare('SELECT blob_id FROM run_artifacts WHERE run_id = ? AND name = ?').pluck().get(runId, 'drafts.csv');
  service.db.prepare('UPDATE artifact_chunks SET content = ? WHERE blob_id = ?').run(Buffer.from(DRAFTS.toUpperCase()), blob);
  const elsewhere = join(tempDir('artifacts-tampered-'), 'out');
  const tampered = await cli(node, ['artifacts', runId, '--download', elsewhere]);
  expect(tampered.exitCode).toBe(1);
  expect(tampered.stderr).toContain('not the');
  expect(readdirSync(elsewhere)).toEqual([]);

  // Another user's run is theirs alone, and an unknown run the same: exit 5, as not found.
  const stranger = await signedInNode(service.baseUrl, { label: 'stranger', enroll: false });
  for (const [who, run] of [
    [stranger, runId],
    [node, randomUUID()],
  ] as const) {
    const notFound = await cli(who, ['artifacts', run]);
    expect(notFound.exitCode, notFound.stderr).toBe(5);
    expect(notFound.stderr).toContain(`no run ${run}`);
  }
  expect(existsSync(join(node.home, 'var', 'artifacts')) ? readdirSync(join(node.home, 'var', 'artifacts')) : []).toEqual([]);
}, 90_000);
