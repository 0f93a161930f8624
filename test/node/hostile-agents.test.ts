// Hostile agents under bubblewrap as root (docs/operations.md "Agent isolation"), one per way an agent broke out
// before each run had a sandbox of its own: 2.5 GB from 8 processes, a fork flood, filling var/ through its state,
// reading another home's state, /dev/shm and SysV IPC left for the next run, a state directory planted for another
// agent, the network, and processes that outlive the run's stop. Each reaches its limit and fails with its own
// error code, and the node goes on: the next run of every agent works.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalRunner } from '../../src/node/runner/run-local.js';
import { createSandboxedRunner } from '../../src/node/runner/run-sandboxed.js';
import { DEFAULT_AGENT_LIMITS } from '../../src/node/runner/agent-process.js';
import { imageBytes } from '../../src/node/runner/state-image.js';
import { AGENT_UID_COUNT, agentIdentity, HOST_AGENT_UIDS_DIR } from '../../src/node/runner/agent-ids.js';
import { processesOfUid } from '../../src/node/runner/uid-scrub.js';
import { AGENT_IDS } from '../../src/contract/agents.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { waitFor } from '../helpers/funnel.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { aRun, processesOf, removeOpenDirs, sandboxAvailable, sandboxedHome } from './sandbox-support.js';
import { FILTERED, keyName, killedBySigsys, NODE_WORKS, releaseNodeIn, SYSCALL_PROBE, writeOtherAbiPrograms } from './syscall-probe.js';
import { LAUNCHER_PROBE, probeSeen, REFUSED } from './launcher-probe.js';

const HOSTILE = 'agent_ops_monitor_004';
const OTHER = 'agent_research_rag_015';
const MiB = 1024 * 1024;

afterAll(() => {
  removeTempDirs();
  removeOpenDirs();
});

const nodeHome = (limits: Partial<typeof DEFAULT_AGENT_LIMITS> = {}, options: { open?: boolean } = {}) =>
  sandboxedHome('bubblewrap', limits, { ...options });

/** What each run of a probe saw: its uid, and what it could read or write where it should not. */
const PROBE = agentProgram(`const fs = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  const attempt = (fn) => { try { const value = fn(); return value === undefined ? 'allowed' : value; } catch (error) { return error.code ?? error.message; } };
  const asked = run.input;
  const out = { uid: process.getuid(), gid: process.getgid() };
  if (asked.write_state) fs.writeFileSync(process.env.SWARM_STATE_DIR + '/secret', asked.write_state);
  out.own_state = attempt(() => fs.readFileSync(process.env.SWARM_STATE_DIR + '/secret', 'utf8'));
  for (const [name, path] of Object.entries(asked.read ?? {})) out[name] = attempt(() => fs.statSync(path).isDirectory() ? fs.readdirSync(path) : fs.readFileSync(path, 'utf8'));
  for (const [name, path] of Object.entries(asked.mkdir ?? {})) out[name] = attempt(() => fs.mkdirSync(path, { mode: 0o2777 }));
  if (asked.leave) {
    fs.writeFileSync('/dev/shm/left-by-' + run.run_id, 'secret', { mode: 0o600 });
    execFileSync('ipcmk', ['-M', '4096']);
  }
  out.shm = fs.readdirSync('/dev/shm');
  out.sysv = execFileSync('ipcs', ['-m']).toString().split('\\n').filter((line) => /^0x/.test(line)).length;
  if (asked.connect) {
    const net = await import('node:net');
    out.connect = await new Promise((resolve) => {
      const socket = net.connect(asked.connect, '127.0.0.1', () => { socket.destroy(); resolve('connected'); });
      socket.on('error', (error) => resolve(error.code));
    });
  }
  process.stdout.write(JSON.stringify(out));`);

/** Bytes a directory takes on disk (du: allocated blocks, so a sparse image counts what was written to it). */
function diskUsage(dir: string): number {
  return Number(execFileSync('du', ['-s', '--block-size=1', dir]).toString().split('\t')[0]);
}

