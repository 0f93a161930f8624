// The built swarm-node against the real svc-api (docs/api.md "Node health", "Draining a node"): the daemon says how
// its host is at its polls and `swarm-node nodes` shows it (a node that never said it: not reported); `nodes drain`
// stops the service handing the node runs, the daemon staying online and `status` saying it is drained, across a
// restart of the daemon, until `nodes resume`; the commands' exit codes; and a daemon in front of a service older
// than it, which refuses the health field, polling on without it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { totalmem } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { readCredentials } from '../../src/node/identity/credentials.js';
import { DaemonProcess } from '../daemon/support.js';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { waitFor } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { signedInNode, type SignedInNode } from './fixtures.js';
import { passTo } from '../helpers/http-fault-proxy.js';

const AGENT = 'agent_ops_monitor_004';
// Polls held 1 s, not 20: what the daemon hears of a drain comes within a second.
const service = useSvcApi({ runTiming: { pollHoldMs: 1_000 } });

const daemons: DaemonProcess[] = [];
const servers: Server[] = [];
afterAll(async () => {
  for (const daemon of daemons) await daemon.stop();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const nodeIdOf = (home: string): string => readCredentials(join(home, 'etc', 'credentials.json')).node!.node_id;

interface FleetNode {
  node_id: string;
  online: boolean;
  last_seen_at: string | null;
  health?: Record<string, number | string> | null;
  drained_at?: string | null;
}

async function fleetNode(token: string, nodeId: string): Promise<FleetNode | undefined> {
  const fleet = await apiClient(service.baseUrl).get('/v1/swarm/nodes', token);
  expect(fleet.status, fleet.text).toBe(200);
  return (fleet.body.nodes as FleetNode[]).find((node) => node.node_id === nodeId);
}

function startDaemon(node: SignedInNode): DaemonProcess {
  const daemon = DaemonProcess.start(node);
  daemons.push(daemon);
  return daemon;
}

async function queuedRun(token: string, email: string, nodeId?: string): Promise<string> {
  const started = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
    token,
    headers: { 'idempotency-key': crypto.randomUUID(), prefer: 'respond-async' },
    body: { user_id: email, agent_id: AGENT, ...(nodeId === undefined ? {} : { node_id: nodeId }) },
  });
  expect(started.status, started.text).toBe(202);
  return started.body.run_id as string;
}

const runStatus = async (token: string, runId: string): Promise<string> =>
  (await apiClient(service.baseUrl).get(`/v1/swarm/runs/${runId}`, token)).body.status as string;

/** The run still queued after the node has polled for two seconds more: it was not handed to it. */
async function stillQueuedAfterPolls(node: SignedInNode, nodeId: string, runId: string): Promise<void> {
  const from = Date.now();
  await waitFor(async () => {
    const seen = (await fleetNode(node.token, nodeId))?.last_seen_at;
    return seen != null && Date.parse(seen) > from + 2_000 ? true : undefined;
  }, 'the daemon polling on, drained');
  expect(await runStatus(node.token, runId)).toBe('queued');
}

