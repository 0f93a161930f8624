// The systemd mode under a real systemd (docs/operations.md "Agent isolation";
// docs/decisions/0026-systemd-mode-tested-in-a-container.md):
// a Debian root file system booted with systemd-nspawn, the release (with its Node runtime) installed in it twice, as
// the default node and as node gpu, each agent run then a svc-swarm-node-agent@ service started by the node's agent
// socket. Checked there: each agent of each node runs as a uid of its own, with no capability, and a hostile one
// cannot list, read or write another agent's state on its node or the other node's, signal another agent's run or
// become its uid, while that agent's runs go on; state a node's former dynamic user left is taken over by its agent;
// a run has no network (PrivateNetwork=, IPAddressDeny=any), but for an agent that asks for egress, whose runs its node's
// egress agent unit starts with the host's network (a built-in one of node gpu's too), and a node whose units predate
// the egress pair fails such a run naming the install that writes them, which works as printed; its TMPDIR is a 64 MiB tmpfs, and filling it fails the run
// disk_quota; its state is an image of its own mounted in its unit alone (the host's loop devices bound in), which a
// run fills to fail disk_quota with /var/lib untouched, two runs of one agent share, and state an earlier release
// kept moves into; a unit without CAP_SYS_ADMIN runs nothing and names the install that renders it; its artifacts
// directory is a tmpfs of 128 MiB whose files reach the service; the unit's cgroup limits are set on the running service. What the container cannot do is enforce
// those limits (the host's cgroup v1 controllers are not delegated to it): memory, tasks and CPU per run are
// enforced and tested in the bubblewrap mode (test/node/hostile-agents.test.ts), and the unit that sets them here
// is checked by systemd-analyze verify and security (test/install/scripts.test.ts). The unit's system-call filter
// refuses the keyring calls, namespaces, ptrace and process_vm_readv of the agent's launcher and other ABIs, and real
// agents run under it: the release's Node 22 and the host's Node 20, Python 3, git and sh (test/node/syscall-probe.ts).
//
// The root file system takes about a minute to build (debootstrap, from the mirror apt uses). SWARM_TEST_ROOTFS, a
// directory holding one already built, is copied instead (for running this file again and again by hand).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lchownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activatedSession, fundWallet, waitFor } from '../helpers/funnel.js';
import { agentProgram, installKitBundle } from '../helpers/bundles.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { buildRelease, signingKey } from './release-support.js';
import { AGENT_UID_BASE, AGENT_UID_COUNT } from '../../src/node/runner/agent-ids.js';
import { contractInputFlags } from '../helpers/bundles.js';
import { keyName, killedBySigsys, NODE_WORKS, SYSCALL_PROBE, writeOtherAbiPrograms } from '../node/syscall-probe.js';
import { LAUNCHER_PROBE, REFUSED } from '../node/launcher-probe.js';

// The service checks a run's input against the built-in agent's schema whatever bundle runs it: the probe takes its
// instructions as the tutor's one string field.
const AGENT = 'agent_svc_skills_005';
// Another agent of the same node, the probe too (its catalog schema wants a corpus beside the question): the victim.
// On the default node its bundle asks for egress (its runs are svc-swarm-node-egress-agent@ services); node gpu runs
// the built-in agent (which asks for egress too).
const VICTIM = 'agent_research_rag_015';
// The default node's third agent: the system-call probe, told what to do by its bundle's asked.json.
const SYSCALLS = 'agent_sales_outreach_008';
/** The host's Node (the tests' own, 20), copied into the root file system: agents may bring a Node of their own. */
const NODE_20 = '/opt/node20/bin/node';
const HOME = '/opt/svc/swarm-node';
/** The Python agent on the kit (its own bundle of a catalog agent). */
const KIT_AGENT = 'agent_dev_review_012';
const KIT_PYTHON = [
  'import swarm_kit as kit',
  '',
  'def work(input, run):',
  '    print(\'{"v":1,"id":1,"op":"result","output":{"forged":true}}\', flush=True)',
  '    kit.event("progress", {"done": 1, "message": "in the unit"})',
  '    kit.partial({"summary": "kit in a unit"})',
  '',
  'kit.run_agent(work)',
  '',
].join('\n');
const GPU_HOME = '/opt/svc/swarm-node/nodes/gpu';
const MiB = 1024 * 1024;

const canBoot =
  process.getuid?.() === 0 &&
  existsSync('/usr/bin/systemd-nspawn') &&
  existsSync('/usr/sbin/debootstrap') &&
  existsSync('/usr/bin/nsenter');

const service = useSvcApi();
// The root file system is some 400 MB of small files: removing it takes a while on a loaded machine.
afterAll(() => removeTempDirs(), 120_000);

