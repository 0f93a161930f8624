// issue 15 §4: `swarm-node upgrade` fetches the newest release from the service with the node credential, verifies
// it against the keys it trusts, switches, restarts the daemon, and rolls back by itself when the new daemon does
// not come up healthy; `--check` says whether there is one; `--from FILE` upgrades offline. There is no systemd
// here: the daemon runs under a supervisor loop (what systemd's Restart= does), and upgrade restarts it by SIGTERM.
// Releases are built without the runtime (not the subject here), so each costs well under a second.
import { spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey, sign } from 'node:crypto';
import { copyFileSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDaemonRecord, startedHealthy } from '../../src/node/install/daemon-health.js';
import { activatedSession, waitFor } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { brokenPackage, buildRelease, publish, signingKey, type BuiltRelease, type SigningKey } from './release-support.js';
import { filesUnder, homeOf, run, writeTokenFile } from './support.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
let key: SigningKey;
let v010: BuiltRelease;
let v011: BuiltRelease;
let broken: BuiltRelease;
let root: string;
let supervisor: ChildProcess | undefined;

const home = () => homeOf(root);
const current = () => readlinkSync(join(home(), 'current'));
// The node's own config names the service (install wrote it); nothing here overrides it.
const swarmNode = (args: string[]) => run(join(home(), 'current', 'bin', 'swarm-node'), args, { timeoutMs: 120_000 });
const healthyDaemon = (since: number) =>
  waitFor(async () => (startedHealthy(readDaemonRecord(join(home(), 'var', 'swarm-node.db')), since) ? true : undefined), 'a healthy daemon', 60_000);

beforeAll(async () => {
  key = signingKey('upgrade');
  [v010, v011, broken] = await Promise.all([
    buildRelease(key, { version: '0.1.0' }),
    buildRelease(key, { version: '0.1.1' }),
    buildRelease(key, { version: '0.1.2', packageDir: brokenPackage() }),
  ]);
  publish(v010, releasesDir);
  root = tempDir('upgrade-root-');
  const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('upgrade'));
  const installSh = new URL('../../scripts/install.sh', import.meta.url).pathname;
  const installed = await run('sh', [installSh, '--base-url', service.baseUrl, '--root', root, '--artifact', v010.artifact.path, '--trust-key', key.publicFile, '--token-file', writeTokenFile(deploy_token)]);
  expect(installed.exitCode, installed.stderr).toBe(0);
  // What systemd's Restart= would do: start the daemon of whatever `current` is, again whenever it exits.
  supervisor = spawn('sh', ['-c', `while :; do "${join(home(), 'current/bin/swarm-node')}" daemon >/dev/null 2>&1; sleep 0.2; done`], { detached: true, stdio: 'ignore' });
  await healthyDaemon(0);
}, 180_000);

