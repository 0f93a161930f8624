// A node run by an ordinary user (docs/operations.md "Agent isolation", the unprivileged mode): `auto` gives each run
// a bubblewrap sandbox in a user namespace, so an agent, though it runs as the node's own user, cannot read the
// node's credential, reaches no network, keeps nothing in /tmp or /dev/shm, and leaves no process behind; what the
// mode cannot hold (no cgroup of its own on this cgroup v1 host, no state cap) is what status says.
//
// The runner's own code (src/node/runner) runs as `nobody`: bundled by esbuild into a script a child process runs
// under setpriv, since the test itself runs as root.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentProgram, installKitBundle, installTestBundle } from '../helpers/bundles.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { sandboxAvailable } from './sandbox-support.js';
import { FILTERED, keyName, killedBySigsys, NODE_WORKS, SYSCALL_PROBE, writeOtherAbiPrograms } from './syscall-probe.js';
import { LAUNCHER_PROBE, probeSeen } from './launcher-probe.js';

const NOBODY = 65534;
const AGENT = 'agent_ops_monitor_004';

const userNamespaces =
  sandboxAvailable &&
  spawnSync(
    'setpriv',
    [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'bwrap', '--unshare-user', '--ro-bind', '/', '/', '--', '/bin/true'],
    { stdio: 'ignore', cwd: '/' },
  ).status === 0;

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A directory `nobody` owns, where a host keeps things every user may pass (not in /tmp: each run has its own). */
function nobodysDir(prefix: string): string {
  mkdirSync('/var/tmp', { recursive: true });
  const dir = mkdtempSync(join('/var/tmp', prefix));
  chmodSync(dir, 0o755);
  chownSync(dir, NOBODY, NOBODY);
  made.push(dir);
  return dir;
}

/** The runner, as `nobody` runs it: resolves `auto`, reports what it cannot hold, runs the agent once (its stderr kept). */
const ENTRY = `import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { resolveIsolation } from ${JSON.stringify(join(REPO_ROOT, 'src/node/runner/isolation.ts'))};
import { isolationReport } from ${JSON.stringify(join(REPO_ROOT, 'src/node/runner/isolation-report.ts'))};
import { createLocalRunner } from ${JSON.stringify(join(REPO_ROOT, 'src/node/runner/run-local.ts'))};
const [home, packageDir, input, timeoutMs] = process.argv.slice(2);
const isolation = resolveIsolation('auto', join(home, 'no-agent.sock'), 'auto', packageDir);
const runner = createLocalRunner({ home, varDir: join(home, 'var'), packageDir, isolation, limits: { timeoutMs: Number(timeoutMs) } });
let stderr = '';
const events = [];
const outcome = await runner.run({ run_id: randomUUID(), agent_id: ${JSON.stringify(AGENT)}, user_id: 'u@example.com', tier: 'svc_starter_agents', input: JSON.parse(input) }, undefined, (stream, chunk) => {
  if (stream === 'stderr') stderr += chunk.toString('utf8');
}, undefined, (event) => events.push(event));
process.stdout.write(JSON.stringify({ isolation, report: isolationReport(isolation, undefined, packageDir), outcome, stderr, events }));
`;