describe('swarm-node nodes: health', () => {
  it(
    "shows each node's health as its daemon said it at its polls; a node that never said it, not reported",
    { timeout: 60_000 },
    async () => {
      const here = await signedInNode(service.baseUrl, { label: 'health' });
      expect((await swarmNode(['register', AGENT], { env: here.env })).exitCode).toBe(0);
      const hereId = nodeIdOf(here.home);
      startDaemon(here);
      const said = await waitFor(async () => (await fleetNode(here.token, hereId))?.health ?? undefined, "the daemon's health");
      expect(said).toEqual({
        load_1: expect.any(Number),
        load_5: expect.any(Number),
        load_15: expect.any(Number),
        memory_total_bytes: totalmem(),
        memory_available_bytes: expect.any(Number),
        disk_total_bytes: expect.any(Number),
        disk_free_bytes: expect.any(Number),
        uptime_seconds: expect.any(Number),
        reported_at: expect.any(String),
      });
      expect(said.memory_available_bytes as number).toBeLessThanOrEqual(totalmem());
      expect(said.disk_free_bytes as number).toBeLessThanOrEqual(said.disk_total_bytes as number);
      expect(said.disk_total_bytes as number).toBeGreaterThan(0);
      const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
      expect(Math.abs((said.uptime_seconds as number) - uptime)).toBeLessThan(120);

      // Another home of the same user, enrolled and never polled.
      const other = nodeEnv(service.baseUrl);
      expect((await swarmNode(['login', '--token-stdin'], { env: other.env, input: `${here.token}\n` })).exitCode).toBe(0);
      expect((await swarmNode(['enroll'], { env: other.env })).exitCode).toBe(0);
      const otherId = nodeIdOf(other.home);

      const json = await swarmNode(['--json', 'nodes'], { env: here.env });
      expect(json.exitCode, json.stderr).toBe(0);
      const byId = new Map<string, FleetNode>(json.json.nodes.map((node: FleetNode) => [node.node_id, node]));
      expect(byId.get(hereId)?.health).toMatchObject({ memory_total_bytes: totalmem() });
      expect(byId.get(otherId)).toMatchObject({ health: null, drained_at: null });

      const human = await swarmNode(['nodes'], { env: here.env });
      expect(human.exitCode, human.stderr).toBe(0);
      const lines = human.stdout.split('\n');
      expect(lines[0]).toMatch(/^NODE\s+HOST\s+VERSION\s+STATE\s+LAST SEEN\s+LOAD\s+MEM\s+DISK FREE\s+UPTIME\s+REPORTED\s+AGENTS/);
      expect(lines.find((line) => line.startsWith(hereId))).toMatch(
        /\s+online\s+\S+ \S+\s+\d+\.\d\d \d+\.\d\d \d+\.\d\d\s+\d+%\s+\d+\.\d (KiB|MiB|GiB|TiB|PiB)\s+\d+ (s|min|h \d+ min|d \d+ h)\s+\d+ s ago\s+agent_ops_monitor_004/,
      );
      expect(lines.find((line) => line.startsWith(otherId))).toMatch(/\s+offline\s+never\s+-\s+-\s+-\s+-\s+not reported\s+-\s+-\s+0$/);
    },
  );
});

describe('swarm-node nodes drain and resume', () => {
  it(
    'a drained node takes no new run, stays online and says so in status, across a daemon restart; resumed, it runs it',
    { timeout: 90_000 },
    async () => {
      const here = await signedInNode(service.baseUrl, { fundCents: 100, label: 'drain' });
      expect((await swarmNode(['register', AGENT], { env: here.env })).exitCode).toBe(0);
      const hereId = nodeIdOf(here.home);
      let daemon = startDaemon(here);
      await waitFor(async () => ((await fleetNode(here.token, hereId))?.online ? true : undefined), 'the daemon polling');

      const drained = await swarmNode(['nodes', 'drain', hereId], { env: here.env });
      expect(drained.exitCode, drained.stderr).toBe(0);
      expect(drained.stdout).toBe(
        `Drained node ${hereId}: it takes no new run; the runs it holds finish. Undo: swarm-node nodes resume ${hereId}`,
      );
      const again = await swarmNode(['--json', 'nodes', 'drain', hereId], { env: here.env });
      expect(again.exitCode).toBe(0);
      expect(again.json).toEqual({ node_id: hereId, drained_at: expect.any(String), changed: false });
      const listed = await swarmNode(['nodes'], { env: here.env });
      expect(listed.stdout.split('\n').find((line) => line.startsWith(hereId))).toMatch(/\s+online, drained\s+/);

      const runId = await queuedRun(here.token, here.email, hereId);
      await stillQueuedAfterPolls(here, hereId, runId);
      // Pinned to the drained node, the run says why it waits.
      const shown = await swarmNode(['runs', 'show', runId], { env: here.env });
      expect(shown.exitCode, shown.stderr).toBe(0);
      expect(shown.stdout).toContain(`Pinned to node ${hereId}, drained since `);
      expect(shown.stdout).toContain(`it waits for swarm-node nodes resume ${hereId}.`);
      const status = await waitFor(async () => {
        const shown = await swarmNode(['--json', 'status'], { env: here.env });
        return shown.json?.daemon?.drained_since ? shown : undefined;
      }, 'status saying drained');
      expect(status.json.daemon.drained_since).toEqual(expect.any(String));
      const statusText = await swarmNode(['status'], { env: here.env });
      expect(statusText.stdout).toContain(`the service sends this node no new run (swarm-node nodes resume ${hereId})`);

      // The drain is the service's: a daemon started again is still drained.
      expect(await daemon.stop()).toBe(0);
      daemon = startDaemon(here);
      await daemon.waitForEvent('node_drained');
      await stillQueuedAfterPolls(here, hereId, runId);

      const resumed = await swarmNode(['nodes', 'resume', hereId], { env: here.env });
      expect(resumed.exitCode, resumed.stderr).toBe(0);
      expect(resumed.stdout).toBe(`Resumed node ${hereId}: it takes runs again.`);
      await waitFor(async () => ((await runStatus(here.token, runId)) === 'succeeded' ? true : undefined), 'the run, once resumed', 30_000);
      await daemon.waitForEvent('node_resumed');
      expect((await swarmNode(['status'], { env: here.env })).stdout).not.toContain('no new run');
      const repeat = await swarmNode(['--json', 'nodes', 'resume', hereId], { env: here.env });
      expect(repeat.json).toEqual({ node_id: hereId, drained_at: null, changed: false });
    },
  );

  it("exits 5 for another user's node or none, 2 for what is not a node id, 4 signed out; --help shows an example", async () => {
    const owner = await signedInNode(service.baseUrl, { label: 'drain-owner' });
    const stranger = await signedInNode(service.baseUrl, { label: 'drain-stranger' });
    const ownerId = nodeIdOf(owner.home);
    for (const action of ['drain', 'resume']) {
      const foreign = await swarmNode(['--json', 'nodes', action, ownerId], { env: stranger.env });
      expect(foreign.exitCode, foreign.stderr).toBe(5);
      expect(foreign.json.error.code).toBe('not_found');
      const human = await swarmNode(['nodes', action, ownerId], { env: stranger.env });
      expect(human.exitCode).toBe(5);
      expect(human.stderr).toContain(`you have no node ${ownerId}`);
      const bad = await swarmNode(['nodes', action, 'node-1'], { env: owner.env });
      expect(bad.exitCode).toBe(2);
      expect(bad.stderr).toContain('"node-1" is not a node id');
      expect((await swarmNode(['nodes', action, ownerId], { env: nodeEnv(service.baseUrl).env })).exitCode).toBe(4);
      const help = await swarmNode(['nodes', action, '--help'], { env: owner.env });
      expect(help.exitCode).toBe(0);
      expect(help.stdout).toContain(`$ swarm-node nodes ${action} 3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14`);
      expect(help.stdout).toContain('Exit codes: 0 done');
    }
    expect((await fleetNode(owner.token, ownerId))?.drained_at).toBeNull();
  });
});