describe.skipIf(!sandboxAvailable)('hostile agents under bubblewrap, as root', () => {
  it('8 processes of 300 MiB (2.4 GB) fail the run memory_limit; the next run works', async () => {
    // A cgroup at its limit may reclaim for a while before the kernel stops a process: the run's time is its own.
    const { home, runner } = nodeHome({ timeoutMs: 45_000 });
    installTestBundle(
      home,
      HOSTILE,
      agentProgram(`const { spawn } = await import('node:child_process');
        const hog = 'const kept = Buffer.alloc(300 * 1024 * 1024, 1); setTimeout(() => console.log(kept.length), 3000);';
        const codes = await Promise.all(Array.from({ length: 8 }, () => new Promise((resolve) => spawn(process.execPath, ['-e', hog], { stdio: 'ignore' }).on('close', (code, signal) => resolve(signal ?? code)))));
        process.stdout.write(JSON.stringify({ codes }));`),
    );
    const hog = await runner.run(aRun(HOSTILE));
    expect(hog, JSON.stringify(hog)).toMatchObject({
      status: 'failed',
      output: { error: 'memory_limit', message: expect.stringContaining('512 MiB') },
    });
    installTestBundle(home, HOSTILE, PROBE);
    expect((await runner.run(aRun(HOSTILE))).status).toBe('succeeded');
  }, 120_000);

  it('a fork flood fails the run task_limit', async () => {
    const { home, runner } = nodeHome();
    installTestBundle(
      home,
      HOSTILE,
      agentProgram(`const { spawn } = await import('node:child_process');
        let started = 0, refused = 0;
        for (let i = 0; i < 200; i += 1) {
          try { spawn('sleep', ['30'], { stdio: 'ignore' }).on('error', () => { refused += 1; }); started += 1; } catch { refused += 1; }
        }
        setTimeout(() => process.stdout.write(JSON.stringify({ started, refused }), () => process.exit(0)), 500);`),
    );
    const flood = await runner.run(aRun(HOSTILE));
    expect(flood, JSON.stringify(flood)).toMatchObject({
      status: 'failed',
      output: { error: 'task_limit', message: expect.stringContaining(`${DEFAULT_AGENT_LIMITS.processes} processes`) },
    });
  });

  it("filling its state fails the run disk_quota, var/ keeps its room, and every agent's next run works", async () => {
    const { home, runner } = nodeHome({ stateBytes: 4 * MiB, tmpBytes: 4 * MiB });
    const fill = (where: string) =>
      agentProgram(`const fs = await import('node:fs');
        const dir = ${where};
        let written = 0;
        try { for (let i = 0; ; i += 1) { fs.writeFileSync(dir + '/fill-' + i, Buffer.alloc(MiB_, 1)); written += MiB_; } } catch (error) { process.stdout.write(JSON.stringify({ written, error: error.code })); }`).replaceAll(
        'MiB_',
        String(MiB),
      );
    installTestBundle(home, HOSTILE, fill('process.env.SWARM_STATE_DIR'));
    const state = await runner.run(aRun(HOSTILE));
    expect(state, JSON.stringify(state)).toMatchObject({
      status: 'failed',
      output: { error: 'disk_quota', message: expect.stringContaining('state directory') },
    });
    // What it wrote stayed in its image, 4 MiB and its margin: var/ as a whole holds no more than that.
    expect(diskUsage(join(home, 'var'))).toBeLessThan(imageBytes(4 * MiB) + MiB);
    installTestBundle(home, HOSTILE, fill("'/tmp'"));
    const tmp = await runner.run(aRun(HOSTILE));
    expect(tmp, JSON.stringify(tmp)).toMatchObject({
      status: 'failed',
      output: { error: 'disk_quota', message: expect.stringContaining('/tmp') },
    });

    installTestBundle(home, OTHER, PROBE);
    const other = await runner.run(aRun(OTHER, { write_state: 'other agent' }));
    expect(other, JSON.stringify(other)).toMatchObject({ status: 'succeeded', output: { own_state: 'other agent' } });
  });

  it("another home's agent gets another uid and cannot reach this home's state, database, config or bundles", async () => {
    const first = nodeHome({}, { open: true });
    const second = nodeHome({}, { open: true });
    for (const { home } of [first, second]) installTestBundle(home, HOSTILE, PROBE);
    // What install and the bundle cache leave readable to every user: etc/config.json 0644, a fetched bundle 0755/0644.
    writeFileSync(join(first.home, 'etc', 'config.json'), '{"node_id":"first"}', { mode: 0o644 });
    const bundle = join(first.home, 'var', 'agents', HOSTILE, 'sha256-first');
    mkdirSync(bundle, { recursive: true, mode: 0o755 });
    for (const dir of [join(first.home, 'var', 'agents'), join(first.home, 'var', 'agents', HOSTILE)]) chmodSync(dir, 0o711);
    writeFileSync(join(bundle, 'main.mjs'), "// the first home's agent", { mode: 0o644 });
    const mine = await first.runner.run(aRun(HOSTILE, { write_state: 'first home' }));
    expect(mine, JSON.stringify(mine)).toMatchObject({ status: 'succeeded', output: { own_state: 'first home' } });
    // Homes open to other users, as a host's /opt is: only the sandbox and the modes stand between the two.
    const theirs = await second.runner.run(
      aRun(HOSTILE, {
        read: {
          state: join(first.home, 'var', 'state'),
          image: join(first.home, 'var', 'state', `${HOSTILE}.img`),
          database: join(first.home, 'var', 'swarm-node.db'),
          runs: join(first.home, 'var', 'runs'),
          config: join(first.home, 'etc', 'config.json'),
          bundle: join(bundle, 'main.mjs'),
          test_bundle: join(first.home, 'agents', HOSTILE, 'main.mjs'),
        },
      }),
    );
    expect(theirs.status, JSON.stringify(theirs)).toBe('succeeded');
    const [a, b] = [mine, theirs].map((outcome) => (outcome as { output: Record<string, unknown> }).output);
    expect(b!.uid).not.toBe(a!.uid);
    expect(b!.gid).not.toBe(a!.gid);
    expect(b!.own_state).toBe('ENOENT');
    for (const name of ['state', 'image', 'runs', 'config', 'bundle', 'test_bundle'])
      expect(['EACCES', 'ENOENT'], name).toContain(b![name]);
  });

  it('a freed uid carries nothing to its next home: the key, the process and the files its last holder left are gone (docs/decisions/0028-freed-uids-are-scrubbed.md)', async () => {
    const first = nodeHome();
    installTestBundle(first.home, HOSTILE, PROBE);
    const ran = await first.runner.run(aRun(HOSTILE));
    expect(ran.status, JSON.stringify(ran)).toBe('succeeded');
    const uid = (ran as { output: { uid: number } }).output.uid;
    // Planted from outside the sandbox, as that uid (the filter keeps its agents from adding keys themselves).
    const asUid = ['--reuid', String(uid), '--regid', String(uid), '--clear-groups'];
    const key = keyName();
    execFileSync('setpriv', [...asUid, 'keyctl', 'add', 'user', key, 'left for the next holder', '@u'], { stdio: 'ignore' });
    const files = [`/dev/shm/${key}`, `/tmp/${key}`, `/var/tmp/${key}`];
    execFileSync('setpriv', [...asUid, 'sh', '-c', 'for f in "$@"; do echo secret > "$f"; done', 'plant', ...files]);
    const left = spawn('setpriv', [...asUid, 'sleep', '600'], { stdio: 'ignore' });
    await waitFor(
      async () => (left.pid !== undefined && processesOfUid(uid).includes(left.pid) ? true : undefined),
      'the process left to run as the uid',
    );
    const keyFound = () => spawnSync('setpriv', [...asUid, 'keyctl', 'search', '@u', 'user', key], { stdio: 'ignore' }).status === 0;
    expect(keyFound()).toBe(true);

    // Its home goes (uninstall --purge takes var/ so): the claim is free. Another home's agents claim uids until that
    // one is theirs (freed claims of other homes below it are taken first; another file of the suite may take it).
    rmSync(first.home, { recursive: true, force: true });
    let reused: { home: string; runner: LocalRunner; agentId: string } | undefined;
    const taken = () => !readFileSync(join(HOST_AGENT_UIDS_DIR, String(uid)), 'utf8').includes(first.home);
    for (let homes = 0; reused === undefined && !taken() && homes * AGENT_IDS.length < AGENT_UID_COUNT; homes += 1) {
      const next = nodeHome();
      for (const agentId of AGENT_IDS) {
        const got = agentIdentity(next.home, agentId).uid;
        if (got === uid) reused = { ...next, agentId };
        if (got >= uid) break;
      }
    }
    await waitFor(
      async () => (left.exitCode !== null || left.signalCode !== null ? true : undefined),
      'the process of the freed uid to be ended',
    );
    expect(left.signalCode).toBe('SIGKILL');
    expect(processesOfUid(uid)).toEqual([]);
    expect(keyFound()).toBe(false);
    for (const file of files) expect(existsSync(file), file).toBe(false);
    // And its new holder runs as it.
    if (reused !== undefined) {
      installTestBundle(reused.home, reused.agentId, PROBE);
      const next = await reused.runner.run(aRun(reused.agentId));
      expect(next, JSON.stringify(next)).toMatchObject({ status: 'succeeded', output: { uid } });
    }
  });

  it('leaves nothing for the next run: /dev/shm and SysV shared memory are its own', async () => {
    const { home, runner } = nodeHome();
    installTestBundle(home, HOSTILE, PROBE);
    const leaving = await runner.run(aRun(HOSTILE, { leave: true }));
    expect(leaving, JSON.stringify(leaving)).toMatchObject({ status: 'succeeded', output: { sysv: 1 } });
    expect((leaving as { output: { shm: string[] } }).output.shm).toHaveLength(1);
    const next = await runner.run(aRun(HOSTILE));
    expect(next, JSON.stringify(next)).toMatchObject({ status: 'succeeded', output: { shm: [], sysv: 0 } });
  });

  it("cannot plant a state directory for another agent: var/state is the daemon's, each agent's state an image of its own", async () => {
    const { home, runner } = nodeHome();
    installTestBundle(home, HOSTILE, PROBE);
    const planted = await runner.run(
      aRun(HOSTILE, { mkdir: { other: join(home, 'var', 'state', OTHER), beside: join(home, 'var', 'state', 'x') } }),
    );
    expect(planted.status, JSON.stringify(planted)).toBe('succeeded');
    expect(['EACCES', 'EROFS', 'ENOENT']).toContain((planted as { output: { other: string } }).output.other);
    expect(
      readdirSync(join(home, 'var', 'state')).filter((name) => !name.startsWith('.') && !name.endsWith('.img') && !name.endsWith('.lock')),
    ).toEqual([]);
    expect(statSync(join(home, 'var', 'state')).mode & 0o777).toBe(0o700);
    // The other agent's first run finds its state empty and its own.
    installTestBundle(home, OTHER, PROBE);
    const other = await runner.run(aRun(OTHER, { read: { state: join(home, 'var', 'state', OTHER) } }));
    expect(other, JSON.stringify(other)).toMatchObject({ status: 'succeeded', output: { state: [] } });
  });

  describe('the network', () => {
    let server: Server;
    let port: number;
    beforeAll(async () => {
      server = createServer((socket) => socket.end());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('an agent without "network" has none (its own loopback only); one with "egress" reaches the host', async () => {
      const { home, runner } = nodeHome();
      installTestBundle(home, HOSTILE, PROBE);
      const none = await runner.run(aRun(HOSTILE, { connect: port }));
      expect(none, JSON.stringify(none)).toMatchObject({ status: 'succeeded', output: { connect: 'ECONNREFUSED' } });
      installTestBundle(home, HOSTILE, PROBE, { network: 'egress' });
      const egress = await runner.run(aRun(HOSTILE, { connect: port }));
      expect(egress, JSON.stringify(egress)).toMatchObject({ status: 'succeeded', output: { connect: 'connected' } });
    });
  });

  it('at its time limit every process of the run goes, double forks and new sessions included', async () => {
    const { runner } = createTimedHome();
    const run = aRun(HOSTILE);
    const outcome = await runner.run(run);
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'failed', output: { error: 'timeout' } });
    await waitFor(
      async () => (processesOf(`SWARM_RUN_ID=${run.run_id}`).length === 0 ? true : undefined),
      'the run’s processes to be gone',
      30_000,
    );

    function createTimedHome() {
      const made = nodeHome({ timeoutMs: 4_000 });
      installTestBundle(
        made.home,
        HOSTILE,
        agentProgram(`const { spawn } = await import('node:child_process');
          // Escapes a process group: a new session, and a grandchild that ignores SIGTERM.
          spawn('setsid', ['sh', '-c', 'trap "" TERM; sleep 600 & sleep 600'], { detached: true, stdio: 'ignore' }).unref();
          setInterval(() => {}, 1000);`),
      );
      return made;
    }
  });

  it("the run's cgroup holds the unit's figures: memory, tasks and CPU", async () => {
    const { home, runner } = nodeHome();
    installTestBundle(home, HOSTILE, agentProgram(`setTimeout(() => process.stdout.write('{}'), 60_000);`));
    const run = aRun(HOSTILE);
    const outcome = runner.run(run);
    // The agent itself (the launcher and bubblewrap before it carry its environment too).
    const pid = await waitFor(async () => processesOf(`SWARM_RUN_ID=${run.run_id}`, process.execPath)[0], 'the agent to start', 30_000);
    const group = (controller: string) => {
      const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
        .split('\n')
        .find((entry) => entry.split(':')[1]!.split(',').includes(controller))!;
      return join('/sys/fs/cgroup', controller, line.split(':')[2]!);
    };
    expect(Number(readFileSync(join(group('memory'), 'memory.limit_in_bytes'), 'utf8'))).toBe(DEFAULT_AGENT_LIMITS.memoryBytes);
    expect(Number(readFileSync(join(group('pids'), 'pids.max'), 'utf8'))).toBe(DEFAULT_AGENT_LIMITS.processes);
    expect(Number(readFileSync(join(group('cpu'), 'cpu.cfs_quota_us'), 'utf8'))).toBe(100_000);
    process.kill(pid, 'SIGKILL');
    expect((await outcome).status).toBe('failed');
  });

  it('a restarted runner kills what a dead one left in its cgroups and removes them', async () => {
    const home = tempDir('hostile-leftover-');
    const limits = { ...DEFAULT_AGENT_LIMITS };
    const dead = createSandboxedRunner({ home, varDir: join(home, 'var'), limits });
    if (dead.cgroups.version === null) throw new Error(dead.cgroups.reason);
    const group = dead.cgroups.create('run-left-by-a-crash', { memoryBytes: limits.memoryBytes, tasks: limits.processes, cpuPercent: 100 });
    // A process of the run that outlived its daemon: in the run's cgroups, as the prelude puts every process of a run.
    const left = spawn('sh', ['-c', `for f in "$@"; do echo $$ > "$f"; done; exec sleep 600`, 'left', ...group.procsFiles], {
      stdio: 'ignore',
    });
    await waitFor(
      async () => (readFileSync(group.procsFiles[0]!, 'utf8').includes(String(left.pid)) ? true : undefined),
      'the leftover to join its cgroup',
    );
    const restarted = createSandboxedRunner({ home, varDir: join(home, 'var'), limits });
    expect(await restarted.removeLeftovers(() => false)).toBe(1);
    await waitFor(async () => (left.exitCode !== null || left.signalCode !== null ? true : undefined), 'the leftover to be killed');
    for (const file of group.procsFiles) expect(existsSync(file)).toBe(false);
  });
});

