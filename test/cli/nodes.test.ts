// The user's nodes as the service sees them (docs/api.md "Runs on the node"): swarm-node nodes, register and
// unregister telling the service which agents a node serves, and swarm-node run from a home that is not a node,
// routed to an online node of the user or refused with nothing charged; swarm-node nodes remove (docs/api.md
// "Removing a node"), and the daemon of a node so removed stopping for good. The built binary (and its daemon)
// against the real svc-api.
import { afterAll, describe, expect, it } from 'vitest';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readCredentials } from '../../src/node/identity/credentials.js';
import { DaemonProcess } from '../daemon/support.js';
import { asPrinted, nodeEnv, swarmNode, type NodeEnv } from '../helpers/cli.js';
import { waitFor } from '../helpers/funnel.js';
import { KEY, spawnSwarmNodePty } from '../helpers/pty.js';
import { apiClient } from '../helpers/http.js';
import { REPO_ROOT, useSvcApi } from '../helpers/svc-api.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { deadPid, nodeDb, signedInNode, walletBalance } from './fixtures.js';

const AGENT = 'agent_ops_monitor_004';
const VERSION = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version as string;
const CLOSED_PORT_URL = 'http://127.0.0.1:9';
// Polls held 1 s, not 20: a removed node's daemon hears of it at its next poll, and the test need not wait a hold.
const service = useSvcApi({ runTiming: { pollHoldMs: 1_000 } });

const daemons: DaemonProcess[] = [];
afterAll(async () => {
  for (const daemon of daemons) await daemon.stop();
  await stopServingNodes();
});

const nodeIdOf = (home: string): string => readCredentials(join(home, 'etc', 'credentials.json')).node!.node_id;

interface FleetNode {
  node_id: string;
  hostname: string | null;
  version: string | null;
  online: boolean;
  agents: string[];
  labels: string[];
  runs_today: number;
}

async function fleetOf(token: string): Promise<FleetNode[]> {
  const fleet = await apiClient(service.baseUrl).get('/v1/swarm/nodes', token);
  expect(fleet.status, fleet.text).toBe(200);
  return fleet.body.nodes;
}

/** Another home of the same user, signed in with its JWT and enrolled with it: one more node, never polled. */
async function secondNode(token: string): Promise<NodeEnv> {
  const other = nodeEnv(service.baseUrl);
  expect((await swarmNode(['login', '--token-stdin'], { env: other.env, input: `${token}\n` })).exitCode).toBe(0);
  const enrolled = await swarmNode(['enroll'], { env: other.env });
  expect(enrolled.exitCode, enrolled.stderr).toBe(0);
  return other;
}

