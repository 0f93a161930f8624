// Releases only move forward (docs/operations.md "Upgrade"): a signed old release is still signed, so a service (or
// a man in the middle of an http:// base URL) that claims a newer version and serves an older one, a forged request
// in var/updates/, an older artifact given to upgrade or to install.sh over an installed node, each would take the
// node back. Each is refused here, with the node installed as root under a scratch root; going back on purpose is
// `upgrade --to VERSION`. And a --base-url given to one upgrade is for that command alone, not the node's config.
import { copyFileSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { releaseFileNames } from '../../src/lib/release-manifest.js';
import { startVersionLiar, type Interposer } from '../helpers/interposer.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { buildRelease, installWithScript, publish, signingKey, type BuiltRelease, type SigningKey } from './release-support.js';
import { homeOf, run } from './support.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
const PLATFORM = `linux-${process.arch}`;
const installSh = new URL('../../scripts/install.sh', import.meta.url).pathname;
let key: SigningKey;
let v010: BuiltRelease;
let v011: BuiltRelease;
let v012: BuiltRelease;
let root: string;

const home = () => homeOf(root);
const current = () => readlinkSync(join(home(), 'current'));
const swarmNode = (args: string[]) => run(join(home(), 'current', 'bin', 'swarm-node'), args, { timeoutMs: 120_000 });
const configFile = () => JSON.parse(readFileSync(join(home(), 'etc', 'config.json'), 'utf8')) as Record<string, unknown>;

beforeAll(async () => {
  key = signingKey('order');
  [v010, v011, v012] = await Promise.all([
    buildRelease(key, { version: '0.1.0' }),
    buildRelease(key, { version: '0.1.1' }),
    buildRelease(key, { version: '0.1.2' }),
  ]);
  publish(v010, releasesDir);
  publish(v011, releasesDir);
  root = tempDir('order-root-');
  await installWithScript(service.baseUrl, v011, key, root);
  expect(current()).toBe('releases/0.1.1');
}, 180_000);

describe('a node never goes back by itself', { timeout: 120_000 }, () => {
  let mitm: Interposer;
  beforeAll(async () => {
    // Claims 9.9.9 is the newest, and serves the signed 0.1.0's files under 9.9.9's names.
    mitm = await startVersionLiar(service.baseUrl, '9.9.9', '0.1.0');
  });
  afterAll(() => mitm.close());

  it('refuses a service that claims 9.9.9 and serves the signed 0.1.0: nothing switched, the config untouched', async () => {
    const check = await swarmNode(['upgrade', '--check', '--base-url', mitm.url]);
    expect(check.stdout).toMatch(/9\.9\.9 is available/);
    const result = await swarmNode(['upgrade', '--base-url', mitm.url]);
    expect(result.exitCode, result.stderr).toBe(1);
    expect(result.stderr).toMatch(
      /swarm-node 9\.9\.9 for linux-\w+ was asked for, and the signed manifest is of 0\.1\.0 .*nothing was installed/,
    );
    expect(current()).toBe('releases/0.1.1');
    expect(configFile().base_url).toBe(service.baseUrl);
  });

  it('refuses a forged var/updates/request.json through upgrade --pending as root: 9.9.9 named, the signed 0.1.0 staged', async () => {
    const updates = join(home(), 'var', 'updates');
    const staged = releaseFileNames('9.9.9', PLATFORM);
    const real = releaseFileNames('0.1.0', PLATFORM);
    const dir = join(v010.artifact.path, '..');
    mkdirSync(updates, { recursive: true, mode: 0o700 });
    for (const kind of ['artifact', 'manifest', 'signature'] as const) copyFileSync(join(dir, real[kind]), join(updates, staged[kind]));
    writeFileSync(
      join(updates, 'request.json'),
      JSON.stringify({ version: '9.9.9', platform: PLATFORM, staged_at: new Date().toISOString() }),
    );
    const result = await swarmNode(['upgrade', '--pending', '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.json).toMatchObject({
      action: 'failed',
      from_version: '0.1.1',
      to_version: '9.9.9',
      reason: expect.stringMatching(/the signed manifest is of 0\.1\.0/),
    });
    expect(current()).toBe('releases/0.1.1');
  });

  it('refuses an older signed artifact given to upgrade; --to names it and goes back on purpose, from a file or the service', async () => {
    const refused = await swarmNode(['upgrade', '--from', v010.artifact.path]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/swarm-node 0\.1\.1 is installed; 0\.1\.0 is older, and a node never goes back by itself/);
    // The remedy carries the staging root it was run under, and no sudo: a staging root is written as its owner.
    expect(refused.stderr).toContain(`swarm-node upgrade --to 0.1.0 --root ${root}`);
    expect(current()).toBe('releases/0.1.1');

    const back = await swarmNode(['upgrade', '--from', v010.artifact.path, '--to', '0.1.0', '--json']);
    expect(back.exitCode, back.stderr).toBe(0);
    expect(current()).toBe('releases/0.1.0');
    // Forward again by the service's newest, then back by --to from the service, then forward.
    expect((await swarmNode(['upgrade'])).exitCode).toBe(0);
    expect(current()).toBe('releases/0.1.1');
    const fromService = await swarmNode(['upgrade', '--to', '0.1.0']);
    expect(fromService.exitCode, fromService.stderr).toBe(0);
    expect(current()).toBe('releases/0.1.0');
    expect((await swarmNode(['upgrade'])).exitCode).toBe(0);
    expect(current()).toBe('releases/0.1.1');
    expect((await swarmNode(['upgrade', '--to', '../0.1.0'])).exitCode).toBe(2);
    // An unpacked package (not signed) goes forward only too: the release kept as previous, given as a directory.
    const unpacked = await swarmNode(['upgrade', '--from', join(home(), 'releases', '0.1.0')]);
    expect(unpacked.exitCode).toBe(2);
    expect(unpacked.stderr).toMatch(/0\.1\.0 is older/);
    expect(current()).toBe('releases/0.1.1');
  });

  it('install.sh with an older release over the installed node installs nothing', async () => {
    const result = await run('sh', [
      installSh,
      '--base-url',
      service.baseUrl,
      '--root',
      root,
      '--artifact',
      v010.artifact.path,
      '--trust-key',
      key.publicFile,
    ]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/swarm-node 0\.1\.1 is installed; 0\.1\.0 is older/);
    // Given no --base-url, install.sh names its default service; the remedy's upgrade asks the node's own.
    const defaulted = await run('sh', [installSh, '--root', root, '--artifact', v010.artifact.path, '--trust-key', key.publicFile]);
    expect(defaulted.exitCode).toBe(2);
    expect(defaulted.stderr).toContain(`swarm-node upgrade --to 0.1.0 --base-url ${service.baseUrl}`);
    expect(defaulted.stderr).not.toContain('--base-url http://127.0.0.1:8787 ');
    expect(current()).toBe('releases/0.1.1');
  });

  it('a one-off --base-url given to upgrade is used for it and not written into etc/config.json', async () => {
    publish(v012, releasesDir);
    // The same service by another name: what the upgrade talks to, for this command only.
    const other = service.baseUrl.replace('127.0.0.1', 'localhost');
    const result = await swarmNode(['upgrade', '--base-url', other, '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(current()).toBe('releases/0.1.2');
    expect(configFile().base_url).toBe(service.baseUrl);
    expect(basename(current())).toBe('0.1.2');
  });
});