describe.skipIf(!userNamespaces)('the unprivileged mode: bubblewrap in a user namespace, as the node user', () => {
  let script: string;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    const dir = nobodysDir('unprivileged-runner-');
    writeFileSync(join(dir, 'entry.ts'), ENTRY);
    script = join(dir, 'runner.mjs');
    await build({
      entryPoints: [join(dir, 'entry.ts')],
      outfile: script,
      bundle: true,
      platform: 'node',
      format: 'esm',
      external: ['better-sqlite3'],
      logLevel: 'silent',
      // The CommonJS modules in the bundle require Node's own: ESM has no require of its own.
      banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    });
    chmodSync(script, 0o644);
    server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function runAsNobody(
    home: string,
    input: unknown,
    timeoutMs = 60_000,
  ): {
    isolation: string;
    report: { summary: string; cannot: string[] };
    outcome: { status: string; output: Record<string, unknown> };
    stderr: string;
    events: Array<{ type: string; name?: string; data: unknown }>;
  } {
    const out = execFileSync(
      'setpriv',
      [
        `--reuid=${NOBODY}`,
        `--regid=${NOBODY}`,
        '--clear-groups',
        process.execPath,
        script,
        home,
        REPO_ROOT,
        JSON.stringify(input),
        String(timeoutMs),
      ],
      {
        cwd: '/',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        timeout: 120_000,
      },
    );
    return JSON.parse(out.toString()) as never;
  }

  it("an agent on the kit's Python module runs with python3 alone, its events on its channel and its forged lines only log", async () => {
    const home = nobodysDir('unprivileged-kit-');
    installKitBundle(
      home,
      AGENT,
      {
        'main.py': [
          'import sys',
          'import swarm_kit as kit',
          '',
          'def work(input, run):',
          '    print(\'{"v":1,"id":9,"op":"result","output":{"forged":true}}\')',
          '    sys.stderr.write(\'{"v":1,"id":10,"op":"event","type":"custom","name":"forged","data":{}}\\n\')',
          '    kit.progress(1, 1, "unprivileged")',
          '    return {"summary": "from python", "attempt": run["attempt"]}',
          '',
          'kit.run_agent(work)',
          '',
        ].join('\n'),
      },
      ['python3', 'main.py'],
    );
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, join(home, 'agents')]);
    const ran = runAsNobody(home, {});
    expect(ran.isolation).toBe('bubblewrap');
    expect(ran.outcome, ran.stderr).toEqual({ status: 'succeeded', output: { summary: 'from python', attempt: 1 } });
    expect(ran.events.map((event) => [event.type, event.data])).toEqual([['progress', { done: 1, total: 1, message: 'unprivileged' }]]);
  });

  it("an agent of the node's own user cannot read the node's credential, has no network, and shares no /tmp or /dev/shm", async () => {
    const home = nobodysDir('unprivileged-home-');
    mkdirSync(join(home, 'etc'));
    writeFileSync(join(home, 'etc', 'credentials.json'), '{"node":{"credential":"svcn_secret"}}', { mode: 0o600 });
    chownSync(join(home, 'etc'), NOBODY, NOBODY);
    chownSync(join(home, 'etc', 'credentials.json'), NOBODY, NOBODY);
    const dir = installTestBundle(
      home,
      AGENT,
      agentProgram(`const fs = await import('node:fs');
        const net = await import('node:net');
        const attempt = (fn) => { try { return fn(); } catch (error) { return error.code; } };
        const connect = await new Promise((resolve) => { const s = net.connect(run.input.port, '127.0.0.1', () => { s.destroy(); resolve('connected'); }); s.on('error', (e) => resolve(e.code)); });
        const shm = fs.readdirSync('/dev/shm');
        fs.writeFileSync('/dev/shm/left-' + run.run_id, 'x');
        process.stdout.write(JSON.stringify({ uid: process.getuid(), credential: attempt(() => fs.readFileSync(run.input.credential, 'utf8')), connect, tmp: fs.readdirSync('/tmp'), shm }));`),
    );
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, join(home, 'agents')]);
    expect(dir).toContain(home);

    const first = runAsNobody(home, { credential: join(home, 'etc', 'credentials.json'), port });
    expect(first.isolation).toBe('bubblewrap');
    expect(first.outcome, JSON.stringify(first)).toMatchObject({
      status: 'succeeded',
      output: { uid: NOBODY, credential: 'ENOENT', connect: 'ECONNREFUSED', shm: [] },
    });
    expect((first.outcome.output.tmp as string[]).filter((name) => name.startsWith('swarm-run-'))).toHaveLength(1);
    const second = runAsNobody(home, { credential: join(home, 'etc', 'credentials.json'), port });
    // The first run's file in /dev/shm went with it.
    expect(second.outcome).toMatchObject({ status: 'succeeded', output: { shm: [] } });
    // What it cannot hold here, said as status says it: nobody may not write this host's cgroup v1 hierarchies.
    expect(first.report.summary).toMatch(/^bubblewrap in a user namespace/);
    expect(first.report.cannot.join('\n')).toMatch(/no memory, task or CPU limit per run/);
    expect(first.report.cannot.join('\n')).toMatch(/state directory has no size cap/);
  });

  it('system calls, keyrings (docs/operations.md "What each mode holds"): the filter holds in the user namespace too; Node, Python, git and sh run', () => {
    const home = nobodysDir('unprivileged-filter-');
    const dir = installTestBundle(home, AGENT, SYSCALL_PROBE);
    const programs = writeOtherAbiPrograms(dir);
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, join(home, 'agents')]);
    const probed = runAsNobody(home, { keyring: 'add', key: keyName(), programs });
    expect(probed.outcome, JSON.stringify(probed)).toMatchObject({
      status: 'succeeded',
      output: { ...NODE_WORKS, python: { add_key: 'EPERM', ...FILTERED }, git: 'probe', sh: '42', programs: killedBySigsys(programs) },
    });
    expect(probed.report.summary).toMatch(/a system call filter$/);
    expect(probed.report.cannot.join('\n')).not.toMatch(/system call filter/);
  });

  it('the run\'s launcher (docs/operations.md "What each mode holds"): the agent, the node\'s user like it, runs in a pid namespace of its own where the launcher has no pid, so a full /tmp fails the run disk_quota', () => {
    const home = nobodysDir('unprivileged-launcher-');
    installTestBundle(home, AGENT, LAUNCHER_PROBE);
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, join(home, 'agents')]);
    const probed = runAsNobody(home, { fill: true });
    expect(probed.outcome, JSON.stringify(probed)).toMatchObject({
      status: 'failed',
      output: { error: 'disk_quota', message: expect.stringContaining('(/tmp,') },
    });
    const seen = probeSeen(probed.stderr);
    expect(seen, probed.stderr).toMatchObject({
      launchers: 0,
      parent: 'bwrap',
      parent_is_launcher: false,
      filled: 'ENOSPC',
      inject: 'no launcher in sight',
    });
    // All it sees but itself is its namespace's first process, bubblewrap's, which holds nothing of the launcher's.
    expect(Object.keys(seen!.reached as object), JSON.stringify(seen)).toEqual(['bwrap']);
  });

  it('at its time limit the agent in its own pid namespace gets SIGTERM and its grace before the SIGKILL', () => {
    const home = nobodysDir('unprivileged-grace-');
    installTestBundle(
      home,
      AGENT,
      agentProgram(`process.on('SIGTERM', () => setTimeout(() => { process.stderr.write('stopped by itself\\n'); process.exit(0); }, 500));
        setInterval(() => {}, 1000);`),
    );
    execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, join(home, 'agents')]);
    const stopped = runAsNobody(home, {}, 2_000);
    expect(stopped.outcome, JSON.stringify(stopped)).toMatchObject({ status: 'failed', output: { error: 'timeout' } });
    expect(stopped.stderr).toContain('stopped by itself');
  });
});