describe('swarm-node nodes', () => {
  it("lists the user's nodes: host, version, online, agents served, runs today, this one marked (here); --json for scripts", async () => {
    const here = await signedInNode(service.baseUrl, { fundCents: 100, label: 'nodes' });
    expect((await swarmNode(['register', AGENT], { env: here.env })).exitCode).toBe(0);
    expect((await swarmNode(['run', AGENT], { env: here.env })).exitCode).toBe(0);
    const daemon = DaemonProcess.start(here);
    daemons.push(daemon);
    const hereId = nodeIdOf(here.home);
    await waitFor(
      async () => ((await fleetOf(here.token)).find((node) => node.node_id === hereId)?.online ? true : undefined),
      'the daemon polling',
    );
    const other = await secondNode(here.token);
    const otherId = nodeIdOf(other.home);
    // Another user's node, serving the same agent: never in this user's list.
    const stranger = await signedInNode(service.baseUrl, { label: 'nodes-stranger' });
    expect((await swarmNode(['register', AGENT], { env: stranger.env })).exitCode).toBe(0);
    const strangerId = nodeIdOf(stranger.home);

    const json = await swarmNode(['--json', 'nodes'], { env: here.env });
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.json.this_node_id).toBe(hereId);
    const byId = new Map<string, FleetNode>(json.json.nodes.map((node: FleetNode) => [node.node_id, node]));
    expect([...byId.keys()].sort()).toEqual([hereId, otherId].sort());
    expect(byId.get(hereId)).toMatchObject({
      hostname: hostname(),
      version: VERSION,
      online: true,
      agents: [AGENT],
      labels: [],
      runs_today: 1,
      last_seen_at: expect.any(String),
    });
    expect(byId.get(otherId)).toMatchObject({
      hostname: null,
      version: null,
      online: false,
      agents: [],
      labels: [],
      runs_today: 0,
      last_seen_at: null,
    });

    const human = await swarmNode(['nodes'], { env: here.env });
    expect(human.exitCode, human.stderr).toBe(0);
    const lines = human.stdout.split('\n');
    expect(lines[0]).toMatch(
      /^NODE\s+HOST\s+VERSION\s+STATE\s+LAST SEEN\s+LOAD\s+MEM\s+DISK FREE\s+UPTIME\s+REPORTED\s+AGENTS\s+LABELS\s+RUNS TODAY$/,
    );
    // Its health between LAST SEEN and AGENTS (test/cli/nodes-health.test.ts reads it).
    expect(lines.find((line) => line.startsWith(hereId))).toMatch(
      new RegExp(
        `^${hereId} \\(here\\)\\s+${hostname()}\\s+${VERSION.replaceAll('.', '\\.')}\\s+online\\s+\\S+ \\S+\\s+.+ ago\\s+${AGENT}\\s+-\\s+1$`,
      ),
    );
    expect(lines.find((line) => line.startsWith(otherId))).toMatch(
      new RegExp(`^${otherId}\\s+-\\s+-\\s+offline\\s+never\\s+-\\s+-\\s+-\\s+-\\s+not reported\\s+-\\s+-\\s+0$`),
    );
    // From the other home, that one is here.
    expect((await swarmNode(['nodes'], { env: other.env })).stdout).toContain(`${otherId} (here)`);
    expect(human.stdout + human.stderr).not.toContain(here.token);
    expect(human.stdout + human.stderr).not.toContain(strangerId);
    const theirs = await swarmNode(['--json', 'nodes'], { env: stranger.env });
    expect(theirs.json.nodes.map((node: FleetNode) => node.node_id)).toEqual([strangerId]);
    expect(await daemon.stop()).toBe(0);
  });

  it('needs a signed-in user: exit 4 on a fresh home and on a node whose JWT is gone; none yet says how to get one', async () => {
    const fresh = await swarmNode(['--json', 'nodes'], { env: nodeEnv(service.baseUrl).env });
    expect(fresh.exitCode).toBe(4);
    expect(fresh.json.error.code).toBe('not_signed_in');
    const node = await signedInNode(service.baseUrl, { label: 'nodes-logout' });
    expect((await swarmNode(['logout'], { env: node.env })).exitCode).toBe(0);
    expect((await swarmNode(['nodes'], { env: node.env })).exitCode).toBe(4);

    const none = await signedInNode(service.baseUrl, { label: 'nodes-none', enroll: false });
    // Other users have nodes (the one above among them); a user with none sees none of theirs.
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM nodes WHERE user_id != ?').get(none.email)).not.toEqual({ n: 0 });
    const empty = await swarmNode(['nodes'], { env: none.env });
    expect(empty.exitCode, empty.stderr).toBe(0);
    expect(empty.stdout).toBe('No nodes yet: swarm-node install (or swarm-node enroll) on a host enrolls one.');
    expect((await swarmNode(['--json', 'nodes'], { env: none.env })).json).toEqual({ nodes: [], this_node_id: null });
  });
});