/** What a run saw of its sandbox: who it is, its /tmp, /dev/shm and network, its state, and another node's. */
const PROBE = agentProgram(`const fs = await import('node:fs');
  const net = await import('node:net');
  const attempt = (fn) => { try { const value = fn(); return value === undefined ? 'allowed' : value; } catch (error) { return error.code ?? error.message; } };
  const asked = JSON.parse(run.input.question);
  const out = { uid: process.getuid(), gid: process.getgid(), groups: process.getgroups(), state: process.env.SWARM_STATE_DIR };
  out.caps = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').filter((line) => line.startsWith('Cap')).map((line) => line.split(/:\\s+/)));
  if (asked.fill) { try { for (let i = 0; ; i += 1) fs.writeFileSync(process.env.TMPDIR + '/fill-' + i, Buffer.alloc(1 << 20, 1)); } catch (error) { out.fill = error.code; } }
  out.tmp_root = attempt(() => fs.writeFileSync('/tmp/outside', 'x'));
  if (asked.write) fs.writeFileSync(process.env.SWARM_STATE_DIR + '/secret', asked.write);
  if (asked.read) out.read = attempt(() => fs.readFileSync(asked.read, 'utf8'));
  if (asked.reads) out.reads = asked.reads.map((path) => attempt(() => fs.readFileSync(path, 'utf8')));
  if (asked.own) out.own = asked.own.map((name) => attempt(() => fs.readFileSync(process.env.SWARM_STATE_DIR + '/' + name, 'utf8')));
  if (asked.lstat) out.lstat = asked.lstat.map((name) => attempt(() => { const s = fs.lstatSync(process.env.SWARM_STATE_DIR + '/' + name); return [s.uid, s.isSymbolicLink()]; }));
  if (asked.clear_state) for (const name of fs.readdirSync(process.env.SWARM_STATE_DIR)) if (name.startsWith('fill-')) fs.rmSync(process.env.SWARM_STATE_DIR + '/' + name);
  if (asked.fill_state) { try { for (let i = 0; ; i += 1) fs.writeFileSync(process.env.SWARM_STATE_DIR + '/fill-' + i, Buffer.alloc(1 << 20, 1)); } catch (error) { out.fill_state = error.code; } }
  const stateFs = fs.statfsSync(process.env.SWARM_STATE_DIR);
  out.state_bytes = stateFs.blocks * stateFs.bsize;
  out.state_used = (stateFs.blocks - stateFs.bfree) * stateFs.bsize;
  if (asked.pidfile) fs.writeFileSync(process.env.SWARM_STATE_DIR + '/pid', String(process.pid));
  if (asked.attack) {
    const { dir, pids, uid } = asked.attack;
    out.attack = {
      list: attempt(() => fs.readdirSync(dir)),
      list_parent: attempt(() => fs.readdirSync(dir + '/..')),
      read: attempt(() => fs.readFileSync(dir + '/secret', 'utf8')),
      write: attempt(() => fs.writeFileSync(dir + '/planted', 'x')),
      signal: pids.map((pid) => attempt(() => { process.kill(pid, 'SIGKILL'); })),
      setuid: attempt(() => process.setuid(uid)),
      claims: attempt(() => fs.readdirSync('/var/lib/svc-swarm-node/agent-uids')),
      images: attempt(() => fs.readdirSync(dir + '/../.images')),
    };
  }
  const size = (path) => { const s = fs.statfsSync(path); return s.blocks * s.bsize; };
  out.tmp_bytes = size(process.env.TMPDIR);
  out.shm_bytes = size('/dev/shm');
  if (asked.artifact) fs.writeFileSync(process.env.SWARM_ARTIFACTS_DIR + '/probe.txt', asked.artifact);
  out.artifacts_bytes = size(process.env.SWARM_ARTIFACTS_DIR);
  out.connect = await new Promise((resolve) => { const s = net.connect(asked.port, '127.0.0.1', () => { s.destroy(); resolve('connected'); }); s.on('error', (e) => resolve(e.code)); });
  if (asked.hold) await new Promise((resolve) => { const poll = setInterval(() => { if (fs.existsSync(asked.hold)) { clearInterval(poll); resolve(); } }, 50); });
  process.stdout.write(JSON.stringify({ summary: 'probed', ...out }));`);