// The system-call filter (src/node/runner/syscall-filter.ts): what it refuses, and that real agents still run under it.
const FILTER_CELLS = 'docs/operations.md "What each mode holds": system calls, keyrings';
describe.skipIf(!sandboxAvailable)(`the system-call filter under bubblewrap, as root (${FILTER_CELLS})`, () => {
  it("system calls, keyrings: an agent's add_key is refused and its next run finds no key; namespaces, ptrace of its launcher and another ABI are refused; Node 20, Python, git and sh run", async () => {
    const { home, runner } = nodeHome();
    const dir = installTestBundle(home, HOSTILE, SYSCALL_PROBE);
    const programs = writeOtherAbiPrograms(dir);
    // Each program runs here, outside the sandbox: what kills it in there is the filter.
    for (const name of programs) expect(spawnSync(join(dir, name)).status, name).toBe(0);
    const key = keyName();
    const first = await runner.run(aRun(HOSTILE, { keyring: 'add', key, programs }));
    expect(first, JSON.stringify(first)).toMatchObject({
      status: 'succeeded',
      output: { ...NODE_WORKS, python: { add_key: 'EPERM', ...FILTERED }, git: 'probe', sh: '42' },
    });
    expect((first as { output: { programs: unknown } }).output.programs).toEqual(killedBySigsys(programs));
    const next = await runner.run(aRun(HOSTILE, { keyring: 'find', key }));
    const found = { keyctl_search: 'EPERM', request_key: 'EPERM' };
    expect(next, JSON.stringify(next)).toMatchObject({ status: 'succeeded', output: { python: found } });
  });

  it('system calls: Node 22, the release runtime, runs its worker threads and the file system under load', async (context) => {
    const { home, runner } = nodeHome();
    const dir = installTestBundle(home, HOSTILE, SYSCALL_PROBE);
    const node22 = releaseNodeIn(dir);
    if ('missing' in node22) {
      process.stdout.write(`skipped: Node 22 is not here: ${node22.missing}\n`);
      context.skip();
      return;
    }
    installTestBundle(home, HOSTILE, SYSCALL_PROBE, { entry: [node22.entry, 'main.mjs'] });
    const outcome = await runner.run(aRun(HOSTILE, { node_only: true }));
    const node = expect.stringMatching(/^v22\./);
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'succeeded', output: { node, ...NODE_WORKS } });
  });
});