describe('register and unregister tell the service', () => {
  it('register: the service routes the agent to this node; unregister withdraws it', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'serve' });
    const nodeId = nodeIdOf(node.home);
    expect((await fleetOf(node.token))[0]).toMatchObject({ node_id: nodeId, agents: [] });
    const registered = await swarmNode(['--json', 'register', AGENT], { env: node.env });
    expect(registered.exitCode, registered.stderr).toBe(0);
    expect(registered.json).toMatchObject({ agent_id: AGENT, node_id: nodeId, user_id: node.email });
    expect((await fleetOf(node.token))[0]!.agents).toEqual([AGENT]);
    expect((await swarmNode(['register', 'agent_svc_skills_005'], { env: node.env })).exitCode).toBe(0);
    expect((await fleetOf(node.token))[0]!.agents.sort()).toEqual([AGENT, 'agent_svc_skills_005']);

    const removed = await swarmNode(['--json', 'unregister', AGENT], { env: node.env });
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(removed.json).toEqual({ agent_id: AGENT, removed: true, withdrawn: true });
    expect((await fleetOf(node.token))[0]!.agents).toEqual(['agent_svc_skills_005']);
    const human = await swarmNode(['unregister', 'agent_svc_skills_005'], { env: node.env });
    expect(human.stdout).toBe('Unregistered agent_svc_skills_005; the service no longer sends its runs here.');
    expect((await fleetOf(node.token))[0]!.agents).toEqual([]);
  });

  it('unregister with the service unreachable: removed here, a warning, exit 0; the daemon withdraws it at its next contact', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'withdraw-later' });
    expect((await swarmNode(['register', AGENT], { env: node.env })).exitCode).toBe(0);
    // A short deadline: the withdrawal is retried until it, then given up.
    expect((await swarmNode(['config', 'set', 'timeout_seconds', '2'], { env: node.env })).exitCode).toBe(0);
    const offline = await swarmNode(['--json', '--base-url', CLOSED_PORT_URL, 'unregister', AGENT], { env: node.env });
    expect(offline.exitCode, offline.stderr).toBe(0);
    expect(offline.json).toMatchObject({
      agent_id: AGENT,
      removed: true,
      withdrawn: false,
      withdraw_error: expect.stringContaining('cannot reach the service'),
    });
    expect(offline.stderr).toMatch(/warning: the service was not told \(.+\); the daemon withdraws it at its next contact/);
    expect((await swarmNode(['--json', 'list'], { env: node.env })).json.registrations).toEqual([]);
    expect((await fleetOf(node.token))[0]!.agents).toEqual([AGENT]);

    const daemon = DaemonProcess.start(node);
    daemons.push(daemon);
    await waitFor(
      async () => ((await fleetOf(node.token))[0]!.agents.length === 0 ? true : undefined),
      'the daemon withdrawing the agent',
      20_000,
    );
    expect(await daemon.stop()).toBe(0);
  });

  it('register on a home that is not an enrolled node: exit 4 not_enrolled with the remedy; nothing stored', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'register-bare', enroll: false });
    const result = await swarmNode(['--json', 'register', AGENT, '--every', '5m'], { env: node.env });
    expect(result.exitCode).toBe(4);
    expect(result.json.error).toMatchObject({
      code: 'not_enrolled',
      message: expect.stringContaining('not an enrolled node'),
      remedy: expect.stringContaining('swarm-node enroll'),
    });
    expect((await swarmNode(['--json', 'list'], { env: node.env })).json.registrations).toEqual([]);
  });

  it("register signed in as another user than the node's: refused, nothing stored here or at the service", async () => {
    const node = await signedInNode(service.baseUrl, { label: 'owner' });
    const stranger = await signedInNode(service.baseUrl, { label: 'stranger', enroll: false });
    // The stranger's JWT on the owner's node.
    expect((await swarmNode(['login', '--token-stdin'], { env: node.env, input: `${stranger.token}\n` })).exitCode).toBe(0);
    const result = await swarmNode(['--json', 'register', AGENT], { env: node.env });
    expect(result.exitCode).toBe(1);
    expect(result.json.error).toMatchObject({
      code: 'forbidden',
      message: `you are signed in as ${stranger.email}, but this node was enrolled by ${node.email}`,
      remedy: expect.stringContaining(`Sign in as ${node.email}`),
    });
    expect((await swarmNode(['--json', 'list'], { env: node.env })).json.registrations).toEqual([]);
    expect((await fleetOf(node.token))[0]!.agents).toEqual([]);
    expect(await fleetOf(stranger.token)).toEqual([]);
  });
});

