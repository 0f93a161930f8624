// docs/operations.md "Several nodes on one host". The default node and node `gpu` installed into one scratch --root
// against one real svc-api (the built binary, as installed): each its own credential, database, config and units;
// --node selects one for every command; a daemon process of gpu runs gpu's work; a second node with a name in use
// and a bad name are refused and change nothing; uninstalling gpu leaves the default node as it was.
import { execa } from 'execa';
import Database from 'better-sqlite3';
import { chmodSync, existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { unitOfRelease } from '../../src/node/install/unit-file.js';
import { randomUUID } from 'node:crypto';
import { activatedSession, fundWallet, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { REPO_ROOT, useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { cleanEnv, homeOf, loginByMail, run, snapshot, swarmNode, writeTokenFile } from './support.js';

const AGENT = 'agent_ops_monitor_004'; // 4 cents
const GPU_UNITS = [
  'svc-swarm-node@gpu.service',
  'svc-swarm-node-agent-gpu.socket',
  'svc-swarm-node-agent-gpu@.service',
  'svc-swarm-node-egress-agent-gpu.socket',
  'svc-swarm-node-egress-agent-gpu@.service',
];
const DEFAULT_UNITS = [
  'svc-swarm-node.service',
  'svc-swarm-node-agent.socket',
  'svc-swarm-node-agent@.service',
  'svc-swarm-node-egress-agent.socket',
  'svc-swarm-node-egress-agent@.service',
];

describe('several nodes on one host', () => {
  const service = useSvcApi();
  let root: string;
  let defaultHome: string;
  let gpuHome: string;
  let bin: string;
  const install = (args: string[], env: Record<string, string | undefined> = {}) =>
    swarmNode(['install', '--root', root, '--no-start', ...args], { env: { SVC_BASE_URL: service.baseUrl, ...env } });
  const tokenFile = async (label: string) => writeTokenFile((await activatedSession(service.baseUrl, uniqueEmail(label))).deploy_token);
  const credentials = (home: string) => JSON.parse(readFileSync(join(home, 'etc', 'credentials.json'), 'utf8'));
  const unit = (name: string) => readFileSync(join(root, 'etc/systemd/system', name), 'utf8');
  /** Everything under the root but node gpu's own files: what must not move when gpu is installed again or removed. */
  const outsideGpu = () =>
    Object.fromEntries(
      Object.entries(snapshot(root)).filter(
        ([path]) => !path.startsWith('opt/svc/swarm-node/nodes/') && !GPU_UNITS.some((name) => path.endsWith(name)),
      ),
    );

  beforeAll(async () => {
    root = tempDir('nodes-root-');
    defaultHome = homeOf(root);
    gpuHome = join(defaultHome, 'nodes', 'gpu');
    bin = join(root, 'usr/local/bin/swarm-node');
    const first = await install(['--deploy-token-file', await tokenFile('node-default')]);
    expect(first.exitCode, first.stderr).toBe(0);
    const second = await install(['--name', 'gpu', '--json', '--deploy-token-file', await tokenFile('node-gpu')]);
    expect(second.exitCode, second.stderr).toBe(0);
    expect(second.json).toMatchObject({ enrolled: true, node_id: credentials(gpuHome).node.node_id });
  });

  it('installs gpu beside the default node: its own home, credential, config and units; the default keeps its own', () => {
    const [mine, other] = [credentials(defaultHome).node, credentials(gpuHome).node];
    expect(mine.node_id).not.toBe(other.node_id);
    expect(readlinkSync(join(gpuHome, 'current'))).toMatch(/^releases\//);
    expect(JSON.parse(readFileSync(join(gpuHome, 'etc', 'config.json'), 'utf8'))).toMatchObject({
      node_id: other.node_id,
      agent_socket: '/run/svc-swarm-node/nodes/gpu/agent.sock',
    });
    expect(JSON.parse(readFileSync(join(defaultHome, 'etc', 'config.json'), 'utf8'))).not.toHaveProperty('agent_socket');
    // The default node's units are today's, byte for byte; gpu's are files of their own, naming gpu's paths
    // (systemd-analyze verify checks them in scripts.test.ts).
    DEFAULT_UNITS.forEach((name) => expect(unit(name)).toBe(unitOfRelease(REPO_ROOT, name)));
    const [daemon, socket, agentRun, egressSocket, egressRun] = GPU_UNITS.map(unit);
    expect(daemon).toContain('Environment=SWARM_NODE_HOME=/opt/svc/swarm-node/nodes/gpu\n');
    expect(daemon).toContain('ExecStart=/opt/svc/swarm-node/nodes/gpu/current/bin/swarm-node daemon\n');
    expect(daemon).toContain('Wants=network-online.target svc-swarm-node-agent-gpu.socket svc-swarm-node-egress-agent-gpu.socket\n');
    expect(egressSocket).toContain('ListenStream=/run/svc-swarm-node/nodes/gpu/agent-egress.sock\n');
    // The egress twin of gpu's agent unit: gpu's state, uids and hidden paths, the host's network.
    const settings = (text: string) => text.split('\n').filter((line) => !line.startsWith('#') && !line.startsWith('Description='));
    expect(settings(egressRun!)).toEqual(
      settings(agentRun!).filter((line) => !/^(PrivateNetwork|IPAddressAllow|IPAddressDeny)=/.test(line)),
    );
    expect(settings(agentRun!)).toEqual(expect.arrayContaining(['PrivateNetwork=yes', 'IPAddressDeny=any']));
    expect(socket).toContain('ListenStream=/run/svc-swarm-node/nodes/gpu/agent.sock\n');
    expect(agentRun).toContain('ExecStart=/opt/svc/swarm-node/nodes/gpu/current/bin/swarm-node agent-exec\n');
    expect(agentRun).toContain('StateDirectory=svc-swarm-node-agents-gpu\n');
    expect(agentRun).toContain('InaccessiblePaths=-/opt/svc/swarm-node/etc -/opt/svc/swarm-node/var\n');
    expect(unit('svc-swarm-node-agent@.service')).toContain('InaccessiblePaths=-/opt/svc/swarm-node/nodes\n');
    // The command link stays the default node's, and gpu's own uninstall.sh names gpu's units only.
    expect(readlinkSync(bin)).toBe('../../../opt/svc/swarm-node/current/bin/swarm-node');
    const script = readFileSync(join(gpuHome, 'uninstall.sh'), 'utf8');
    expect(script).toContain('HOME_DIR=/opt/svc/swarm-node/nodes/gpu\n');
    expect(script).toContain(
      'UNITS="svc-swarm-node@gpu.service svc-swarm-node-agent-gpu.socket"\nEGRESS_SOCKET=svc-swarm-node-egress-agent-gpu.socket\n',
    );
  });

  it("--node gpu (or SWARM_NODE_NAME, or gpu's own release) reports gpu; no name reports the default node", async () => {
    const gpuId = credentials(gpuHome).node.node_id;
    const statusOf = async (command: string, args: string[], env: Record<string, string> = {}) => {
      const result = await run(command, [...args, '--json', 'status'], { env: { SVC_BASE_URL: service.baseUrl, ...env } });
      expect(result.exitCode, result.stderr).toBe(0);
      return result.json as { home: string; node: { node_id: string } };
    };
    expect(await statusOf(bin, [])).toMatchObject({ node: { node_id: credentials(defaultHome).node.node_id } });
    expect(await statusOf(bin, ['--node', 'gpu'])).toMatchObject({ node: { node_id: gpuId } });
    expect(await statusOf(bin, [], { SWARM_NODE_NAME: 'gpu' })).toMatchObject({ node: { node_id: gpuId } });
    expect(await statusOf(join(gpuHome, 'current/bin/swarm-node'), [])).toMatchObject({ node: { node_id: gpuId } });
    // doctor (an install command) checks gpu's layout and units, not the default node's.
    const doctor = await run(bin, ['--node', 'gpu', '--json', 'doctor', '--root', root], { env: { SVC_BASE_URL: service.baseUrl } });
    const checks = (doctor.json.checks ?? doctor.json.error?.checks) as { name: string; status: string; detail: string }[];
    expect(
      checks.find((check) => check.name === 'unit'),
      doctor.stdout,
    ).toMatchObject({ status: 'ok', detail: expect.stringContaining('svc-swarm-node@gpu.service') });
    expect(checks.find((check) => check.name === 'layout')).toMatchObject({ status: 'ok', detail: expect.stringContaining('nodes/gpu') });
  });

  it("a run registered on gpu is run by gpu's daemon and journaled in gpu's database, not the default's", async () => {
    // The scratch root stands for the host's /, which every user may traverse (runs under a uid of their own).
    chmodSync(root, 0o755);
    const gpu = credentials(gpuHome).node;
    await fundWallet(service.baseUrl, gpu.user_id, 20);
    const env = { SVC_BASE_URL: service.baseUrl };
    const login = await loginByMail(bin, ['--node', 'gpu'], env);
    expect(login.exitCode, login.stderr).toBe(0);
    const registered = await run(bin, ['--node', 'gpu', 'register', AGENT], { env });
    expect(registered.exitCode, registered.stderr).toBe(0);
    const daemon = execa(bin, ['--node', 'gpu', 'daemon', '--tick-ms', '100', '--backoff-ms', '400'], {
      env: cleanEnv(env),
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
    });
    try {
      const runs = (home: string) => {
        const file = join(home, 'var', 'swarm-node.db');
        if (!existsSync(file)) return [];
        const db = new Database(file, { readonly: true });
        try {
          return db.prepare('SELECT agent_id, status, result_status FROM executions').all() as { agent_id: string; status: string }[];
        } finally {
          db.close();
        }
      };
      // A run started with the user's JWT elsewhere (curl): only gpu serves the agent, so gpu's daemon runs it.
      // Until gpu's daemon polls, no node serving it is online (503); then the run goes to it.
      const started = await waitFor(
        async () => {
          const answer = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
            method: 'POST',
            token: credentials(gpuHome).jwt.token,
            headers: { 'idempotency-key': randomUUID() },
            body: { user_id: gpu.user_id, agent_id: AGENT },
          });
          return answer.status === 503 ? undefined : answer;
        },
        'gpu online and serving',
        60_000,
      );
      expect(started.body, started.text).toMatchObject({ status: 'succeeded', node_id: gpu.node_id });
      await waitFor(
        async () => (runs(gpuHome).some((row) => row.status === 'reported') ? true : undefined),
        "a reported run in gpu's database",
        30_000,
      );
      expect(runs(gpuHome)).toEqual([{ agent_id: AGENT, status: 'reported', result_status: 'succeeded' }]);
      expect(runs(defaultHome)).toEqual([]);
      // gpu's polls carry its name: the fleet view tells it apart from the host's other node.
      const fleet = await run(bin, ['--node', 'gpu', '--json', 'nodes'], { env });
      expect(
        fleet.json.nodes.find((node: { node_id: string }) => node.node_id === gpu.node_id),
        fleet.stdout,
      ).toMatchObject({ name: 'gpu', online: true });
      const table = await run(bin, ['--node', 'gpu', 'nodes'], { env });
      expect(table.stdout).toMatch(/ \(gpu\) /);
    } finally {
      daemon.kill('SIGTERM');
      await daemon;
    }
  });

  it('a second install --name gpu with a new deploy token is refused, names gpu, and changes nothing', async () => {
    const before = snapshot(root);
    const nodes = () => service.db.prepare('SELECT COUNT(*) AS n FROM nodes').get();
    const enrolled = nodes();
    const again = await install(['--name', 'gpu', '--deploy-token-file', await tokenFile('node-gpu-again')]);
    expect(again.exitCode).toBe(2);
    expect(nodes()).toEqual(enrolled);
    expect(again.stderr).toMatch(/node gpu is already installed here \(node [0-9a-f-]+\)/);
    expect(again.stderr).toMatch(/the same install with --name gpu-2, say/);
    expect(snapshot(root)).toEqual(before);
    // Its re-run without a token still converges (nothing to change).
    const rerun = await install(['--name', 'gpu']);
    expect(rerun.exitCode, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/^nothing to change/);
  });

  it.each([
    ['--name', '../gpu'],
    ['--name', 'a@b.service'],
    ['--node', 'x/y'],
  ])('a bad name (%s %s) is a usage error that writes nothing', async (flag, name) => {
    const before = snapshot(root);
    const result = flag === '--node' ? await swarmNode(['--node', name, '--json', 'status']) : await install([flag, name]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr + result.stdout).toContain('is not a node name');
    expect(snapshot(root)).toEqual(before);
  });

  it("gpu's uninstall.sh removes gpu alone: the default node, its units and the command link stay; a re-run of install brings gpu back", async () => {
    const before = outsideGpu();
    const removed = await run('sh', [join(gpuHome, 'uninstall.sh'), '--root', root]);
    expect(removed.exitCode, removed.stderr).toBe(0);
    for (const name of GPU_UNITS) expect(existsSync(join(root, 'etc/systemd/system', name)), name).toBe(false);
    expect(existsSync(join(gpuHome, 'releases'))).toBe(false);
    expect(existsSync(join(gpuHome, 'etc', 'credentials.json'))).toBe(true);
    expect(outsideGpu()).toEqual(before);
    // Enrolled still (its credential was kept): the re-run needs no token.
    const back = await install(['--name', 'gpu']);
    expect(back.exitCode, back.stderr).toBe(0);
    expect(existsSync(join(root, 'etc/systemd/system', GPU_UNITS[0]!))).toBe(true);
  });

  it("uninstall of the default node leaves nodes/ alone and points the command link at gpu's release", async () => {
    const gpuBefore = Object.entries(snapshot(root)).filter(([path]) => path.startsWith('opt/svc/swarm-node/nodes/'));
    const result = await run(bin, ['uninstall', '--root', root], { env: { SVC_BASE_URL: service.baseUrl } });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(Object.entries(snapshot(root)).filter(([path]) => path.startsWith('opt/svc/swarm-node/nodes/'))).toEqual(gpuBefore);
    for (const name of DEFAULT_UNITS) expect(existsSync(join(root, 'etc/systemd/system', name)), name).toBe(false);
    for (const name of GPU_UNITS) expect(existsSync(join(root, 'etc/systemd/system', name)), name).toBe(true);
    expect(readlinkSync(bin)).toBe('../../../opt/svc/swarm-node/nodes/gpu/current/bin/swarm-node');
  });

  it('uninstall --node gpu --purge, the last node: gpu and nodes/ go, and so does the command link; the default node keeps its data', async () => {
    const result = await run(bin, ['--node', 'gpu', 'uninstall', '--root', root, '--purge', '--yes'], {
      env: { SVC_BASE_URL: service.baseUrl },
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(existsSync(join(defaultHome, 'nodes'))).toBe(false);
    expect(existsSync(bin)).toBe(false);
    expect(existsSync(join(defaultHome, 'etc', 'credentials.json'))).toBe(true);
  });
});
