// `swarm-node upgrade` without systemd, of a daemon started by hand (docs/operations.md "Upgrade"): nobody would start
// it again after the switch, so upgrade restarts it itself, as it was started (its arguments, environment, working
// directory and output file), says so before it changes anything, and when the new release's daemon is not healthy
// starts the old one again the same way; `upgrade --rollback` does the same. A daemon that says a supervisor starts
// it (--supervised) and none does is not laid on the release. Installed with install.sh under a scratch root,
// releases published at a real svc-api; no supervisor anywhere.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDaemonRecord, type DaemonRecord } from '../../src/node/install/daemon-health.js';
import { processIsAlive } from '../../src/node/host/process-alive.js';
import { waitFor } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import {
  brokenPackage,
  buildRelease,
  healthyDaemonOf,
  installWithScript,
  publish,
  signingKey,
  type BuiltRelease,
} from './release-support.js';
import { homeOf, run } from './support.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
let v011: BuiltRelease;
let broken: BuiltRelease;
let root: string;
let daemonLog: string;
/** Where the daemon was started by hand from, and a variable only its environment holds. */
const startedIn = tempDir('by-hand-cwd-');
const MARK = 'SWARM_TEST_STARTED_BY=hand';

const home = () => homeOf(root);
const databaseFile = () => join(home(), 'var', 'swarm-node.db');
const swarmNode = (args: string[]) => run(join(root, 'usr/local/bin/swarm-node'), args, { timeoutMs: 120_000 });
const healthyDaemon = (since: number) => healthyDaemonOf(home(), since);
/** The command line of a running process, as /proc has it. */
const commandLine = (pid: number) =>
  readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((word) => word !== '');
const environment = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
/** A daemon started as the one of beforeAll was: the same arguments, environment and directory, of `version`. */
function expectStartedAsBefore(pid: number, version: string): void {
  expect(commandLine(pid)).toEqual([
    expect.any(String),
    join(home(), `releases/${version}/bin/swarm-node.js`),
    'daemon',
    '--tick-ms',
    '200',
  ]);
  expect(environment(pid)).toContain(MARK);
  expect(readlinkSync(`/proc/${pid}/cwd`)).toBe(startedIn);
}

/** `…/usr/local/bin/swarm-node daemon --tick-ms 200 [extra] >>daemon.log 2>&1 &`, as an operator would. */
async function startByHand(extra: string[] = []): Promise<DaemonRecord> {
  const since = Date.now();
  const out = openSync(daemonLog, 'a');
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', NO_COLOR: '1', [MARK.split('=')[0]!]: MARK.split('=')[1]! };
  spawn(join(root, 'usr/local/bin/swarm-node'), ['daemon', '--tick-ms', '200', ...extra], {
    cwd: startedIn,
    detached: true,
    stdio: ['ignore', out, out],
    env,
  }).unref();
  closeSync(out);
  return healthyDaemon(since);
}