/** Ends the supervisor loop and the daemon it started (both ours: started above). */
function stopSupervisedDaemon(): void {
  if (supervisor?.pid !== undefined) {
    try {
      process.kill(-supervisor.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  supervisor = undefined;
  const record = readDaemonRecord(join(home(), 'var', 'swarm-node.db'));
  if (record.pid !== null) {
    try {
      process.kill(record.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

afterAll(stopSupervisedDaemon);

describe('swarm-node upgrade', { timeout: 120_000 }, () => {
  it('--check says whether the service has a newer release', async () => {
    const none = await swarmNode(['upgrade', '--check', '--json']);
    expect(none.exitCode, none.stderr).toBe(0);
    expect(none.json).toEqual({ current_version: '0.1.0', latest_version: '0.1.0', update_available: false });
    publish(v011, releasesDir);
    const some = await swarmNode(['upgrade', '--check']);
    expect(some.exitCode, some.stderr).toBe(0);
    expect(some.stdout).toMatch(/swarm-node 0\.1\.1 is available \(this node runs 0\.1\.0\)/);
  });

  it('fetches, verifies (with the key install.sh trusted), switches and restarts into a healthy daemon', async () => {
    const before = readDaemonRecord(join(home(), 'var', 'swarm-node.db'));
    const started = Date.now();
    const result = await swarmNode(['upgrade', '--json']);
    const seconds = (Date.now() - started) / 1000;
    expect(result.exitCode, result.stderr).toBe(0);
    process.stdout.write(`upgrade 0.1.0 -> 0.1.1 with the daemon's restart and health check: ${seconds.toFixed(1)} s\n`);
    expect(result.stderr).toMatch(/verified swarm-node 0\.1\.1 \(signed by [0-9a-f]{16}, .*release-keys\/upgrade\.pub\.pem\)/);
    expect(result.json).toMatchObject({ version: '0.1.1', upgrade: { from_version: '0.1.0', health: { checked: true, healthy: true } } });
    expect(current()).toBe('releases/0.1.1');
    expect(readlinkSync(join(home(), 'previous'))).toBe('releases/0.1.0');
    const after = readDaemonRecord(join(home(), 'var', 'swarm-node.db'));
    expect(after.pid).not.toBe(before.pid);

    const again = await swarmNode(['upgrade']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/0\.1\.1 is the newest release; nothing to upgrade/);
  });

  it('rolls back by itself when the new release\'s daemon does not come up within the bound', async () => {
    publish(broken, releasesDir);
    const upgradeStarted = Date.now();
    const result = await swarmNode(['upgrade', '--health-timeout', '5']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/swarm-node 0\.1\.2's daemon did not start healthy within 5 s; rolled back to 0\.1\.1/);
    expect(current()).toBe('releases/0.1.1');
    // Its supervisor starts the release rolled back to, which comes up healthy.
    await healthyDaemon(upgradeStarted);
  });

  it('--from FILE upgrades from an artifact at hand (no service involved), and refuses one signed by a key it does not trust', async () => {
    const stranger = signingKey('stranger');
    const unsigned = await buildRelease(stranger, { version: '0.1.3' });
    const refused = await swarmNode(['upgrade', '--from', unsigned.artifact.path]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(/signature does not verify with any trusted key .*nothing was installed/);
    expect(current()).toBe('releases/0.1.1');

    const trusted = await swarmNode(['upgrade', '--from', unsigned.artifact.path, '--trust-key', stranger.publicFile, '--json']);
    expect(trusted.exitCode, trusted.stderr).toBe(0);
    expect(trusted.json).toMatchObject({ version: '0.1.3', upgrade: { from_version: '0.1.1', health: { checked: true, healthy: true } } });
    expect(current()).toBe('releases/0.1.3');
  });

  it('refuses a release whose files differ from its signed manifest, found while unpacking, and installs nothing', async () => {
    // A manifest signed by a trusted key that lists another digest for one file than the tarball holds.
    const dir = tempDir('mismatched-');
    for (const file of [v011.artifact.path, v011.manifest]) copyFileSync(file, join(dir, basename(file)));
    const manifest = join(dir, basename(v011.manifest));
    const original = readFileSync(manifest, 'utf8');
    const text = original.replace(/^file [0-9a-f]{64} (\d+ \d{4} bin\/swarm-node\.js)$/m, `file ${'0'.repeat(64)} $1`);
    expect(text).not.toBe(original);
    writeFileSync(manifest, text);
    writeFileSync(`${manifest}.sig`, sign(null, Buffer.from(text), createPrivateKey(readFileSync(key.privateFile))));
    const before = current();
    const result = await swarmNode(['upgrade', '--from', join(dir, basename(v011.artifact.path))]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/bin\/swarm-node\.js differs from the signed manifest; nothing was installed/);
    expect(current()).toBe(before);
  });

  it('uninstall --purge takes the trusted release keys install.sh added with the rest: no file is left', async () => {
    stopSupervisedDaemon();
    expect(filesUnder(join(home(), 'etc', 'release-keys'))).toEqual(['upgrade.pub.pem']);
    const purged = await swarmNode(['uninstall', '--purge', '--yes']);
    expect(purged.exitCode, purged.stderr).toBe(0);
    expect(filesUnder(root)).toEqual([]);
  });
});