/**
 * A service older than the daemon, as far as its polls go: one whose poll takes no field it does not know answers a
 * poll with `health` as svc-api did before it knew the field (its validation's problem, word for word); every other
 * request goes through to the real service.
 */
async function olderService(target: string): Promise<{ baseUrl: string; refused: () => number }> {
  const upstream = new URL(target);
  let refused = 0;
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      if (incoming.url === '/v1/swarm/nodes/poll' && 'health' in (JSON.parse(body.toString() || '{}') as object)) {
        refused += 1;
        const problem = {
          type: 'https://docs.svc.example/errors/invalid_request',
          title: 'Invalid request',
          status: 400,
          detail: '/health: is not a known field',
          code: 'invalid_request',
          errors: [{ path: '/health', message: 'is not a known field' }],
        };
        outgoing.writeHead(400, { 'content-type': 'application/problem+json' }).end(JSON.stringify(problem));
        return;
      }
      passTo(upstream, incoming, outgoing, body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, refused: () => refused };
}

describe('a daemon in front of an older service', () => {
  it('polls on without health when the service refuses the field, and runs its runs', { timeout: 60_000 }, async () => {
    const older = await olderService(service.baseUrl);
    const here = await signedInNode(older.baseUrl, { fundCents: 100, label: 'older' });
    expect((await swarmNode(['register', AGENT], { env: here.env })).exitCode).toBe(0);
    const hereId = nodeIdOf(here.home);
    const daemon = startDaemon(here);
    await daemon.waitForEvent('health_not_taken');
    await waitFor(async () => ((await fleetNode(here.token, hereId))?.online ? true : undefined), 'the daemon polling without health');
    const runId = await queuedRun(here.token, here.email);
    await waitFor(async () => ((await runStatus(here.token, runId)) === 'succeeded' ? true : undefined), 'the run', 30_000);
    // Refused once, then never offered again for the hour: not a poll refused for each poll.
    expect(older.refused()).toBe(1);
    expect(daemon.events('health_not_taken')).toHaveLength(1);
    expect(daemon.events('poll_failed')).toEqual([]);
    expect((await fleetNode(here.token, hereId))?.health).toBeNull();
  });
});