describe.skipIf(!canBoot)('the systemd mode, under systemd in systemd-nspawn', { timeout: 120_000 }, () => {
  let root: string;
  let container: Container;
  let port: number;

  beforeAll(async () => {
    port = Number(new URL(service.baseUrl).port);
    root = join(tempDir('nspawn-'), 'root');
    const [release] = await Promise.all([buildRelease(signingKey('nspawn'), { runtime: true }), makeRootfs(root)]);
    mkdirSync(join(root, 'opt', 'swarm-release'), { recursive: true });
    await execa('tar', ['-xzf', release.artifact.path, '-C', join(root, 'opt', 'swarm-release'), '--strip-components=1']);
    const tokens: string[] = [];
    for (const label of ['nspawn-default', 'nspawn-gpu']) {
      const email = uniqueEmail(label);
      tokens.push((await activatedSession(service.baseUrl, email)).deploy_token);
      await fundWallet(service.baseUrl, email, 200);
    }
    tokens.forEach((token, index) => writeFileSync(join(root, 'root', `token-${index}`), `${token}\n`, { mode: 0o600 }));
    leaveDynamicUserState(root);
    container = await Container.boot(root, service.baseUrl);
    for (const [index, name] of [
      [0, undefined],
      [1, 'gpu'],
    ] as const) {
      const install = await container.exec([
        '/opt/swarm-release/bin/swarm-node',
        'install',
        '--from',
        '/opt/swarm-release',
        '--deploy-token-file',
        `/root/token-${index}`,
        ...(name === undefined ? [] : ['--name', name]),
      ]);
      expect(install.exitCode, install.stderr + install.stdout).toBe(0);
    }
    // Each node runs the probe as its own bundle of AGENT (the home's agents/ comes before the release's).
    for (const [home, agent] of [
      [HOME, AGENT],
      [HOME, VICTIM],
      [GPU_HOME, AGENT],
    ] as const) {
      mkdirSync(join(root, home, 'agents', agent), { recursive: true });
      const network = agent === VICTIM ? { network: 'egress' } : {};
      writeFileSync(
        join(root, home, 'agents', agent, 'agent.json'),
        JSON.stringify({
          agent_id: agent,
          version: '0.0.0-test',
          entry: ['node', 'main.mjs'],
          input_schema: { type: 'object' },
          ...network,
        }),
      );
      writeFileSync(join(root, home, 'agents', agent, 'main.mjs'), PROBE);
    }
    mkdirSync(join(root, HOME, 'agents', SYSCALLS), { recursive: true });
    writeFileSync(join(root, HOME, 'agents', SYSCALLS, 'main.mjs'), SYSCALL_PROBE);
    // An agent on the kit's Python module, under the agent unit's filter with the container's python3.
    installKitBundle(join(root, HOME), KIT_AGENT, { 'main.py': KIT_PYTHON }, ['python3', 'main.py']);
    mkdirSync(join(root, NODE_20, '..'), { recursive: true });
    copyFileSync(process.execPath, join(root, NODE_20));
  }, 600_000);

  afterAll(async () => {
    await container?.stop();
  }, 120_000);

  /** `swarm-node run` on a node of the container: the run goes through its agent socket to an agent unit. */
  async function probe(node: string | undefined, input: Record<string, unknown>, agent: string = AGENT): Promise<Record<string, unknown>> {
    const question = JSON.stringify({ port, ...input });
    const corpus = agent === VICTIM ? ['--input', 'corpus=/srv'] : [];
    const result = await container.exec([
      'swarm-node',
      ...(node === undefined ? [] : ['--node', node]),
      '--json',
      'run',
      agent,
      '--input',
      `question=${question}`,
      ...corpus,
    ]);
    expect(result.stdout, result.stderr).not.toBe('');
    // A failed run is the command's error (exit 1), carrying the run's charge and output.
    const answer = JSON.parse(result.stdout) as Record<string, unknown>;
    return answer.error === undefined ? answer : { status: 'failed', ...(answer.error as Record<string, unknown>) };
  }

  it("each node's agent runs as a uid of its own with no capability, no network, TMPDIR and /dev/shm of 64 MiB, and cannot read the other node's state", async () => {
    const first = await probe(undefined, { write: 'default node', artifact: 'written in the unit' });
    expect(first, JSON.stringify(first)).toMatchObject({
      status: 'succeeded',
      output: { state: `/var/lib/svc-swarm-node-agents/${AGENT}` },
    });
    const seen = first.output as Record<string, unknown>;
    // The host's agent uids (runner/agent-ids.ts), a gid of the same number and no other group.
    expect(seen.uid).toBeGreaterThanOrEqual(AGENT_UID_BASE);
    expect(seen.uid).toBeLessThan(AGENT_UID_BASE + AGENT_UID_COUNT);
    expect(seen).toMatchObject({ gid: seen.uid, groups: [seen.uid] });
    // agent-exec's capabilities went with uid 0: the agent holds none, and none is in a set it could raise them from.
    expect(seen.caps).toMatchObject({
      CapInh: '0000000000000000',
      CapPrm: '0000000000000000',
      CapEff: '0000000000000000',
      CapAmb: '0000000000000000',
    });
    const state = statSync(join(root, `/var/lib/svc-swarm-node-agents/${AGENT}`));
    expect([state.uid, state.mode & 0o7777]).toEqual([seen.uid, 0o700]);
    expect(statSync(join(root, '/var/lib/svc-swarm-node-agents')).mode & 0o7777).toBe(0o711);
    // Its claim on this host: its node's home and agent, and its state, which outlives an uninstall of the home.
    const claims = join(root, '/var/lib/svc-swarm-node/agent-uids');
    expect(statSync(claims).mode & 0o7777).toBe(0o700);
    expect(JSON.parse(readFileSync(join(claims, String(seen.uid)), 'utf8'))).toEqual({
      home: HOME,
      agent_id: AGENT,
      keeps: `/var/lib/svc-swarm-node-agents/${AGENT}`,
    });
    expect(seen.tmp_bytes).toBe(64 * MiB);
    // Nothing it writes lands outside its caps: the unit's private /tmp on the host's /tmp is read-only.
    expect(seen.tmp_root).toBe('EROFS');
    expect(seen.shm_bytes).toBe(64 * MiB);
    // Its state is its image's filesystem: 256 MiB and the margin (runner/state-image.ts), not the host's /var/lib.
    expect(seen.state_bytes).toBeGreaterThan(250 * MiB);
    expect(seen.state_bytes).toBeLessThan(330 * MiB);
    const status = JSON.parse((await container.exec(['swarm-node', '--json', 'status'])).stdout) as {
      node: { isolation_cannot: string[] };
    };
    expect(status.node.isolation_cannot).toEqual([]);
    // Its artifacts directory is the unit's tmpfs of a run's artifacts; agent-exec sent the file over the connection.
    expect(seen.artifacts_bytes).toBe(128 * MiB);
    expect(service.db.prepare('SELECT name, size_bytes FROM run_artifacts WHERE run_id = ?').all(first.run_id)).toEqual([
      { name: 'probe.txt', size_bytes: 'written in the unit'.length },
    ]);
    // PrivateNetwork=: its own loopback only; the host's service (on the host's loopback) is out of reach.
    expect(seen.connect).toMatch(/^E[A-Z]+$/);

    // Node gpu was "upgraded": its agent's state is what the node's former dynamic user left (leaveDynamicUserState).
    const gpu = await probe('gpu', {
      read: `/var/lib/svc-swarm-node-agents/${AGENT}/secret`,
      own: ['secret', 'deep/inner'],
      lstat: ['secret', 'deep', 'deep/inner', 'shadow', 'version'],
    });
    expect(gpu, JSON.stringify(gpu)).toMatchObject({
      status: 'succeeded',
      output: { state: `/var/lib/svc-swarm-node-agents-gpu/${AGENT}` },
    });
    const other = gpu.output as Record<string, unknown>;
    expect(other.uid).not.toBe(seen.uid);
    expect(other.read).toBe('EACCES');
    // Its first run took the tree over and moved it into its state image, as its uid: its files are its own, a link
    // stays a link, and what links pointed at elsewhere is as it was.
    expect(other.own).toEqual(['left by the dynamic user', 'deep down']);
    expect(other.lstat).toEqual([
      [other.uid, false],
      [other.uid, false],
      [other.uid, false],
      [other.uid, true],
      [other.uid, false],
    ]);
    const gpuState = join(root, `/var/lib/svc-swarm-node-agents-gpu/${AGENT}`);
    expect(lstatSync(gpuState).uid).toBe(other.uid);
    expect(readdirSync(gpuState)).toEqual([]);
    expect(statSync(join(root, 'etc/shadow')).uid).toBe(0);
    expect(statSync(join(root, 'etc/debian_version')).uid).toBe(0);
    // The image, root's, in a directory root's alone; sparse: on disk, what was written.
    const images = join(root, '/var/lib/svc-swarm-node-agents-gpu/.images');
    expect([statSync(images).uid, statSync(images).mode & 0o7777]).toEqual([0, 0o700]);
    const image = statSync(join(images, `${AGENT}.img`));
    expect([image.uid, image.mode & 0o7777]).toEqual([0, 0o600]);
    expect(image.blocks * 512).toBeLessThan(64 * MiB);
    // The state the first run wrote is there for the next run of its own node.
    const again = await probe(undefined, { read: `/var/lib/svc-swarm-node-agents/${AGENT}/secret` });
    expect(again).toMatchObject({ status: 'succeeded', output: { read: 'default node' } });
  });

  it('no run reads a file of another node home (docs/operations.md "What each mode holds": other tenants): not the installed node\'s, not a sibling named node\'s, not a home elsewhere that the uid claims name', async () => {
    // A home elsewhere whose agent ran here (a root node under bubblewrap): its claim names it; and a named node
    // installed after these units were rendered. Their files are world-readable, as a home's etc/config.json is.
    const elsewhere = '/srv/elsewhere-home';
    const spare = `${HOME}/nodes/spare`;
    for (const home of [elsewhere, spare]) {
      mkdirSync(join(root, home, 'etc'), { recursive: true, mode: 0o755 });
      writeFileSync(join(root, home, 'etc', 'config.json'), '{"node_id":"planted"}', { mode: 0o644 });
    }
    mkdirSync(join(root, '/var/lib/svc-swarm-node/agent-uids'), { recursive: true, mode: 0o700 });
    const claim = join(root, '/var/lib/svc-swarm-node/agent-uids', String(AGENT_UID_BASE + AGENT_UID_COUNT - 1));
    writeFileSync(claim, JSON.stringify({ home: elsewhere, agent_id: AGENT, keeps: `${elsewhere}/var/state/${AGENT}` }), { mode: 0o600 });
    try {
      const targets = [
        `${elsewhere}/etc/config.json`,
        `${HOME}/etc/config.json`,
        `${GPU_HOME}/etc/config.json`,
        `${spare}/etc/config.json`,
      ];
      for (const node of [undefined, 'gpu']) {
        const seen = await probe(node, { reads: targets });
        expect(seen, JSON.stringify(seen)).toMatchObject({ status: 'succeeded' });
        const reads = (seen.output as { reads: unknown[] }).reads;
        // Each an error code (gone from sight, or not to be entered), never the file.
        reads.forEach((read, index) => expect(read, `${node ?? 'default'} node's agent reading ${targets[index]}`).toMatch(/^E[A-Z]+$/));
      }
    } finally {
      rmSync(claim, { force: true });
      for (const home of [elsewhere, spare]) rmSync(join(root, home), { recursive: true, force: true });
    }
  });

  it("a hostile agent cannot list, read or write another agent's state on its node, signal its run or take its uid, and that agent's runs go on", async () => {
    const victimState = `/var/lib/svc-swarm-node-agents/${VICTIM}`;
    const hold = '/opt/victim-hold';
    const victimRun = probe(undefined, { write: 'the index of a corpus only the victim reads', pidfile: true, hold }, VICTIM);
    // The victim's agent (its pid as the container sees it) and its unit's agent-exec, while it runs. Its state is an
    // image mounted in its unit's mount namespace alone: the pid file is read in there.
    const unit = await runningAgentUnit('svc-swarm-node-egress-agent@*');
    const execPid = Number((await container.exec(['systemctl', 'show', unit, '-p', 'MainPID', '--value'])).stdout.trim());
    const agentPid = await waitFor(
      async () => {
        const read = await container.exec(['nsenter', '-t', String(execPid), '-m', 'cat', `${victimState}/pid`]);
        return read.exitCode === 0 && read.stdout !== '' ? Number(read.stdout) : undefined;
      },
      'the victim to start',
      60_000,
    );
    const victimUid = statSync(join(root, victimState)).uid;

    const hostile = await probe(undefined, { attack: { dir: victimState, pids: [agentPid, execPid], uid: victimUid } });
    writeFileSync(join(root, hold), '');
    expect(hostile, JSON.stringify(hostile)).toMatchObject({ status: 'succeeded' });
    const seen = hostile.output as Record<string, unknown>;
    expect(seen.uid).not.toBe(victimUid);
    expect(seen.attack).toEqual({
      list: 'EACCES',
      list_parent: 'EACCES',
      read: 'EACCES',
      write: 'EACCES',
      signal: ['EPERM', 'EPERM'],
      setuid: 'EPERM',
      claims: 'EACCES',
      images: 'EACCES',
    });

    const victim = await victimRun;
    expect(victim, JSON.stringify(victim)).toMatchObject({ status: 'succeeded', output: { uid: victimUid } });
    // On the host, its directory is the mount point its image goes over: empty.
    expect(readdirSync(join(root, victimState))).toEqual([]);
    const again = await probe(undefined, { own: ['secret'] }, VICTIM);
    expect(again).toMatchObject({ status: 'succeeded', output: { uid: victimUid, own: ['the index of a corpus only the victim reads'] } });
  });

  it("an agent that asks for egress runs in its node's egress unit, as a uid of its own, and reaches the host's loopback; one that does not cannot", async () => {
    const hold = '/opt/egress-hold';
    const running = probe(undefined, { hold }, VICTIM);
    const unit = await runningAgentUnit('svc-swarm-node-egress-agent@*');
    const shown = await container.exec([
      'systemctl',
      'show',
      unit,
      '-p',
      'PrivateNetwork,IPAddressDeny,MemoryMax,TasksMax,RestrictAddressFamilies',
    ]);
    writeFileSync(join(root, hold), '');
    const properties = Object.fromEntries(
      shown.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    // The agent unit's limits and filters, the host's network.
    expect(properties, shown.stdout).toMatchObject({
      PrivateNetwork: 'no',
      IPAddressDeny: '',
      MemoryMax: String(512 * MiB),
      TasksMax: '64',
    });
    expect(properties.RestrictAddressFamilies?.split(' ').sort()).toEqual(['AF_INET', 'AF_INET6', 'AF_UNIX']);
    const egress = await running;
    expect(egress, JSON.stringify(egress)).toMatchObject({
      status: 'succeeded',
      output: { state: `/var/lib/svc-swarm-node-agents/${VICTIM}`, connect: 'connected' },
    });
    const seen = egress.output as Record<string, unknown>;
    expect(seen.uid).toBeGreaterThanOrEqual(AGENT_UID_BASE);
    expect(seen.caps).toMatchObject({ CapEff: '0000000000000000', CapPrm: '0000000000000000' });
    expect(seen.tmp_bytes).toBe(64 * MiB);
    // The same listener (the service, on the loopback the container shares with the host), from a `none` agent.
    const none = await probe(undefined, {});
    expect(none, JSON.stringify(none)).toMatchObject({ status: 'succeeded' });
    expect((none.output as Record<string, unknown>).connect).toMatch(/^E[A-Z]+$/);
  });

  it('node gpu runs the built-in RAG agent (egress) in its egress unit; with its units as a release before them left it, the run fails naming the install that writes them, which works as printed', async () => {
    mkdirSync(join(root, 'srv/corpus'), { recursive: true });
    writeFileSync(
      join(root, 'srv/corpus/ops.md'),
      '# Backups\n\nThe nightly backup runs at two in the morning and keeps fourteen copies.\n',
    );
    const ask = () =>
      container.exec([
        'swarm-node',
        '--node',
        'gpu',
        '--json',
        'run',
        VICTIM,
        '--input',
        'corpus=/srv/corpus',
        '--input',
        'question=When does the nightly backup run?',
      ]);
    const answered = await ask();
    expect(answered.exitCode, answered.stdout + answered.stderr).toBe(0);
    expect(JSON.parse(answered.stdout)).toMatchObject({
      status: 'succeeded',
      output: { answer: { found: true, citations: [{ file: 'ops.md' }] } },
    });

    // As an older swarm-node upgrading to this release leaves it: no egress pair (and a daemon unit that wants none).
    const gpuUnits = ['svc-swarm-node-egress-agent-gpu.socket', 'svc-swarm-node-egress-agent-gpu@.service'];
    expect((await container.exec(['systemctl', 'stop', gpuUnits[0]!])).exitCode).toBe(0);
    expect((await container.exec(['rm', ...gpuUnits.map((name) => `/etc/systemd/system/${name}`)])).exitCode).toBe(0);
    expect((await container.exec(['systemctl', 'daemon-reload'])).exitCode).toBe(0);
    const refused = await ask();
    expect(refused.exitCode).toBe(1);
    const error = (JSON.parse(refused.stdout) as { error: { charged_cents: number; output: { error: string; message: string } } }).error;
    expect(error, refused.stdout).toMatchObject({ charged_cents: 0, output: { error: 'spawn' } });
    expect(error.output.message).toContain("this node's systemd units predate egress runs");
    const fix = /run, as root: ([^)]+)\)/.exec(error.output.message)?.[1];
    expect(fix).toBe('swarm-node install --name gpu');
    // status says so too, and no longer once the fix ran.
    const cannot = async () =>
      (
        JSON.parse((await container.exec(['swarm-node', '--node', 'gpu', '--json', 'status'])).stdout) as {
          node: { isolation_cannot: string[] };
        }
      ).node.isolation_cannot;
    expect(await cannot()).toEqual(expect.arrayContaining([expect.stringContaining('swarm-node install --name gpu')]));
    const installed = await container.exec(fix!.split(' '));
    expect(installed.exitCode, installed.stdout + installed.stderr).toBe(0);
    expect((await cannot()).filter((line) => line.includes('egress'))).toEqual([]);
    const again = await ask();
    expect(again.exitCode, again.stdout + again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'succeeded', output: { answer: { found: true } } });
  });

  it("a node whose agent unit predates state images runs no agent, naming the install that renders it, which works as printed; its state is then the image's", async () => {
    // As a release before state images rendered it: no CAP_SYS_ADMIN.
    const unitFile = '/etc/systemd/system/svc-swarm-node-agent-gpu@.service';
    const rendered = readFileSync(join(root, unitFile), 'utf8');
    writeFileSync(
      join(root, unitFile),
      rendered.replace(/^CapabilityBoundingSet=.*$/m, 'CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL'),
    );
    expect((await container.exec(['systemctl', 'daemon-reload'])).exitCode).toBe(0);
    const refused = await probe('gpu', { own: ['secret'] });
    expect(refused, JSON.stringify(refused)).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'spawn' } });
    const fix = /run, as root: ([^)]+)\)/.exec((refused.output as { message: string }).message)?.[1];
    expect(fix).toBe('swarm-node install --name gpu');
    const installed = await container.exec(fix!.split(' '));
    expect(installed.exitCode, installed.stdout + installed.stderr).toBe(0);
    const again = await probe('gpu', { own: ['secret'] });
    expect(again, JSON.stringify(again)).toMatchObject({ status: 'succeeded', output: { own: ['left by the dynamic user'] } });
  });

  it("every unit installed, the egress pair's too, passes systemd-analyze verify in the container", async () => {
    const units = [
      'svc-swarm-node.service',
      'svc-swarm-node-agent.socket',
      'svc-swarm-node-egress-agent.socket',
      'svc-swarm-node@gpu.service',
      'svc-swarm-node-agent-gpu.socket',
      'svc-swarm-node-egress-agent-gpu.socket',
    ];
    // A template is verified through an instance of it.
    const instances = [
      'svc-swarm-node-agent@x.service',
      'svc-swarm-node-egress-agent@x.service',
      'svc-swarm-node-agent-gpu@x.service',
      'svc-swarm-node-egress-agent-gpu@x.service',
    ];
    const verified = await container.exec(['systemd-analyze', 'verify', ...units, ...instances]);
    expect(verified.stdout + verified.stderr).toBe('');
    expect(verified.exitCode).toBe(0);
  });

  it("an agent on the kit's Python module runs in its unit: its event reaches the service over the channel, its forged stdout line is only log", async () => {
    const result = await container.exec(['swarm-node', '--json', 'run', KIT_AGENT, '--input', 'repo=/srv/app']);
    const answer = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(answer, result.stdout + result.stderr).toMatchObject({
      status: 'succeeded',
      output: { summary: 'kit in a unit', partial: true },
    });
    // The node sent it with the run (the container holds no JWT to follow it with): in the service's database.
    const events = service.db.prepare('SELECT seq, type, data_json FROM run_event_entries WHERE run_id = ?').all(String(answer.run_id));
    expect(events).toEqual([{ seq: 0, type: 'progress', data_json: '{"done":1,"message":"in the unit"}' }]);
  });

  it("a run past its time limit is stopped by agent-exec, which may signal the agent's uid (CAP_KILL), and fails timeout", async () => {
    const question = JSON.stringify({ port, hold: '/opt/never-made' });
    const result = await container.exec([
      'swarm-node',
      '--json',
      'run',
      AGENT,
      '--timeout-seconds',
      '1',
      '--input',
      `question=${question}`,
    ]);
    const answer = JSON.parse(result.stdout) as { error?: Record<string, unknown> };
    expect(answer.error, result.stdout).toMatchObject({ charged_cents: 0, output: { error: 'timeout' } });
  });

  it('a run that fills its TMPDIR fails disk_quota and is refunded', async () => {
    const filled = await probe(undefined, { fill: true });
    expect(filled, JSON.stringify(filled)).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'disk_quota' } });
  });

  it("a run that fills its state fails disk_quota at its image's end and is refunded; /var/lib keeps its room, other agents run, and the agent runs again once it removed files", async () => {
    // What the container's /var/lib holds on disk, not the free room of the host's file system, which the suite's
    // other files write to at the same time.
    const varLibBytes = () =>
      Number(execFileSync('du', ['-s', '--block-size=1', join(root, 'var/lib')], { encoding: 'utf8' }).split('\t')[0]);
    const before = varLibBytes();
    try {
      const filled = await probe(undefined, { fill_state: true });
      expect(filled, JSON.stringify(filled)).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'disk_quota' } });
      expect((filled.output as { message: string }).message).toContain('its state directory');
      // What the run could write is its image's room (320 MiB for the cap of 256), not the host's.
      expect(varLibBytes() - before).toBeLessThan(330 * MiB);
      const other = await probe(undefined, { own: ['secret'] }, VICTIM);
      expect(other, JSON.stringify(other)).toMatchObject({ status: 'succeeded' });
      // Over its cap, its next run fails too, until it removes what it wrote.
      const over = await probe(undefined, {});
      expect(over, JSON.stringify(over)).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'disk_quota' } });
    } finally {
      // Cleared whatever failed above, so the tests after this one find the agent's state with room.
      const cleared = await probe(undefined, { clear_state: true, own: ['secret'] });
      expect(cleared, JSON.stringify(cleared)).toMatchObject({ status: 'succeeded', output: { own: ['default node'] } });
    }
  });

  it('two runs of one agent at once share its state: one file system, whichever unit mounted it first', async () => {
    const hold = '/opt/twice-hold';
    const runs = [probe(undefined, { write: 'first of two', hold }), probe(undefined, { hold })];
    await waitFor(
      async () =>
        (await container.exec(['systemctl', 'list-units', '--plain', '--no-legend', 'svc-swarm-node-agent@*'])).stdout.match(/\.service/g)
          ?.length === 2
          ? true
          : undefined,
      'two agent units',
      60_000,
    );
    writeFileSync(join(root, hold), '');
    for (const result of await Promise.all(runs)) expect(result, JSON.stringify(result)).toMatchObject({ status: 'succeeded' });
    const after = await probe(undefined, { own: ['secret'] });
    expect(after).toMatchObject({ status: 'succeeded', output: { own: ['first of two'] } });
  });

  it('system calls, keyrings (docs/operations.md "What each mode holds"): an agent\'s add_key is refused and its next run finds no key, namespaces and other ABIs are refused; Node 22 and 20, Python, git and sh run', async (context) => {
    const missing = ['python3', 'git'].filter((tool) => !existsSync(join(root, 'usr/bin', tool)));
    if (missing.length > 0) {
      process.stdout.write(`skipped: ${missing.join(' and ')} not in the root file system (a SWARM_TEST_ROOTFS made without them)\n`);
      context.skip();
      return;
    }
    const bundle = join(root, HOME, 'agents', SYSCALLS);
    const programs = writeOtherAbiPrograms(bundle);
    const probeWith = async (node: string, asked: Record<string, unknown>) => {
      const manifest = { agent_id: SYSCALLS, version: '0.0.0-test', entry: [node, 'main.mjs'], input_schema: { type: 'object' } };
      writeFileSync(join(bundle, 'agent.json'), JSON.stringify(manifest));
      writeFileSync(join(bundle, 'asked.json'), JSON.stringify(asked));
      const result = await container.exec(['swarm-node', '--json', 'run', SYSCALLS, ...contractInputFlags(SYSCALLS)]);
      return JSON.parse(result.stdout || '{}') as Record<string, unknown>;
    };
    const key = keyName();
    const refused = { unshare_user: 'EPERM', clone_newuser: 'EPERM', ptrace_launcher: 'EPERM', clone3: 'ENOSYS' };
    const works = { process_vm_readv_launcher: 'EPERM', threads: 6, multiprocessing: 285, subprocess: '42' };
    // The release's runtime (node: the daemon's own).
    const first = await probeWith('node', { keyring: 'add', key, programs });
    expect(first, JSON.stringify(first)).toMatchObject({
      status: 'succeeded',
      output: { node: expect.stringMatching(/^v22\./), ...NODE_WORKS, git: 'probe', sh: '42', python: { add_key: 'EPERM', ...refused } },
    });
    expect((first.output as { python: unknown }).python).toMatchObject(works);
    // SystemCallArchitectures=native: systemd's filter kills a call of another ABI.
    expect((first.output as { programs: unknown }).programs).toEqual(killedBySigsys(programs));
    const next = await probeWith(NODE_20, { keyring: 'find', key });
    expect(next, JSON.stringify(next)).toMatchObject({
      status: 'succeeded',
      output: { node: expect.stringMatching(/^v20\./), ...NODE_WORKS, python: { keyctl_search: 'EPERM', request_key: 'EPERM', ...works } },
    });
  });

  it('the run\'s launcher (docs/operations.md "What each mode holds"): root and out of the agent\'s sight, so no report it forges reaches the node: a full TMPDIR fails the run disk_quota', async () => {
    const bundle = join(root, HOME, 'agents', SYSCALLS);
    const manifest = { agent_id: SYSCALLS, version: '0.0.0-test', entry: ['node', 'main.mjs'], input_schema: { type: 'object' } };
    writeFileSync(join(bundle, 'agent.json'), JSON.stringify(manifest));
    writeFileSync(join(bundle, 'main.mjs'), LAUNCHER_PROBE);
    const probeWith = async (asked: Record<string, unknown>) => {
      writeFileSync(join(bundle, 'asked.json'), JSON.stringify(asked));
      const result = await container.exec(['swarm-node', '--json', 'run', SYSCALLS, ...contractInputFlags(SYSCALLS)]);
      const answer = JSON.parse(result.stdout || '{}') as Record<string, unknown>;
      return answer.error === undefined ? answer : { status: 'failed', ...(answer.error as Record<string, unknown>) };
    };
    try {
      const seen = await probeWith({});
      // ProtectProc=invisible: /proc shows the agent no process of another uid; its parent, the launcher, is root's.
      const refused = { mem: REFUSED, environ: REFUSED, signal: REFUSED, ptrace: REFUSED };
      expect(seen, JSON.stringify(seen)).toMatchObject({
        status: 'succeeded',
        output: { parent: 'not visible', launchers: 0, inject: 'no launcher in sight', parent_reached: refused },
      });
      expect((seen.output as { reached: unknown }).reached).toEqual({});
      const filled = await probeWith({ fill: true });
      expect(filled, JSON.stringify(filled)).toMatchObject({
        status: 'failed',
        output: { error: 'disk_quota', message: expect.stringContaining('(/tmp/run,') },
      });
    } finally {
      writeFileSync(join(bundle, 'main.mjs'), SYSCALL_PROBE);
    }
  });

  /** The one agent unit running on the default node (a test runs one at a time); `units`: the egress agents' instead. */
  function runningAgentUnit(units = 'svc-swarm-node-agent@*'): Promise<string> {
    return waitFor(
      async () => {
        const list = await container.exec(['systemctl', 'list-units', '--plain', '--no-legend', units]);
        return list.stdout
          .split('\n')
          .map((line) => line.trim().split(/\s+/)[0])
          .find((name) => name?.endsWith('.service'));
      },
      'a running agent unit',
      60_000,
    );
  }

  it("a running agent unit carries the runner's limits (set by systemd, enforced by the host's cgroups outside this container)", async () => {
    const hold = '/opt/release-hold';
    const running = probe(undefined, { hold });
    const unit = await runningAgentUnit();
    const shown = await container.exec([
      'systemctl',
      'show',
      unit,
      '-p',
      'MemoryMax,MemorySwapMax,TasksMax,CPUQuotaPerSecUSec,IPAddressAllow,IPAddressDeny,DynamicUser,OOMPolicy',
    ]);
    writeFileSync(join(root, hold), '');
    // systemd lists an address set in no fixed order.
    const properties = shown.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.replace(/^(IPAddress\w+=)(.*)$/, (_, key: string, value: string) => key + value.split(' ').sort().join(' ')));
    expect(properties.sort()).toEqual(
      [
        `MemoryMax=${512 * MiB}`,
        'MemorySwapMax=0',
        'TasksMax=64',
        'CPUQuotaPerSecUSec=1s',
        'IPAddressAllow=127.0.0.0/8 ::1/128',
        'IPAddressDeny=0.0.0.0/0 ::/0',
        'DynamicUser=no',
        'OOMPolicy=continue',
      ].sort(),
    );
    expect((await running).status).toBe('succeeded');
  });
});

