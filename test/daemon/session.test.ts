// swarm-node daemon and its credentials and service (issue 6 §2, §3): signed out, a refused token and an outage hold
// every agent with one log line each and are fixed without a restart (login; the service coming back); a token near
// its expiry is warned about in the log and in status; no secret ever reaches the log; one daemon per node.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startService, type RunningService } from '../../src/api/server.js';
import { readCredentials, writeCredentials } from '../../src/node/credentials.js';
import { MovableClock } from '../helpers/clock.js';
import { signIn } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { cli, DaemonProcess, expectExactlyOnce, localRuns, register, RequestLog, signedInNode, waitForTicksDone } from './support.js';

const OPS = 'agent_ops_monitor_004';
const DAY_MS = 86_400_000;

const clock = new MovableClock();
const requests = new RequestLog();
const service = useSvcApi({ clock, logger: { level: 'info', stream: requests } });

describe('swarm-node daemon: credentials, outages, secrets', () => {
  it('holds every agent while signed out or refused, resumes on login without a restart, warns of a token near expiry', async () => {
    const email = uniqueEmail('session');
    // Issued 25 days ago by the service's clock: it expires in 5 days.
    clock.advance(-25 * DAY_MS);
    const expiring = await signIn(service.baseUrl, email);
    clock.advance(25 * DAY_MS);
    const node = await signedInNode(service.baseUrl, { email, token: expiring, fundCents: 100 });
    await register(node, OPS, '--every', '1s');
    expect((await cli(node, ['logout'])).exitCode).toBe(0);
    const executesBefore = requests.executes();

    const daemon = DaemonProcess.start(node);
    await daemon.waitForEvent('paused_all', (event) => event.reason === 'not_signed_in');
    const held = await cli(node, ['--json', 'status']);
    expect(held.json.daemon).toMatchObject({ running: true, paused: { reason: 'not_signed_in', since: expect.any(String) } });
    expect(held.json.problems).toContain('the daemon holds every agent: not_signed_in');

    // A token the service refuses (bad signature): one probe, every agent held, execute never called.
    const file = join(node.home, 'etc', 'credentials.json');
    const forged = `${expiring.slice(0, -6)}AAAAAA`;
    writeCredentials(file, { ...readCredentials(file), jwt: { token: forged, sub: email, tier: 'svc_starter_agents', exp: Math.floor(Date.now() / 1000) + 30 * 86_400, stored_at: new Date().toISOString() } });
    await daemon.waitForEvent('paused_all', (event) => event.reason === 'token_rejected');
    // OPS is due all along: several ticks on, none of them has started a run.
    await waitForTicksDone(node, 3);
    expect(localRuns(node)).toEqual([]);
    expect(requests.executes()).toBe(executesBefore);

    // swarm-node login fixes it while the daemon runs.
    expect((await cli(node, ['login', '--token-stdin'], `${expiring}\n`)).exitCode).toBe(0);
    await daemon.waitForEvent('resumed_all', (event) => event.after === 'token_rejected');
    await daemon.waitForEvent('run_succeeded');
    const warnings = daemon.events('token_expiring');
    expect(warnings).toEqual([expect.objectContaining({ level: 'warn', days_left: '5', remedy: 'swarm-node login' })]);
    expect(daemon.events('paused_all').map((event) => event.reason)).toEqual(['not_signed_in', 'token_rejected']);

    const status = await cli(node, ['--json', 'status']);
    expect(status.json.token).toMatchObject({ expiring_soon: true, days_left: 5, valid: true });
    expect(status.json.problems).toContain('the stored token expires in 5 day(s); sign in again soon');
    expect(status.json.daemon).toMatchObject({ running: true, paused: null });
    expect(await daemon.stop()).toBe(0);

    for (const secret of [expiring, forged, expiring.split('.')[2]!, forged.split('.')[2]!]) {
      expect(daemon.output).not.toContain(secret);
      expect(daemon.stderr).not.toContain(secret);
    }
    expectExactlyOnce(service.db, node);
  });

  it('logs an outage once, keeps the journal, and when the service is back settles first, then runs again', async () => {
    const dataDir = tempDir('svc-api-outage-');
    let outageService: RunningService = await startService({ dataDir, sandbox: true, env: {} });
    const port = Number(new URL(outageService.baseUrl).port);
    try {
      const node = await signedInNode(outageService.baseUrl, { fundCents: 200, label: 'outage' });
      await register(node, OPS, '--every', '1s');
      const daemon = DaemonProcess.start(node);
      await daemon.waitForEvent('run_succeeded');

      await outageService.close();
      await daemon.waitForEvent('paused_all', (event) => event.reason === 'service_unreachable', 10_000);
      // It probes again on its backoff (400 ms, then 800 ms): while the ticks go on, the outage is logged once.
      await waitForTicksDone(node, 2, Date.now() + 1_500);
      expect(daemon.events('paused_all')).toHaveLength(1);
      const runsDuringOutage = daemon.events('run_succeeded').length;

      outageService = await startService({ dataDir, sandbox: true, env: {}, port });
      await daemon.waitForEvent('resumed_all', (event) => event.after === 'service_unreachable', 10_000);
      await daemon.waitForCount('run_succeeded', runsDuringOutage + 2, 10_000);
      const events = daemon.events().map((event) => event.event);
      expect(events.indexOf('service_ready', events.indexOf('resumed_all'))).toBeGreaterThan(-1);
      expect(await daemon.stop()).toBe(0);
      expect(daemon.output).not.toContain(node.token);
      expectExactlyOnce(outageService.db, node);
    } finally {
      await outageService.close();
    }
  });

  it('refuses a second daemon for the same node while the first one runs', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'single' });
    const first = DaemonProcess.start(node);
    await first.waitForEvent('daemon_started');
    const second = await cli(node, ['daemon', '--tick-ms', '100']);
    expect(second.exitCode).toBe(1);
    expect(second.stderr).toContain(`a swarm-node daemon is already running for this node (pid ${first.pid})`);
    expect(await first.stop('SIGINT')).toBe(0);
    const help = await cli(node, ['daemon', '--help']);
    expect(help.stdout).toContain('one line per event on stdout');
    expect(help.stdout).not.toMatch(/--tick-ms|--backoff-ms|--drain-ms/);
  });
});
