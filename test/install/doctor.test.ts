// docs/operations.md "Doctor": `swarm-node doctor` on a node installed under a scratch root, run through the
// installed binary.
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openNodeStore } from '../../src/node/store/database.js';
import { MovableClock } from '../helpers/clock.js';
import { activatedSession, signIn } from '../helpers/funnel.js';
import { startSvcApi, useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { signedInNode } from '../cli/fixtures.js';
import { homeOf, run, swarmNode } from './support.js';
import { runAsPrintedUntil } from '../cli/remedy-runner.js';
import { waitFor } from '../helpers/wait.js';
import { startHttpFaultProxy } from '../helpers/http-fault-proxy.js';
import { pathWithout } from '../helpers/path-without.js';

const DAY_MS = 24 * 60 * 60 * 1000;

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix?: string;
}

describe('swarm-node doctor', () => {
  const service = useSvcApi();
  let root: string;
  let home: string;

  beforeAll(async () => {
    root = tempDir('doctor-root-');
    home = homeOf(root);
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('doctor'));
    const installed = await swarmNode(['install', '--root', root], {
      env: { SVC_BASE_URL: service.baseUrl, SVC_DEPLOY_TOKEN: deploy_token },
    });
    expect(installed.exitCode, installed.stderr).toBe(0);
  });
  /** The installed binary finds its own root from where it lives. */
  const doctor = (args: string[] = [], env: Record<string, string> = {}) =>
    // The install's own link on the PATH, as install puts it there: its remedies name it bare.
    run(join(root, 'usr/local/bin/swarm-node'), ['doctor', ...args], {
      env: { PATH: `${join(root, 'usr/local/bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`, ...env },
    });
  const byName = (checks: Check[]) => Object.fromEntries(checks.map((check) => [check.name, check]));

  it('passes on a fresh install: every check listed, the missing access token only a warning', async () => {
    const result = await doctor(['--json']);
    expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    expect(result.json).toMatchObject({ root, home, ok: true });
    const checks = byName(result.json.checks);
    expect(Object.keys(checks)).toEqual([
      'layout',
      'modes',
      'unit',
      'node',
      'enrollment',
      'service',
      'clock',
      'token',
      'database',
      'isolation',
      'daemon',
      'online',
    ]);
    // A staged install (--root) runs nothing here: its daemon and the service's view of it are only warnings.
    expect(checks.daemon).toMatchObject({ status: 'warn', detail: 'not running: it never ran here (no database yet)' });
    expect(checks.daemon!.fix).toBeUndefined();
    // Nobody is signed in on it (enrolled with the deploy token): the service still answers the node's own credential.
    expect(checks.online).toMatchObject({
      status: 'warn',
      detail: expect.stringContaining('offline, never seen: its daemon never polled'),
    });
    expect(checks.online!.fix).toBeUndefined();
    for (const name of ['layout', 'modes', 'unit', 'node', 'enrollment', 'service', 'clock', 'database'])
      expect(checks[name]!.status, name).toBe('ok');
    // Root on a host without the agent socket: each run in a bubblewrap sandbox, and what it cannot hold said.
    expect(checks.isolation).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/^bubblewrap: each run in a sandbox of its own/),
    });
    // The base URL came from the installed config file, not from the environment.
    expect(checks.service!.detail).toContain(service.baseUrl);
    // The fix acts on this install's home when typed: it is not the host's.
    expect(checks.token).toMatchObject({ status: 'warn', fix: `SWARM_NODE_HOME=${home} swarm-node login` });
  });

  it("fails isolation at once as root where a run's state image cannot be made (no mkfs.ext4), naming the tool", async () => {
    // The node's probe makes and mounts a small image once (src/node/runner/state-image-probe.ts): without it every
    // run of bubblewrap's root mode would fail at its start.
    const result = await doctor(['--json'], { PATH: `${join(root, 'usr/local/bin')}:${pathWithout(['mkfs.ext4'])}` });
    expect(result.exitCode, result.stdout + result.stderr).toBe(1);
    expect(byName(result.json.error.checks).isolation).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('mkfs.ext4 is not installed (apt-get install e2fsprogs)'),
      fix: 'apt-get install e2fsprogs, on a host with loop devices',
    });
  });

  it('checks the database with PRAGMA integrity_check, and a valid access token', async () => {
    const db = openNodeStore(join(home, 'var', 'swarm-node.db'));
    db.close();
    const jwt = await signIn(service.baseUrl, uniqueEmail('doctor-jwt'));
    storeJwt(jwt);
    const result = await doctor(['--json']);
    expect(result.exitCode, result.stdout).toBe(0);
    const checks = byName(result.json.checks);
    expect(checks.database).toMatchObject({ status: 'ok', detail: expect.stringContaining('integrity_check ok') });
    expect(checks.token).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^valid until /) });
    expect(result.stdout).not.toContain(jwt);
  });

  function storeJwt(token: string): void {
    const path = join(home, 'etc', 'credentials.json');
    const credentials = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(path, JSON.stringify({ ...credentials, jwt: { token, sub: 'x', tier: 'svc_starter_agents', exp: 0, stored_at: 'x' } }));
  }

  it('fails each broken thing with the command that fixes it, and exits 1', async () => {
    const credentials = join(home, 'etc', 'credentials.json');
    const unit = join(root, 'etc/systemd/system/svc-swarm-node.service');
    const originalUnit = readFileSync(unit, 'utf8');
    chmodSync(credentials, 0o644);
    writeFileSync(unit, originalUnit.replace('ProtectHome=yes', 'ProtectHome=no'));
    corrupt(join(home, 'var', 'swarm-node.db'));

    try {
      const human = await doctor();
      expect(human.exitCode).toBe(1);
      expect(human.stdout).toMatch(/FAIL modes .*credentials\.json is 0644, should be 0600\n\s+fix: chmod 0600 .*credentials\.json/);
      expect(human.stdout).toMatch(new RegExp(`FAIL unit .*\\n\\s+fix: swarm-node install --root ${root}\n`));
      expect(human.stdout).toMatch(/FAIL database/);
      expect(human.stderr).toMatch(/error: 3 of 12 checks failed: modes, unit, database/);

      const json = await doctor(['--json']);
      expect(json.exitCode).toBe(1);
      // One JSON document: the error, carrying the checks.
      expect(json.json.error).toMatchObject({ code: 'failed' });
      const checks = byName(json.json.error.checks);
      expect(checks.modes).toMatchObject({ status: 'fail', fix: `chmod 0600 ${credentials}` });
      expect(checks.unit).toMatchObject({ status: 'fail', fix: `swarm-node install --root ${root}` });
      expect(checks.database).toMatchObject({ status: 'fail', fix: expect.stringMatching(/swarm-node\.db/) });

      // What install repairs, doctor then passes (the database is the operator's call, not install's).
      const repaired = await swarmNode(['install', '--root', root]);
      expect(repaired.exitCode, repaired.stderr).toBe(0);
      const after = byName((await doctor(['--json'])).json.error.checks);
      expect(after.modes!.status).toBe('ok');
      expect(after.unit!.status).toBe('ok');
      expect(after.database!.status).toBe('fail');
    } finally {
      chmodSync(credentials, 0o600);
      writeFileSync(unit, originalUnit);
      const { rmSync } = await import('node:fs');
      rmSync(join(home, 'var', 'swarm-node.db'), { force: true });
    }
  });

  /** Scribbles over the middle of a database with enough pages that SQLite notices. */
  function corrupt(path: string): void {
    const db = openNodeStore(path);
    db.exec('CREATE TABLE IF NOT EXISTS filler (n INTEGER, pad TEXT)');
    const insert = db.prepare('INSERT INTO filler VALUES (?, ?)');
    db.transaction(() => {
      for (let n = 0; n < 2000; n += 1) insert.run(n, 'x'.repeat(200));
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const size = statSync(path).size;
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(8192, 0xa5), 0, 8192, Math.floor(size / 2 / 4096) * 4096);
    closeSync(fd);
  }

  it('an expired access token fails with swarm-node login as the fix', async () => {
    const past = new MovableClock();
    past.advance(-31 * DAY_MS);
    const oldService = await startSvcApi({ clock: past });
    try {
      storeJwt(await signIn(oldService.baseUrl, uniqueEmail('doctor-old')));
    } finally {
      await oldService.close();
    }
    const result = await doctor(['--json']);
    expect(result.exitCode).toBe(1);
    expect(byName(result.json.error.checks).token).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/expired at/),
      fix: `SWARM_NODE_HOME=${home} swarm-node login`,
    });
  });

  it('a service that cannot be reached fails with how to check it', async () => {
    const result = await doctor(['--json', '--base-url', 'http://127.0.0.1:1']);
    expect(result.exitCode).toBe(1);
    const checks = byName(result.json.error.checks);
    expect(checks.service).toMatchObject({ status: 'fail', fix: expect.stringContaining('curl -sS http://127.0.0.1:1/v1/swarm/agents') });
  });

  it('a clock five minutes away from the service fails with timedatectl as the fix', async () => {
    // A peer whose Date header is five minutes ahead: the service's clock, as this host sees it. The header has whole
    // seconds and the request takes its time, so doctor may see a second or so more or less.
    const peer: Server = createServer((_request, response) => {
      response.sendDate = false;
      response.writeHead(200, { 'content-type': 'application/json', date: new Date(Date.now() + 5 * 60 * 1000).toUTCString() });
      response.end('[]');
    });
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = peer.address() as AddressInfo;
      const result = await doctor(['--json', '--base-url', `http://127.0.0.1:${port}`]);
      const checks = byName(result.json.error.checks);
      expect(checks.service!.status).toBe('ok');
      expect(checks.clock).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(/ (29[5-9]|30[0-5]) s away/),
        fix: 'timedatectl set-ntp true',
      });
    } finally {
      await new Promise((resolve) => peer.close(resolve));
    }
  });

  it('honours SWARM_NODE_HOME: a node run from a home of its own is checked there, the install checks left out', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'doctor-home' });
    const result = await swarmNode(['--json', 'doctor'], { env: node.env });
    // Its daemon never ran, so the service never saw it: both fail, with the command that starts it as printed.
    expect(result.exitCode, result.stdout + result.stderr).toBe(1);
    expect(result.json.error).toMatchObject({ home: node.home, message: '2 of 10 checks failed: daemon, online' });
    const checks = byName(result.json.error.checks);
    expect(Object.keys(checks)).toEqual([
      'layout',
      'modes',
      'enrollment',
      'service',
      'clock',
      'token',
      'database',
      'isolation',
      'daemon',
      'online',
    ]);
    const start = `SWARM_NODE_HOME=${node.home} swarm-node daemon --base-url ${service.baseUrl}`;
    expect(checks.daemon).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^not running: it never ran here/), fix: start });
    expect(checks.online).toMatchObject({ status: 'fail', detail: expect.stringContaining('offline, never seen'), fix: start });
    expect(checks.layout!.detail).toContain(`${node.home}: a node home (SWARM_NODE_HOME), not an install`);
    expect(checks.enrollment).toMatchObject({ status: 'ok', detail: expect.stringContaining(`of ${node.email}`) });
    expect(checks.token!.status).toBe('ok');

    // The fix, typed as printed in another shell: while that daemon runs, both checks pass and doctor exits 0.
    await runAsPrintedUntil(start, /event=daemon_started/, async () => {
      const passed = await waitFor(
        async () => {
          const again = await swarmNode(['--json', 'doctor'], { env: node.env });
          return again.exitCode === 0 ? again : undefined;
        },
        'doctor passing while the daemon runs',
        30_000,
      );
      const now = byName(passed.json.checks);
      expect(now.daemon).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^running \(pid \d+/) });
      expect(now.online).toMatchObject({ status: 'ok', detail: expect.stringMatching(/online \(last seen \d{4}-/) });
    });

    // Not enrolled: the fix is the home's enroll, as typed there.
    const bare = await signedInNode(service.baseUrl, { label: 'doctor-bare', enroll: false });
    const unenrolled = await swarmNode(['--json', 'doctor'], { env: bare.env });
    expect(unenrolled.exitCode).toBe(1);
    expect(byName(unenrolled.json.error.checks).enrollment).toMatchObject({
      status: 'fail',
      fix: `SWARM_NODE_HOME=${bare.home} swarm-node enroll --base-url ${service.baseUrl}`,
    });
  });

  it('asks the service about the node with its own credential: no sign-in stored, it still answers, offline then online', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'doctor-unsigned' });
    const credentialsFile = join(node.home, 'etc', 'credentials.json');
    const { jwt: _signedIn, ...unsigned } = JSON.parse(readFileSync(credentialsFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(credentialsFile, JSON.stringify(unsigned), { mode: 0o600 });
    const nodeId = (unsigned.node as { node_id: string }).node_id;
    const result = await swarmNode(['--json', 'doctor'], { env: node.env });
    expect(result.exitCode, result.stdout + result.stderr).toBe(1);
    const checks = byName(result.json.error.checks);
    expect(checks.token!.status).toBe('warn');
    const start = `SWARM_NODE_HOME=${node.home} swarm-node daemon --base-url ${service.baseUrl}`;
    expect(checks.online).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining(`node ${nodeId} offline, never seen: its daemon never polled`),
      fix: start,
    });

    // The fix as printed: once its daemon polled, the service sees it online, still with nobody signed in.
    await runAsPrintedUntil(start, /event=daemon_started/, async () => {
      const online = await waitFor(
        async () => {
          const again = byName((await swarmNode(['--json', 'doctor'], { env: node.env })).json.checks ?? []);
          return again.online?.status === 'ok' ? again.online : undefined;
        },
        'doctor seeing the node online while its daemon runs',
        30_000,
      );
      expect(online.detail).toMatch(/online \(last seen \d{4}-/);
    });

    // A service from before GET /v1/swarm/nodes/self (404): asked as before, with the user's sign-in, which is not here.
    const old = await startHttpFaultProxy(service.baseUrl);
    try {
      old.fail(/^\/v1\/swarm\/nodes\/self(\?|$)/, 404);
      const before = await swarmNode(['--json', 'doctor', '--base-url', old.baseUrl], { env: node.env });
      const asked = byName((before.json.error ?? before.json).checks);
      expect(old.refused).toBeGreaterThan(0);
      expect(asked.online).toMatchObject({
        status: 'warn',
        detail: expect.stringContaining('no sign-in stored'),
        fix: expect.stringContaining('login'),
      });
      // Signed in again: that service's fleet answers, the daemon stopped since (offline, last seen then).
      writeFileSync(credentialsFile, JSON.stringify({ ...unsigned, jwt: _signedIn }), { mode: 0o600 });
      const fleet = await swarmNode(['--json', 'doctor', '--base-url', old.baseUrl], { env: node.env });
      expect(byName(fleet.json.error.checks).online).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(/offline \(last seen \d{4}-.*; it hands the node no runs$/),
      });
    } finally {
      await old.close();
    }
  });

  it('honours SWARM_NODE_HOME naming an install: the install under that root is checked', async () => {
    const result = await swarmNode(['--json', 'doctor'], { env: { SWARM_NODE_HOME: home } });
    const report = result.json.error ?? result.json;
    expect(report).toMatchObject({ root, home });
    expect(byName(report.checks).layout).toMatchObject({ status: 'ok', detail: expect.stringContaining('current -> releases/') });
  });

  it('a root with nothing installed fails layout and enrollment, pointing at install', async () => {
    const empty = tempDir('doctor-empty-');
    const result = await swarmNode(['doctor', '--root', empty, '--json'], { env: { SVC_BASE_URL: service.baseUrl } });
    expect(result.exitCode).toBe(1);
    const checks = byName(result.json.error.checks);
    // Each fix as typed here: the staging root and the service in force carried.
    expect(checks.layout).toMatchObject({ status: 'fail', fix: `swarm-node install --root ${empty} --base-url ${service.baseUrl}` });
    expect(checks.enrollment).toMatchObject({ status: 'fail', fix: `swarm-node install --root ${empty} --base-url ${service.baseUrl}` });
  });
});