/**
 * Node gpu's agent state as a release before agents had uids of their own left it: the agent unit's dynamic user
 * (a uid of systemd's DynamicUser range) owning /var/lib/private/svc-swarm-node-agents-gpu, reached through a link,
 * with a directory of mode 0000 in it, a link to /etc/shadow and a hard link of /etc/debian_version (which another agent
 * could have planted while the node's agents shared that user).
 */
function leaveDynamicUserState(root: string): void {
  const dynamicUid = 61_999;
  const top = join(root, 'var/lib/private/svc-swarm-node-agents-gpu');
  const dir = join(top, AGENT);
  mkdirSync(join(dir, 'deep'), { recursive: true, mode: 0o700 });
  chmodSync(join(root, 'var/lib/private'), 0o700);
  writeFileSync(join(dir, 'secret'), 'left by the dynamic user', { mode: 0o600 });
  writeFileSync(join(dir, 'deep/inner'), 'deep down', { mode: 0o600 });
  symlinkSync('/etc/shadow', join(dir, 'shadow'));
  // A file install leaves alone (useradd replaces /etc/gshadow, for one), so the link stays one.
  linkSync(join(root, 'etc/debian_version'), join(dir, 'version'));
  for (const path of [top, dir, join(dir, 'secret'), join(dir, 'deep'), join(dir, 'deep/inner'), join(dir, 'shadow')])
    lchownSync(path, dynamicUid, dynamicUid);
  chmodSync(join(dir, 'deep'), 0o000);
  symlinkSync('private/svc-swarm-node-agents-gpu', join(root, 'var/lib/svc-swarm-node-agents-gpu'));
}