describe('swarm-node run from a home that is not a node', () => {
  it('goes to an online node of the user that serves the agent, and runs there', async () => {
    const server = await signedInNode(service.baseUrl, { fundCents: 100, label: 'routed' });
    expect((await swarmNode(['register', AGENT], { env: server.env })).exitCode).toBe(0);
    const daemon = DaemonProcess.start(server);
    daemons.push(daemon);
    const serverId = nodeIdOf(server.home);
    await waitFor(async () => ((await fleetOf(server.token))[0]?.online ? true : undefined), 'the daemon polling');

    const laptop = nodeEnv(service.baseUrl);
    expect((await swarmNode(['login', '--token-stdin'], { env: laptop.env, input: `${server.token}\n` })).exitCode).toBe(0);
    const result = await swarmNode(['--json', 'run', AGENT], { env: laptop.env });
    expect(result.exitCode, result.stderr + result.stdout).toBe(0);
    expect(result.json).toMatchObject({
      agent_id: AGENT,
      status: 'succeeded',
      node_id: serverId,
      charged_cents: 4,
      balance_cents: 96,
      output: { host: { hostname: hostname() } },
    });
    expect(await walletBalance(service.baseUrl, server.token)).toBe(96);
    expect(await daemon.stop()).toBe(0);
  });

  it('with no online node that serves it: 409 no_node_available as a clear error, nothing charged, journaled as refused', async () => {
    const laptop = await signedInNode(service.baseUrl, { fundCents: 100, label: 'no-node', enroll: false });
    const none = await swarmNode(['--json', 'run', AGENT], { env: laptop.env });
    expect(none.exitCode).toBe(1);
    expect(none.json.error).toMatchObject({
      code: 'no_node_available',
      message: `no node can run ${AGENT} now: you have no node: runs execute on a node you install; nothing was charged`,
      agent_id: AGENT,
      remedy: expect.stringMatching(
        /what they serve: \S+ swarm-node nodes --base-url \S+\. Or run it on this host, which becomes one of your nodes: \S+ swarm-node enroll --base-url \S+, then again: \S+ swarm-node run agent_ops_monitor_004 --base-url \S+\.$/,
      ),
    });

    // A node of the user serves it but has never polled (its daemon is not running): offline. A run that may not wait
    // is refused the same way; one that may waits queued for it, and is refunded when none comes in time.
    const idle = await secondNode(laptop.token);
    expect((await swarmNode(['register', AGENT], { env: idle.env })).exitCode).toBe(0);
    const offline = await swarmNode(['run', AGENT, '--queue-seconds', '0'], { env: laptop.env });
    expect(offline.exitCode).toBe(1);
    expect(offline.stderr).toContain(
      `error: no node can run ${AGENT} now: your nodes that serve ${AGENT} are offline, and queue_seconds 0 asked not to wait for one; nothing was charged`,
    );
    expect(offline.stdout).toBe('');
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM runs WHERE user_id = ?').get(laptop.email)).toEqual({ n: 0 });
    const waited = await swarmNode(['--json', 'run', AGENT, '--queue-seconds', '1'], { env: laptop.env });
    expect(waited.exitCode).toBe(1);
    expect(waited.json.error).toMatchObject({ code: 'failed', charged_cents: 0, output: { error: 'not_picked_up' } });

    expect(await walletBalance(service.baseUrl, laptop.token)).toBe(100);
    const db = nodeDb(laptop.home);
    const rows = db.prepare('SELECT status, charged_cents, error_code FROM runs ORDER BY started_at').all();
    db.close();
    expect(rows).toEqual([
      { status: 'failed', charged_cents: 0, error_code: 'no_node_available' },
      { status: 'failed', charged_cents: 0, error_code: 'no_node_available' },
      { status: 'failed', charged_cents: 0, error_code: 'agent_failed' },
    ]);
  });
});

