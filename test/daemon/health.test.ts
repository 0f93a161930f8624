// The daemon's health endpoint (docs/operations.md "The daemon's health endpoint"): the built binary's daemon
// against the real svc-api, asked over real HTTP: /healthz while it ticks and polls, /metrics counting the runs it
// logged, loopback unless told otherwise, and a clear refusal of an address in use or malformed. The bounds of
// /healthz are checked on DaemonHealth itself, with a clock the test moves (a hung loop cannot be made on purpose in
// a live daemon).
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DaemonHealth, POLL_BOUND_MS } from '../../src/node/daemon/health.js';
import { namingFindings } from '../api/support/prometheus.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { cli, DaemonProcess, FAST, register, signedInNode } from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
const service = useSvcApi();

/** A metric's value in the Prometheus text, 0 when absent. */
function metric(text: string, line: RegExp): number {
  return Number(line.exec(text)?.[1] ?? 0);
}

describe('swarm-node daemon --health-addr', () => {
  it('serves /healthz and /metrics on loopback while it runs agents; nothing else', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 1000, label: 'health' });
    await register(node, OPS, '--every', '1s');
    const daemon = DaemonProcess.start(node, [...FAST, '--health-addr', '0']);
    const listening = await daemon.waitForEvent('health_listening');
    expect(listening.addr).toMatch(/^127\.0\.0\.1:\d+$/);
    const base = `http://${listening.addr}`;
    const runs = await daemon.waitForCount('run_succeeded', 2, 20_000);
    // The first poll answered (it is held up to 20 s when there is no work: the scheduled runs do not need it).
    const health = await waitForHealthy(base);
    expect(health).toMatchObject({ healthy: true, problems: [], last_tick_at: expect.any(String), runs_in_flight: expect.any(Number) });
    expect(Date.now() - Date.parse(health.last_tick_at)).toBeLessThan(10_000);

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await metrics.text();
    const succeeded = metric(text, /^swarm_node_runs_total\{outcome="succeeded"\} (\d+)$/m);
    expect(succeeded).toBeGreaterThanOrEqual(runs.length);
    expect(metric(text, /^swarm_node_charged_cents_total (\d+)$/m)).toBe(4 * succeeded);
    expect(text).toMatch(/^swarm_node_runs_total\{outcome="failed"\} 0$/m);
    expect(text).toMatch(/^# TYPE swarm_node_poll_duration_seconds histogram$/m);
    expect(namingFindings(text)).toEqual([]);

    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(405);
    expect(await daemon.stop('SIGTERM')).toBe(0);
    // Closed with the daemon.
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it('refuses an address in use or malformed before it runs anything (exit 2, naming it)', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'health-bad' });
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const inUse = await cli(node, ['daemon', ...FAST, '--health-addr', String(port)]);
      expect(inUse.exitCode).toBe(2);
      expect(inUse.stderr).toContain(`cannot listen on 127.0.0.1:${port} for the health endpoint (EADDRINUSE)`);
      expect(inUse.stdout).not.toMatch(/event=daemon_started/);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    const malformed = await cli(node, ['daemon', '--health-addr', 'localhost:http']);
    expect(malformed.exitCode).toBe(2);
    expect(malformed.stderr).toContain('health_addr must be PORT, :PORT or HOST:PORT');
    const config = await cli(node, ['--json', 'config', 'set', 'health_addr', ':9465']);
    expect(config.json).toMatchObject({ key: 'health_addr', value: '127.0.0.1:9465' });
  });
});

describe('DaemonHealth', () => {
  it('is healthy once the loop ticked, while it ticks within five ticks and the service answered a poll within a minute', () => {
    let now = 1_000_000;
    const health = new DaemonHealth({ tickMs: 1_000, now: () => now });
    expect(health.report()).toMatchObject({ healthy: false, problems: ['the daemon loop has not ticked yet'] });
    health.tick(now, 1);
    expect(health.report()).toMatchObject({ healthy: true, runs_in_flight: 1, last_poll_at: null });
    now += 6_000;
    expect(health.report()).toMatchObject({ healthy: false, problems: ['the daemon loop last ticked 6 s ago'] });
    health.tick(now, 0);
    health.pollAnswered(now, 0.02);
    now += POLL_BOUND_MS + 1_000;
    health.tick(now, 0);
    expect(health.report()).toMatchObject({ healthy: false, problems: ['the service last answered a poll 61 s ago'] });
    health.pollAnswered(now, 0.02);
    expect(health.report().healthy).toBe(true);
  });

  it('counts each run event of the log once, by outcome, and the cents of the successes', async () => {
    const health = new DaemonHealth({ tickMs: 1_000, now: () => 0 });
    health.onLogEvent('run_succeeded', { charged_cents: 12 });
    health.onLogEvent('run_succeeded', { charged_cents: 4 });
    health.onLogEvent('run_failed', { charged_cents: 0 });
    health.onLogEvent('run_lost', {});
    health.onLogEvent('poll_failed', {});
    const text = await health.registry.metrics();
    expect(text).toMatch(/^swarm_node_runs_total\{outcome="succeeded"\} 2$/m);
    expect(text).toMatch(/^swarm_node_runs_total\{outcome="failed"\} 1$/m);
    expect(text).toMatch(/^swarm_node_runs_total\{outcome="lost"\} 1$/m);
    expect(text).toMatch(/^swarm_node_charged_cents_total 16$/m);
  });
});

async function waitForHealthy(
  base: string,
): Promise<{ healthy: boolean; problems: string[]; last_tick_at: string; runs_in_flight: number }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${base}/healthz`);
    const body = (await response.json()) as { healthy: boolean; problems: string[]; last_tick_at: string; runs_in_flight: number };
    if (response.status === 200 && body.healthy) return body;
    if (Date.now() > deadline) throw new Error(`/healthz stayed ${response.status}: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