// The launcher (src/node/runner/launcher.ts), which reports the run's room left and its result file back, out of
// the agent's reach: root, the agent another uid without a capability.
const LAUNCHER_CELL = 'docs/operations.md "What each mode holds": the run\'s launcher';
describe.skipIf(!sandboxAvailable)(`the launcher under bubblewrap, as root (${LAUNCHER_CELL})`, () => {
  it("the run's launcher: an agent cannot read or write its memory, read its environment, signal or ptrace it, nor forge its report: a full /tmp fails the run disk_quota", async () => {
    const { home, runner } = nodeHome({ tmpBytes: 4 * MiB });
    installTestBundle(home, HOSTILE, LAUNCHER_PROBE);
    let stderr = '';
    const outcome = await runner.run(aRun(HOSTILE, { fill: true }), undefined, (stream, chunk) => {
      if (stream === 'stderr') stderr += chunk.toString('utf8');
    });
    const seen = probeSeen(stderr);
    // No forged report reached the node: the room the launcher measured is what it went by.
    expect(outcome, `${JSON.stringify(outcome)} ${stderr}`).toMatchObject({
      status: 'failed',
      output: { error: 'disk_quota', message: expect.stringContaining('(/tmp,') },
    });
    expect(seen, stderr).toMatchObject({
      parent_is_launcher: true,
      launchers: 1,
      filled: 'ENOSPC',
      inject: expect.stringMatching(/^(EACCES|not on x86-64)$/),
    });
    // The launcher, and bubblewrap's init (root too).
    const refused = { mem: REFUSED, environ: REFUSED, signal: REFUSED, ptrace: REFUSED };
    expect(seen, JSON.stringify(seen)).toMatchObject({ parent_reached: refused, reached: { launcher: refused, bwrap: refused } });
    expect(Object.keys(seen!.reached as object).sort()).toEqual(['bwrap', 'launcher']);
  });
});