describe('swarm-node nodes remove', () => {
  it('refuses without --yes off a terminal (exit 2) and a malformed id (exit 2); a node the user does not have is exit 5; nothing removed', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remove-refused' });
    const nodeId = nodeIdOf(node.home);
    const unconfirmed = await swarmNode(['--json', 'nodes', 'remove', nodeId], { env: node.env });
    expect(unconfirmed.exitCode).toBe(2);
    expect(unconfirmed.json.error).toMatchObject({
      code: 'usage',
      remedy: `Add --yes to confirm: ${asPrinted(node, `swarm-node nodes remove ${nodeId} --yes`)}`,
    });
    expect((await swarmNode(['nodes', 'remove', 'node-1', '--yes'], { env: node.env })).exitCode).toBe(2);
    // Another user's node is answered the same (test/api/enroll.test.ts shows it).
    const unknownId = '0b6e3f0a-57c2-4d1e-8f4a-2c9d7e1b5a63';
    const unknown = await swarmNode(['--json', 'nodes', 'remove', unknownId, '--yes'], { env: node.env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.json.error).toMatchObject({
      code: 'not_found',
      message: `you have no node ${unknownId}`,
      remedy: `Yours: ${asPrinted(node, 'swarm-node nodes')}.`,
    });
    expect((await fleetOf(node.token)).map((fleetNode) => fleetNode.node_id)).toEqual([nodeId]);
  });

  it('asks on a terminal, and keeps the node unless told yes', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remove-ask' });
    const nodeId = nodeIdOf(node.home);
    const session = spawnSwarmNodePty(['nodes', 'remove', nodeId], node.env);
    await session.waitFor('for good?', 15_000);
    expect(session.screen().replace(/\s+/g, ' ')).toContain(
      `Remove node ${nodeId} (this host) on a host that never polled, offline for good?`,
    );
    session.press(KEY.enter);
    const exit = await session.waitForExit(10_000);
    expect(exit.exitCode).toBe(1);
    expect(session.screen()).toContain('not confirmed: nothing was removed');
    expect((await fleetOf(node.token)).map((fleetNode) => fleetNode.node_id)).toEqual([nodeId]);
  });

  it("removes this host's node while its daemon runs: the daemon logs node_removed and exits 8; the next steps are said", async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remove-online' });
    expect((await swarmNode(['register', AGENT], { env: node.env })).exitCode).toBe(0);
    const nodeId = nodeIdOf(node.home);
    const daemon = DaemonProcess.start(node);
    daemons.push(daemon);
    await waitFor(async () => ((await fleetOf(node.token))[0]?.online ? true : undefined), 'the daemon polling');

    const removed = await swarmNode(['--json', 'nodes', 'remove', nodeId, '--yes'], { env: node.env });
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(removed.json).toEqual({
      node_id: nodeId,
      removed_at: expect.any(String),
      was_online: true,
      agents_withdrawn: [AGENT],
      this_node: true,
    });
    expect(removed.stderr).toContain(`node ${nodeId} was online: its daemon stops at its next poll (exit 8)`);
    expect(removed.stderr).toContain('This was the node of this host');
    expect(removed.stderr).toContain('swarm-node uninstall --purge --yes');
    expect(await fleetOf(node.token)).toEqual([]);

    // Its polls are held 1 s here: it hears of the removal within a second or two.
    const event = await daemon.waitForEvent('node_removed', () => true, 20_000);
    expect(event).toMatchObject({ level: 'error', node_id: nodeId, remedy: expect.stringContaining('swarm-node install') });
    await waitFor(async () => daemon.child.exitCode ?? undefined, 'the daemon to exit', 20_000);
    expect(daemon.child.exitCode).toBe(8);
    expect(daemon.stderr).toContain(`node ${nodeId} was removed from its user's nodes`);
    // Repeated, it is said again: a retry after a lost answer is safe.
    const again = await swarmNode(['nodes', 'remove', nodeId, '--yes'], { env: node.env });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toBe(`Removed node ${nodeId}.`);
    // The node's own calls are refused from now on (exit 8), with the same remedy; nothing is stored.
    const register = await swarmNode(['--json', 'register', 'agent_svc_skills_005'], { env: node.env });
    expect(register.exitCode).toBe(8);
    expect(register.json.error).toMatchObject({
      code: 'node_removed',
      remedy: expect.stringMatching(new RegExp(`enroll it anew, signed in: ${escaped(asPrinted(node, 'swarm-node enroll --reenroll'))}$`)),
    });
    expect(
      (await swarmNode(['--json', 'list'], { env: node.env })).json.registrations.map((row: { agent_id: string }) => row.agent_id),
    ).toEqual([AGENT]);
    // The remedy, as printed: the home is enrolled anew, as another node (the removed one stays removed).
    const reenrolled = await swarmNode(['--json', 'enroll', '--reenroll'], { env: node.env });
    expect(reenrolled.exitCode, reenrolled.stderr).toBe(0);
    expect(reenrolled.json.node_id).not.toBe(nodeId);
    expect(nodeIdOf(node.home)).toBe(reenrolled.json.node_id);
    expect((await swarmNode(['--json', 'register', 'agent_svc_skills_005'], { env: node.env })).exitCode).toBe(0);
    // A node the service still accepts is not replaced by --reenroll.
    const refused = await swarmNode(['--json', 'enroll', '--reenroll'], { env: node.env });
    expect([refused.exitCode, refused.json.error.code]).toEqual([2, 'usage']);
    expect(refused.json.error.message).toMatch(/is still one of your nodes/);
  }, 60_000);
});

