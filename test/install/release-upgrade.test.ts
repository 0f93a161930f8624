// docs/operations.md "Upgrade": `swarm-node upgrade` fetches the newest release from the service with the node
// credential, verifies it against the keys it trusts, switches, restarts the daemon, and rolls back by itself when
// the new daemon does not come up healthy; `--check` says whether there is one; `--from FILE` upgrades offline.
// There is no systemd here: the daemon runs under a supervisor loop (what systemd's Restart= does), and upgrade
// restarts it by SIGTERM.
// The releases a daemon runs on are built with the runtime a release ships, so the daemon runs on it (not on the
// Node that runs the tests); the broken and tampered ones, which never run for long, without (well under a second).
// Auto-update (docs/operations.md "Auto-update") is tested here too, on the same node and service: the supervisor
// loop then runs `swarm-node upgrade --pending` before each daemon start, as the unit's ExecStartPre does.
import { spawn, type ChildProcess } from 'node:child_process';
import { createPrivateKey, sign } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDaemonRecord, startedHealthy } from '../../src/node/install/daemon-health.js';
import { processIsAlive } from '../../src/node/host/process-alive.js';
import { activatedSession, waitFor } from '../helpers/funnel.js';
import { fetchUpstream, startInterposer } from '../helpers/interposer.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import {
  brokenPackage,
  buildRelease,
  healthyDaemonOf,
  publish,
  signingKey,
  type BuiltRelease,
  type SigningKey,
} from './release-support.js';
import { filesUnder, homeOf, run, writeTokenFile } from './support.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
let key: SigningKey;
let v010: BuiltRelease;
let v011: BuiltRelease;
let broken: BuiltRelease;
let tampered: BuiltRelease;
let v015: BuiltRelease;
let broken016: BuiltRelease;
let root: string;
let supervisor: ChildProcess | undefined;

const home = () => homeOf(root);
const current = () => readlinkSync(join(home(), 'current'));
// The node's own config names the service (install wrote it); nothing here overrides it.
const swarmNode = (args: string[]) => run(join(home(), 'current', 'bin', 'swarm-node'), args, { timeoutMs: 120_000 });
const healthyDaemon = (since: number) => healthyDaemonOf(home(), since);

beforeAll(async () => {
  key = signingKey('upgrade');
  const brokenDir = brokenPackage();
  [v010, v011, broken, tampered, v015, broken016] = await Promise.all([
    buildRelease(key, { version: '0.1.0', runtime: true }),
    buildRelease(key, { version: '0.1.1', runtime: true }),
    buildRelease(key, { version: '0.1.2', packageDir: brokenDir }),
    buildRelease(key, { version: '0.1.4' }),
    buildRelease(key, { version: '0.1.5', runtime: true }),
    buildRelease(key, { version: '0.1.6', packageDir: brokenDir }),
  ]);
  publish(v010, releasesDir);
  root = tempDir('upgrade-root-');
  const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('upgrade'));
  const installSh = new URL('../../scripts/install.sh', import.meta.url).pathname;
  const installed = await run('sh', [
    installSh,
    '--base-url',
    service.baseUrl,
    '--root',
    root,
    '--artifact',
    v010.artifact.path,
    '--trust-key',
    key.publicFile,
    '--token-file',
    writeTokenFile(deploy_token),
    '--no-autoupdate',
  ]);
  expect(installed.exitCode, installed.stderr).toBe(0);
  // What systemd's Restart= would do: start the daemon of whatever `current` is, again whenever it exits.
  // --supervised: this loop starts it again, and upgrade leaves that to it.
  supervisor = spawn(
    'sh',
    ['-c', `while :; do "${join(home(), 'current/bin/swarm-node')}" daemon --supervised >/dev/null 2>&1; sleep 0.2; done`],
    { detached: true, stdio: 'ignore' },
  );
  await healthyDaemon(0);
  expect(daemonExecutable()).toBe(join(home(), 'releases/0.1.0/runtime/bin/node'));
}, 240_000);

/** The program the running daemon is: the release's own runtime, not the Node that runs the tests. */
const daemonExecutable = () => readlinkSync(`/proc/${readDaemonRecord(join(home(), 'var', 'swarm-node.db')).pid}/exe`);

