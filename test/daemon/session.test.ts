// swarm-node daemon and its node credential and service (docs/operations.md "Logs"): not enrolled, a refused
// credential and an outage hold every run with one log line each and are fixed without a restart (enroll, the
// right credential, the service coming back); a rotated credential is picked up while runs go on, and the old one
// is refused; the user's JWT is no part of it (logout stops nothing); no secret ever reaches the log; one daemon per
// node.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { TestService } from '../helpers/svc-api.js';
import { readCredentials, writeCredentials } from '../../src/node/identity/credentials.js';
import { randomBytes } from 'node:crypto';
import { signInPaid, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { startSvcApi, useSvcApi } from '../helpers/svc-api.js';
import { TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { tempDir } from '../helpers/temp.js';
import { agentEvents, releaseAgents } from './agents.js';
import {
  cli,
  DaemonProcess,
  executeOverHttp,
  expectChargedForNodeResults,
  register,
  RequestLog,
  signedInNode,
  waitForTicksDone,
  waitUntilServing,
} from './support.js';

const OPS = 'agent_ops_monitor_004';
const SALES = 'agent_sales_outreach_008';
const RAG = 'agent_research_rag_015';

const requests = new RequestLog();
const service = useSvcApi({ logger: { level: 'info', stream: requests } });

function polls(): number {
  return requests.entries.filter((entry) => entry.route === '/v1/swarm/nodes/poll').length;
}

describe('swarm-node daemon: credentials, outages, secrets', () => {
  it('holds every agent while not enrolled or refused, never calling execute with a refused credential; enroll and the right credential resume it without a restart', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'enroll', enroll: false });
    const daemon = DaemonProcess.start(node);
    await daemon.waitForEvent('paused_all', (event) => event.reason === 'not_enrolled');
    const held = await cli(node, ['--json', 'status']);
    expect(held.json.daemon).toMatchObject({ running: true, paused: { reason: 'not_enrolled', since: expect.any(String) } });
    expect(held.json.problems).toContain('the daemon holds every agent: not_enrolled');

    // Enrolled while the daemon runs: checked with the service, then it works.
    expect((await cli(node, ['enroll'])).exitCode).toBe(0);
    await daemon.waitForEvent('resumed_all', (event) => event.after === 'not_enrolled');
    await register(node, OPS);
    await waitUntilServing(service.baseUrl, node, OPS);
    expect((await executeOverHttp(service.baseUrl, node, OPS)).body).toMatchObject({ status: 'succeeded' });
    await daemon.waitForEvent('run_succeeded');

    // A credential the service does not know: the daemon asks the service before it uses it (one probe), then holds.
    const file = join(node.home, 'etc', 'credentials.json');
    const enrolled = readCredentials(file);
    const forged = randomBytes(32).toString('base64url');
    writeCredentials(file, { ...enrolled, node: { ...enrolled.node!, credential: forged } });
    await daemon.waitForEvent('paused_all', (event) => event.reason === 'credential_rejected');
    const pollsWhileHeld = polls();
    // Several ticks on, nothing asked the service for work with the refused credential.
    await waitForTicksDone(node, 3, Date.now() + 1_000);
    expect(polls()).toBe(pollsWhileHeld);
    expect((await cli(node, ['--json', 'status'])).json.daemon.paused).toMatchObject({ reason: 'credential_rejected' });

    // The right credential back: picked up at once, no restart.
    writeCredentials(file, enrolled);
    await daemon.waitForEvent('resumed_all', (event) => event.after === 'credential_rejected');
    await waitUntilServing(service.baseUrl, node, OPS);
    expect((await executeOverHttp(service.baseUrl, node, OPS)).body).toMatchObject({ status: 'succeeded' });
    await daemon.waitForCount('run_succeeded', 2);
    expect(daemon.events('paused_all').map((event) => event.reason)).toEqual(['not_enrolled', 'credential_rejected']);
    expect((await cli(node, ['--json', 'status'])).json.daemon).toMatchObject({ running: true, paused: null });
    expect(await daemon.stop()).toBe(0);

    for (const secret of [forged, enrolled.node!.credential!, node.token]) {
      expect(daemon.output).not.toContain(secret);
      expect(daemon.stderr).not.toContain(secret);
    }
    expectChargedForNodeResults(service.db, node.email);
  });

  it('logs an outage once, and when the service is back settles first, then runs again', async () => {
    const dataDir = tempDir('svc-api-outage-');
    let outageService: TestService = await startSvcApi({ dataDir });
    const port = Number(new URL(outageService.baseUrl).port);
    try {
      const node = await signedInNode(outageService.baseUrl, { fundCents: 200, label: 'outage' });
      await register(node, OPS);
      const daemon = DaemonProcess.start(node);
      await waitUntilServing(outageService.baseUrl, node, OPS);
      expect((await executeOverHttp(outageService.baseUrl, node, OPS)).body).toMatchObject({ status: 'succeeded' });
      await daemon.waitForEvent('run_succeeded');

      await outageService.close();
      await daemon.waitForEvent('paused_all', (event) => event.reason === 'service_unreachable', 10_000);
      // It probes again on its backoff (400 ms, then 800 ms): while the ticks go on, the outage is logged once.
      await waitForTicksDone(node, 2, Date.now() + 1_500);
      expect(daemon.events('paused_all')).toHaveLength(1);
      const runsDuringOutage = daemon.events('run_succeeded').length;

      outageService = await startSvcApi({ dataDir, port });
      await daemon.waitForEvent('resumed_all', (event) => event.after === 'service_unreachable', 10_000);
      await waitUntilServing(outageService.baseUrl, node, OPS);
      expect((await executeOverHttp(outageService.baseUrl, node, OPS)).body).toMatchObject({ status: 'succeeded' });
      await daemon.waitForCount('run_succeeded', runsDuringOutage + 1, 10_000);
      const events = daemon.events().map((event) => event.event);
      expect(events.indexOf('service_ready', events.indexOf('resumed_all'))).toBeGreaterThan(-1);
      expect(await daemon.stop()).toBe(0);
      expect(daemon.output).not.toContain(node.token);
      expectChargedForNodeResults(outageService.db, node.email);
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

describe('swarm-node daemon: credential rotation (short leases)', () => {
  const shortLeases = useSvcApi({ runTiming: TEST_RUN_TIMING });

  function leaseExpiresAt(runId: string): number {
    return (
      shortLeases.db.prepare<[string], { lease_expires_at: number | null }>('SELECT lease_expires_at FROM runs WHERE run_id = ?').get(runId)
        ?.lease_expires_at ?? 0
    );
  }

  it('picks up a rotated credential without a restart: runs in flight keep their lease and report, the old one is refused (401); logout stops nothing', async () => {
    const node = await signedInNode(shortLeases.baseUrl, { fundCents: 200, label: 'rotate', agents: { [SALES]: 'held', [RAG]: 'held' } });
    await register(node, RAG);
    await register(node, SALES);
    await register(node, OPS);
    const file = join(node.home, 'etc', 'credentials.json');
    const old = readCredentials(file).node!.credential!;
    const daemon = DaemonProcess.start(node);
    await waitUntilServing(shortLeases.baseUrl, node, SALES);
    // In flight across the rotation: two runs started over HTTP, in the daemon's two slots.
    const started = await executeOverHttp(shortLeases.baseUrl, node, SALES, { prefer: 'respond-async' });
    expect(started.status, started.text).toBe(202);
    const ragStarted = await executeOverHttp(shortLeases.baseUrl, node, RAG, { prefer: 'respond-async' });
    expect(ragStarted.status, ragStarted.text).toBe(202);
    const [scheduled] = await waitFor(async () => {
      const starts = agentEvents(node, 'start');
      return starts.length === 2 ? starts.filter((event) => event.agent_id === RAG) : undefined;
    }, 'both runs to start');

    const rotated = await cli(node, ['--json', 'credential', 'rotate']);
    expect(rotated.exitCode, rotated.stderr).toBe(0);
    expect(rotated.json).toMatchObject({ confirmed: true });
    const fresh = readCredentials(file).node!.credential!;
    expect(fresh).not.toBe(old);
    const rotatedAt = Date.now();
    const refused = await httpRequest(`${shortLeases.baseUrl}/v1/swarm/nodes/poll`, {
      token: old,
      body: { hostname: 'x', version: '0', capacity: 0, running: [] },
    });
    expect(refused.status).toBe(401);

    // The run keeps its lease: renewed after the rotation, so with the new credential.
    await waitFor(
      async () => (leaseExpiresAt(scheduled!.run_id) > rotatedAt + TEST_RUN_TIMING.leaseMs ? true : undefined),
      'a renewal of the lease after the rotation',
    );
    // Both runs in flight reach the service, and the schedule goes on with the new credential.
    releaseAgents(node);
    const followed = await httpRequest(`${shortLeases.baseUrl}/v1/swarm/runs/${started.body.run_id}?wait=10`, { token: node.token });
    expect(followed.body).toMatchObject({ status: 'succeeded', charged_cents: 8 });
    await daemon.waitForEvent('run_succeeded', (event) => event.agent === RAG && event.charged_cents === '15');
    expect((await executeOverHttp(shortLeases.baseUrl, node, OPS)).body).toMatchObject({ status: 'succeeded' });
    await daemon.waitForCount('run_succeeded', 3);

    // Without the user's JWT the node still works: it never used it.
    expect((await cli(node, ['logout'])).exitCode).toBe(0);
    expect(readCredentials(file).jwt).toBeUndefined();
    const runsAtLogout = daemon.events('run_succeeded').length;
    // A run started with a sign-in of the user's elsewhere (the node's own was revoked) still runs here.
    const elsewhere = await signInPaid(shortLeases.baseUrl, node.email);
    expect((await executeOverHttp(shortLeases.baseUrl, { ...node, token: elsewhere }, OPS)).body).toMatchObject({ status: 'succeeded' });
    await daemon.waitForCount('run_succeeded', runsAtLogout + 1);
    expect(await daemon.stop()).toBe(0);

    expect(daemon.events('paused_all')).toEqual([]);
    for (const secret of [old, fresh, node.token]) {
      expect(daemon.output).not.toContain(secret);
      expect(daemon.stderr).not.toContain(secret);
    }
    expectChargedForNodeResults(shortLeases.db, node.email);
  });
});