/** A Debian root file system with systemd: built by debootstrap, or copied from SWARM_TEST_ROOTFS. */
async function makeRootfs(root: string): Promise<void> {
  const cached = process.env.SWARM_TEST_ROOTFS;
  if (cached !== undefined && existsSync(join(cached, 'usr', 'lib', 'systemd', 'systemd'))) {
    await execa('cp', ['-a', cached, root]);
    return;
  }
  const sources = readFileSync('/etc/apt/sources.list.d/debian.sources', 'utf8');
  const mirror = /^URIs:\s*(\S+)/m.exec(sources)?.[1] ?? 'http://deb.debian.org/debian';
  const suite = /^Suites:\s*(\S+)/m.exec(sources)?.[1] ?? 'bookworm';
  // python3 and git: what agents run besides Node, under the agent unit's system-call filter.
  const include = '--include=systemd,systemd-sysv,dbus,python3,git';
  await execa('debootstrap', ['--variant=minbase', include, suite, root, mirror], { timeout: 540_000 });
}

/** A booted container: its PID 1 found under systemd-nspawn, commands run in it with nsenter. */
class Container {
  private constructor(
    private readonly nspawn: ChildProcess,
    private readonly pid1: number | undefined,
    private readonly baseUrl: string,
  ) {}

  /** `baseUrl`: the service on the host's loopback, which the container shares (no --private-network). */
  static async boot(root: string, baseUrl: string): Promise<Container> {
    // --register=no --keep-unit: no machined, no host D-Bus (PID 1 here is not systemd). The keyring calls, which
    // systemd-nspawn refuses a container, are the container's: what refuses them to an agent is its unit's filter.
    const args = ['-D', root, '--register=no', '--keep-unit', '-b', '--console=passive', '--system-call-filter=@keyring'];
    args.push(...loopDeviceBinds());
    const nspawn = spawn('systemd-nspawn', args, { stdio: 'ignore' });
    let pid1: number | undefined;
    try {
      pid1 = await waitFor(async () => containerInit(nspawn.pid!), 'the container to start', 60_000);
      const container = new Container(nspawn, pid1, baseUrl);
      await waitFor(
        async () => {
          const state = (await container.exec(['systemctl', 'is-system-running'])).stdout.trim();
          return state === 'running' || state === 'degraded' ? state : undefined;
        },
        'systemd in the container to finish booting',
        90_000,
      );
      return container;
    } catch (error) {
      await new Container(nspawn, pid1, baseUrl).stop();
      throw error;
    }
  }