/** Ends the supervisor loop and the daemon it started (both ours: started above or by superviseAutoUpdating). */
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
    // Exit 12 (update_available): a cron job tells the two answers apart without parsing them.
    expect(some.exitCode, some.stderr).toBe(12);
    expect(some.stdout).toMatch(/swarm-node 0\.1\.1 is available \(this node runs 0\.1\.0\)/);
    const someJson = await swarmNode(['upgrade', '--check', '--json']);
    expect(someJson.exitCode).toBe(12);
    expect(someJson.json).toEqual({ current_version: '0.1.0', latest_version: '0.1.1', update_available: true });
  });

  it('a service whose newest release lacks a field it needs: the field and the service named, exit 1, nothing downloaded', async () => {
    const lacking = await startInterposer(service.baseUrl, async (req, res) => {
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/v1/swarm/releases/latest') return false;
      const { manifest_url: _dropped, ...latest } = (await (await fetchUpstream(service.baseUrl, req)).json()) as Record<string, unknown>;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(latest));
      return true;
    });
    try {
      const before = current();
      const refused = await swarmNode(['upgrade', '--base-url', lacking.url, '--json']);
      expect(refused.exitCode, refused.stdout).toBe(1);
      expect(refused.json.error).toMatchObject({ code: 'failed' });
      expect(refused.json.error.message).toContain(
        `the service at ${lacking.url} answered the newest release without a usable manifest_url`,
      );
      expect(refused.json.error.message).not.toMatch(/report it/);
      expect(current()).toBe(before);
    } finally {
      await lacking.close();
    }
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
    expect(daemonExecutable()).toBe(join(home(), 'releases/0.1.1/runtime/bin/node'));

    const again = await swarmNode(['upgrade']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/0\.1\.1 is the newest release; nothing to upgrade/);
  });

  it("rolls back by itself when the new release's daemon does not come up within the bound", async () => {
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
    const unsigned = await buildRelease(stranger, { version: '0.1.3', runtime: true });
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
    // 0.1.1 is older than the installed 0.1.3: --to names it, so the check that follows is the unpacking's.
    const result = await swarmNode(['upgrade', '--from', join(dir, basename(v011.artifact.path)), '--to', '0.1.1']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/bin\/swarm-node\.js differs from the signed manifest; nothing was installed/);
    expect(current()).toBe(before);
  });

  describe('auto-update: the daemon checks, stages, restarts into the new release, and rolls back a broken one', () => {
    const daemonLog = join(tempDir('auto-update-log-'), 'daemon.log');
    const flagsFile = join(tempDir('auto-update-flags-'), 'flags');
    const logText = () => (existsSync(daemonLog) ? readFileSync(daemonLog, 'utf8') : '');
    /** Waits for a log line matching `pattern` written after `from` (an offset in the log). */
    const logLine = (pattern: RegExp, from: number, what: string) =>
      waitFor(
        async () =>
          logText()
            .slice(from)
            .split('\n')
            .find((line) => pattern.test(line)),
        what,
        60_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; the daemon's log since:\n${logText().slice(from).slice(-3000)}`);
      });
    const databaseFile = () => join(home(), 'var', 'swarm-node.db');
    /** The daemon of the supervisor started after `since` and has ticked `ms` past its start. */
    const tickedFor = (since: number, ms: number) =>
      waitFor(
        async () => {
          const record = readDaemonRecord(databaseFile());
          return startedHealthy(record, since) && record.lastTickAt! - record.startedAt! >= ms ? record : undefined;
        },
        `a daemon ticking for ${ms} ms`,
        60_000,
      );
    /** A new daemon with the flags now in flagsFile: the running one is stopped, its supervisor starts the next. */
    const restartDaemon = async (flags: string) => {
      writeFileSync(flagsFile, flags);
      const record = readDaemonRecord(databaseFile());
      const since = Date.now();
      if (record.pid !== null) process.kill(record.pid, 'SIGTERM');
      await healthyDaemon(since);
      return since;
    };

    let supervisedSince = 0;

    beforeAll(async () => {
      // The supervisor of the tests above, replaced by one that runs the unit's ExecStartPre first, once its daemon
      // is gone (a new one refuses to start beside it).
      const old = readDaemonRecord(databaseFile()).pid;
      stopSupervisedDaemon();
      await waitFor(async () => (old === null || !processIsAlive(old) ? true : undefined), 'the daemon of the tests above to end');
      writeFileSync(flagsFile, '--no-autoupdate --autoupdate-check-ms 100 --tick-ms 100');
      const bin = join(home(), 'current/bin/swarm-node');
      const since = (supervisedSince = Date.now());
      supervisor = spawn(
        'sh',
        [
          '-c',
          `while :; do "${bin}" upgrade --pending >>"${daemonLog}.pre" 2>&1; "${bin}" daemon --supervised $(cat "${flagsFile}") >>"${daemonLog}" 2>&1; sleep 0.2; done`,
        ],
        { detached: true, stdio: 'ignore' },
      );
      await healthyDaemon(since);
    });

    it('makes no check at all with --no-autoupdate, nor with auto_update false in the config (install.sh --no-autoupdate)', async () => {
      // With a check every 100 ms and releases published, a daemon that checked would have said so within 0.6 s.
      // The line comes as the daemon starts its update loop, which its first tick's record may precede: waited for.
      await logLine(/event=auto_update_off by=--no-autoupdate/, 0, 'auto_update_off by the flag');
      await tickedFor(supervisedSince, 600);
      expect(logText()).not.toMatch(/event=(up_to_date|update_available|update_failed|update_staged)/);

      // install.sh --no-autoupdate wrote it into the config and the unit (whose ExecStart this supervisor stands for).
      expect(JSON.parse(readFileSync(join(home(), 'etc', 'config.json'), 'utf8'))).toMatchObject({ auto_update: 'false' });
      expect(readFileSync(join(root, 'etc/systemd/system/svc-swarm-node.service'), 'utf8')).toMatch(
        /^ExecStart=\S+\/swarm-node daemon --no-autoupdate$/m,
      );
      const from = logText().length;
      const restarted = await restartDaemon('--autoupdate-check-ms 100 --tick-ms 100');
      await logLine(/event=auto_update_off by="config auto_update"/, from, 'auto_update_off by the config');
      await tickedFor(restarted, 600);
      expect(logText().slice(from)).not.toMatch(/event=(up_to_date|update_available|update_failed|update_staged)/);
    });

    it('refuses a newer release that fails verification: nothing switched, the daemon runs on and says why', async () => {
      const set = await swarmNode(['config', 'set', 'auto_update', 'on']);
      expect(set.exitCode, set.stderr).toBe(0);
      // A newer release whose tarball was altered after signing (one byte): its SHA-256 is not the manifest's.
      const bytes = readFileSync(tampered.artifact.path);
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 100) ^ 0xff, bytes.length - 100);
      writeFileSync(tampered.artifact.path, bytes);
      publish(tampered, releasesDir);
      const before = current();
      const from = logText().length;
      await restartDaemon('--autoupdate-check-ms 100 --tick-ms 100');
      const failed = await logLine(/event=update_failed/, from, 'update_failed');
      expect(failed).toMatch(
        /latest=0\.1\.4 error="the artifact's SHA-256 is [0-9a-f]{64}, the signed manifest says [0-9a-f]{64}: it was altered or damaged" note="nothing switched; this version runs on"/,
      );
      const pid = readDaemonRecord(databaseFile()).pid;
      // The next check fails the same way, from the same daemon: it neither stopped nor switched.
      await logLine(/event=update_failed/, logText().length, 'a second update_failed');
      expect(readDaemonRecord(databaseFile()).pid).toBe(pid);
      expect(current()).toBe(before);
      // Nothing staged: the check's own time is all it keeps.
      expect(filesUnder(join(home(), 'var', 'updates'))).toEqual(['checked.json']);
    });

    it('notices a newer release, verifies and stages it, restarts, and a daemon of the new version runs', async () => {
      const from = logText().length;
      const started = Date.now();
      publish(v015, releasesDir);
      await logLine(/event=update_staged version=0\.1\.3 latest=0\.1\.5 signed_by=[0-9a-f]{16}/, from, 'update_staged');
      const updated = await logLine(/event=updated /, from, 'updated');
      process.stdout.write(
        `auto-update 0.1.3 -> 0.1.5, from publishing to the new daemon's first tick: ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
      );
      expect(updated).toMatch(/from_version=0\.1\.3 to_version=0\.1\.5/);
      expect(readFileSync(`${daemonLog}.pre`, 'utf8')).toMatch(/switched to the staged swarm-node 0\.1\.5 \(was 0\.1\.3\)/);
      expect(current()).toBe('releases/0.1.5');
      expect(readlinkSync(join(home(), 'previous'))).toBe('releases/0.1.3');
      expect(daemonExecutable()).toBe(join(home(), 'releases/0.1.5/runtime/bin/node'));
      await logLine(/event=up_to_date version=0\.1\.5 latest=0\.1\.5/, from, 'up_to_date after the update');
      // 0.1.5 was built from this checkout (0.1.0) with --version: it is 0.1.5 everywhere, and never its own update.
      expect((await swarmNode(['--version'])).stdout.trim()).toBe('0.1.5');
      const status = await swarmNode(['status', '--json']);
      expect((JSON.parse(status.stdout) as { daemon: { version: string } }).daemon.version).toBe('0.1.5');
      const checked = logText().length;
      await logLine(/event=up_to_date version=0\.1\.5 latest=0\.1\.5/, checked, 'a second up_to_date');
      expect(logText().slice(from)).not.toMatch(/event=update_(available|staged) version=0\.1\.5 latest=0\.1\.5/);
    });

    it('rolls back by itself a release whose daemon stops before its first tick, and does not take it again', async () => {
      const from = logText().length;
      publish(broken016, releasesDir);
      await logLine(/event=update_staged version=0\.1\.5 latest=0\.1\.6/, from, 'update_staged of the broken release');
      const failed = await logLine(/event=update_failed version=0\.1\.6/, from, 'update_failed after the rollback');
      expect(failed).toMatch(/the daemon of 0\.1\.6 stopped before it was healthy \(its first tick\)/);
      expect(current()).toBe('releases/0.1.5');
      await logLine(
        /event=up_to_date version=0\.1\.5 latest=0\.1\.6 note="0\.1\.6 was rolled back here before/,
        from,
        'the broken release declined',
      );
    });
  });

  it('uninstall --purge takes the trusted release keys install.sh added with the rest: no file is left', async () => {
    stopSupervisedDaemon();
    expect(filesUnder(join(home(), 'etc', 'release-keys'))).toEqual(['upgrade.pub.pem']);
    const purged = await swarmNode(['uninstall', '--purge', '--yes']);
    expect(purged.exitCode, purged.stderr).toBe(0);
    expect(filesUnder(root)).toEqual([]);
  });
});