describe('labels', () => {
  it('labels add|remove: kept in the config file, sent at once, listed by `labels` and the fleet view; a bad label changes nothing', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'labels' });
    const nodeId = nodeIdOf(node.home);
    const configFile = join(node.home, 'etc', 'config.json');
    expect((await swarmNode(['--json', 'labels'], { env: node.env })).json).toEqual({ node_id: nodeId, labels: [], file: configFile });

    const added = await swarmNode(['--json', 'labels', 'add', 'GPU', 'linux-x64,zone.eu-1'], { env: node.env });
    expect(added.exitCode, added.stderr).toBe(0);
    expect(added.json).toEqual({ node_id: nodeId, labels: ['gpu', 'linux-x64', 'zone.eu-1'], not_carried: [], sent: true });
    expect(JSON.parse(readFileSync(configFile, 'utf8')).labels).toEqual(['gpu', 'linux-x64', 'zone.eu-1']);
    expect((await fleetOf(node.token))[0]!.labels).toEqual(['gpu', 'linux-x64', 'zone.eu-1']);

    const removed = await swarmNode(['labels', 'remove', 'zone.eu-1', 'nope'], { env: node.env });
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(`Labels of node ${nodeId}: gpu, linux-x64; the service routes by them now.`);
    expect(removed.stderr).toContain('nope was not a label of this node');
    expect((await fleetOf(node.token))[0]!.labels).toEqual(['gpu', 'linux-x64']);
    expect((await swarmNode(['labels', 'list'], { env: node.env })).stdout).toBe('gpu\nlinux-x64');
    expect((await swarmNode(['nodes'], { env: node.env })).stdout.split('\n')[1]).toMatch(/\s+gpu,linux-x64\s+0$/);

    const config = readFileSync(configFile, 'utf8');
    for (const bad of [['bad label'], ['gpu,-x'], Array.from({ length: 15 }, (_, index) => `l${index}`)]) {
      const refused = await swarmNode(['--json', 'labels', 'add', ...bad], { env: node.env });
      expect(refused.exitCode, bad.join(' ')).toBe(2);
      expect(refused.json.error).toMatchObject({
        code: 'usage',
        message: expect.stringMatching(/is not a label|this node would carry 17 labels; at most 16/),
      });
    }
    expect(readFileSync(configFile, 'utf8')).toBe(config);
    expect((await fleetOf(node.token))[0]!.labels).toEqual(['gpu', 'linux-x64']);
    // Labels are a node's: a home that is not one is told so.
    const bare = await swarmNode(['--json', 'labels', 'add', 'gpu'], { env: nodeEnv(service.baseUrl).env });
    expect(bare.exitCode).toBe(4);
    expect(bare.json.error.code).toBe('not_enrolled');
  });

  it('run --label: only the node with the labels runs it; none with them → exit 1 naming them, nothing charged; the daemon sends labels the service missed', async () => {
    const gpu = await signedInNode(service.baseUrl, { fundCents: 100, label: 'labels-gpu' });
    const gpuId = nodeIdOf(gpu.home);
    expect((await swarmNode(['register', AGENT], { env: gpu.env })).exitCode).toBe(0);
    // The service cannot be reached when the label is added: kept here, and sent by the daemon when it starts.
    expect((await swarmNode(['config', 'set', 'timeout_seconds', '2'], { env: gpu.env })).exitCode).toBe(0);
    const offline = await swarmNode(['--json', '--base-url', CLOSED_PORT_URL, 'labels', 'add', 'gpu'], { env: gpu.env });
    expect(offline.exitCode, offline.stderr).toBe(0);
    expect(offline.json).toMatchObject({ labels: ['gpu'], sent: false, send_error: expect.stringContaining('cannot reach the service') });
    expect(offline.stderr).toMatch(/warning: the service was not told \(.+\); the daemon sends them at its next contact/);
    expect((await fleetOf(gpu.token))[0]!.labels).toEqual([]);
    const daemon = DaemonProcess.start(gpu);
    daemons.push(daemon);
    await waitFor(async () => {
      const here = (await fleetOf(gpu.token))[0]!;
      return here.online && here.labels.join() === 'gpu' ? true : undefined;
    }, 'the daemon sending its labels');
    expect((await daemon.waitForEvent('agents_served')).labels).toBe('gpu');

    // A second node of the user, serving the same agent with another label: played over the protocol (cheaper than a
    // second daemon; the service cannot tell them apart).
    const arm = await serve(service.baseUrl, await enrollNode(service.baseUrl, gpu.email), { agents: [AGENT], labels: ['arm64'] });
    const armId = arm.node_id;

    const laptop = nodeEnv(service.baseUrl);
    expect((await swarmNode(['login', '--token-stdin'], { env: laptop.env, input: `${gpu.token}\n` })).exitCode).toBe(0);
    const onGpu = await swarmNode(['--json', 'run', AGENT, '--label', 'GPU'], { env: laptop.env });
    expect(onGpu.exitCode, onGpu.stderr).toBe(0);
    // The daemon ran the real agent on this host.
    expect(onGpu.json).toMatchObject({ node_id: gpuId, status: 'succeeded', output: { host: { hostname: hostname() } } });
    const onArm = await swarmNode(['--json', 'run', AGENT, '--label', 'arm64'], { env: laptop.env });
    expect(onArm.exitCode, onArm.stderr).toBe(0);
    expect(onArm.json).toMatchObject({ node_id: armId, status: 'succeeded', output: { summary: `ran ${AGENT} on the test node` } });

    const none = await swarmNode(['--json', 'run', AGENT, '--label', 'gpu,nope'], { env: laptop.env });
    expect(none.exitCode).toBe(1);
    expect(none.json.error).toMatchObject({
      code: 'no_node_available',
      message: `no node can run ${AGENT} now: none of your nodes that serve ${AGENT} carries the label nope; nothing was charged`,
      labels: ['gpu', 'nope'],
      missing_labels: ['nope'],
      remedy: expect.stringContaining('swarm-node labels add'),
    });
    const bad = await swarmNode(['run', AGENT, '--label', 'a b'], { env: laptop.env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('"a b" is not a label');
    expect(await walletBalance(service.baseUrl, gpu.token)).toBe(100 - 2 * 4);

    // A run whose answer was lost is replayed with its labels: the same request under its key, not charged again.
    const db = nodeDb(laptop.home);
    expect(db.prepare('SELECT labels_json, status, error_code FROM runs ORDER BY started_at').all()).toEqual([
      { labels_json: '["gpu"]', status: 'succeeded', error_code: null },
      { labels_json: '["arm64"]', status: 'succeeded', error_code: null },
      { labels_json: '["gpu","nope"]', status: 'failed', error_code: 'no_node_available' },
    ]);
    db.prepare("UPDATE runs SET status = 'pending', owner_pid = ? WHERE labels_json = '[\"gpu\"]'").run(await deadPid());
    db.close();
    const next = await swarmNode(['run', AGENT, '--label', 'arm64'], { env: laptop.env });
    expect(next.exitCode, next.stderr).toBe(0);
    expect(next.stderr).toContain('Settled 1 earlier run(s)');
    const replayed = nodeDb(laptop.home);
    expect(replayed.prepare(`SELECT status, node_id FROM runs WHERE labels_json = '["gpu"]'`).get()).toEqual({
      status: 'succeeded',
      node_id: gpuId,
    });
    replayed.close();
    expect(await walletBalance(service.baseUrl, gpu.token)).toBe(100 - 3 * 4);
    expect(await daemon.stop()).toBe(0);
  });
});

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