beforeAll(async () => {
  const key = signingKey('by-hand');
  let v010: BuiltRelease;
  [v010, v011, broken] = await Promise.all([
    buildRelease(key, { version: '0.1.0' }),
    buildRelease(key, { version: '0.1.1' }),
    buildRelease(key, { version: '0.1.2', packageDir: brokenPackage() }),
  ]);
  publish(v010, releasesDir);
  root = tempDir('by-hand-root-');
  // Auto-update left on: a daemon started by hand turns it off itself (its exit 9 would leave no daemon).
  await installWithScript(service.baseUrl, v010, key, root);
  daemonLog = join(tempDir('by-hand-log-'), 'daemon.log');
  const record = await startByHand();
  expect(record.supervisor).toBe('none');
  await waitFor(
    async () => (/event=auto_update_off by="started by hand: /.test(readFileSync(daemonLog, 'utf8')) ? true : undefined),
    'auto_update_off in the log',
  );
}, 240_000);

afterAll(() => {
  // The daemon upgrade started (or the one started above): ended by its pid, as the test's own.
  const { pid } = readDaemonRecord(databaseFile());
  if (pid !== null && processIsAlive(pid)) process.kill(pid, 'SIGKILL');
});

describe('upgrade of a daemon started by hand, without systemd', { timeout: 120_000 }, () => {
  it('says first that it restarts the daemon as it was started, then does: the new release runs, with the same arguments, environment, directory and output file', async () => {
    const before = readDaemonRecord(databaseFile());
    publish(v011, releasesDir);
    // A dry run says it too, and the daemon stays as it is.
    const dry = await swarmNode(['upgrade', '--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    expect(dry.stderr).toContain(
      `the daemon (pid ${before.pid}) was started by hand, and no service manager starts it again: upgrade stops it and starts it as it was started`,
    );
    expect(readDaemonRecord(databaseFile()).pid).toBe(before.pid);
    expect(processIsAlive(before.pid!)).toBe(true);
    const result = await swarmNode(['upgrade', '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    // No service to start: upgrade started the daemon itself.
    expect(result.stderr).not.toContain('not starting the service');
    expect(result.stderr).toContain(
      `the daemon (pid ${before.pid}) was started by hand, and no service manager starts it again: upgrade stops it and starts it as it was started (swarm-node daemon --tick-ms 200), from the release switched to`,
    );
    // Said before anything changed: the first line of the switch comes after it.
    expect(result.stderr.indexOf('was started by hand')).toBeLessThan(result.stderr.indexOf('releases/0.1.1'));
    expect(result.json).toMatchObject({ version: '0.1.1', upgrade: { from_version: '0.1.0', health: { checked: true, healthy: true } } });

    const after = readDaemonRecord(databaseFile());
    expect(after.pid).not.toBe(before.pid);
    expect(processIsAlive(before.pid!)).toBe(false);
    expect(processIsAlive(after.pid!)).toBe(true);
    expectStartedAsBefore(after.pid!, '0.1.1');
    expect(after.supervisor).toBe('none');
    expect(readlinkSync(join(home(), 'current'))).toBe('releases/0.1.1');
    // Its output goes where the one started by hand wrote: the same file. (A release built with --version from one
    // package reports that package's own version: the pid tells the daemons apart.)
    await waitFor(
      async () => (new RegExp(`event=daemon_started pid=${after.pid} `).test(readFileSync(daemonLog, 'utf8')) ? true : undefined),
      "the new daemon's start in the same log",
    );
    const status = await swarmNode(['--json', 'status']);
    expect(status.json.daemon).toMatchObject({ running: true, pid: after.pid });
  });

  it('upgrade --rollback starts the daemon of the previous release as it was started', async () => {
    const before = readDaemonRecord(databaseFile());
    const since = Date.now();
    const result = await swarmNode(['upgrade', '--rollback', '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toContain(`the daemon (pid ${before.pid}) was started by hand`);
    expect(result.stderr).not.toContain('not restarting the service');
    const pid = (result.json as { daemon_started: { pid: number; output: string } }).daemon_started.pid;
    expect(result.json).toMatchObject({ from_version: '0.1.1', to_version: '0.1.0', daemon_started: { pid, output: daemonLog } });
    expect(processIsAlive(before.pid!)).toBe(false);
    expect((await healthyDaemon(since)).pid).toBe(pid);
    expectStartedAsBefore(pid, '0.1.0');
  });

  it('a release whose daemon does not come up: rolled back, and the old daemon started again as before', async () => {
    const since = Date.now();
    publish(broken, releasesDir);
    const result = await swarmNode(['upgrade', '--health-timeout', '5']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/swarm-node 0\.1\.2's daemon did not start healthy within 5 s; rolled back to 0\.1\.0/);
    const pid = Number(/The node runs 0\.1\.0 again: its daemon started as before \(pid (\d+)\)/.exec(result.stderr)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(result.stderr).toContain(`See why the new one failed: ${daemonLog}.`);
    expect(readFileSync(daemonLog, 'utf8')).toContain('this release is broken on purpose');
    const record = await healthyDaemon(since);
    expect(record.pid).toBe(pid);
    expectStartedAsBefore(pid, '0.1.0');
  });

  it('a daemon that says a supervisor starts it (--supervised), and none does: the error says so, not only that the release failed', async () => {
    const { pid } = await healthyDaemon(0);
    process.kill(pid!, 'SIGTERM');
    await waitFor(async () => (processIsAlive(pid!) ? undefined : true), 'the daemon started by hand to stop');
    publish(v011, releasesDir);
    expect((await startByHand(['--supervised'])).supervisor).toBe('declared');
    // 0.1.1, which ran healthy above: only the missing supervisor can keep its daemon from starting.
    const result = await swarmNode(['upgrade', '--to', '0.1.1', '--health-timeout', '3']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).not.toContain('was started by hand');
    expect(result.stderr).toMatch(/stopping the daemon \(pid \d+\) so that its supervisor starts the new release/);
    expect(result.stderr).toContain(
      'current is 0.1.0 again. No daemon of 0.1.1 recorded a start, and none runs now: its supervisor did not start one',
    );
    expect(result.stderr).not.toContain('See why the new one failed');
  });
});