  exec(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    return execa(
      'nsenter',
      [
        '-t',
        String(this.pid1 ?? 0),
        '-a',
        'env',
        '-i',
        'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        `SVC_BASE_URL=${this.baseUrl}`,
        ...args,
      ],
      {
        reject: false,
        timeout: 120_000,
      },
    ).then((result) => ({ exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) }));
  }

  /**
   * SIGTERM: systemd-nspawn asks the container's systemd to power off, and waits for it. One that does not stop in
   * time is killed: its PID 1 first (the kernel then ends every process of the container), then systemd-nspawn.
   */
  async stop(): Promise<void> {
    if (this.nspawn.exitCode !== null || this.nspawn.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.nspawn.once('exit', () => resolve()));
    this.nspawn.kill('SIGTERM');
    const timer = setTimeout(() => {
      try {
        if (this.pid1 !== undefined) process.kill(this.pid1, 'SIGKILL');
      } catch {
        // Gone already.
      }
      this.nspawn.kill('SIGKILL');
    }, 60_000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * The host's loop devices, bound into the container, where agent-exec mounts each agent's state image with them
 * (nspawn's /dev has none). Nodes for the first 32 are made first where the host has fewer, so that a device the
 * kernel adds while other tests hold the first ones has its node in the container too.
 */
function loopDeviceBinds(): string[] {
  if (!existsSync('/dev/loop-control')) return [];
  const binds = ['--bind=/dev/loop-control'];
  for (let minor = 0; minor < 32; minor += 1) {
    const node = `/dev/loop${minor}`;
    if (!existsSync(node)) execFileSync('mknod', ['-m', '0660', node, 'b', '7', String(minor)]);
    binds.push(`--bind=${node}`);
  }
  return binds;
}

/** The container's PID 1: the process below systemd-nspawn that is pid 1 in its own pid namespace (NSpid ends in 1). */
function containerInit(nspawnPid: number): number | undefined {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const below = (pid: number): boolean => {
    for (let parent = parents.get(pid); parent !== undefined && parent > 1; parent = parents.get(parent))
      if (parent === nspawnPid) return true;
    return false;
  };
  for (const pid of parents.keys()) {
    if (!below(pid)) continue;
    try {
      const ids = /^NSpid:\s+(.*)$/m
        .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
        ?.trim()
        .split(/\s+/);
      if (ids !== undefined && ids.length > 1 && ids[ids.length - 1] === '1') return pid;
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}
