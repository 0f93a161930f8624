// The unshare mode as root (docs/operations.md "Agent isolation", docs/decisions/0027-unshare-mode.md): a host
// without bubblewrap, its config asking for agent_isolation unshare, runs each agent as a uid of its own in
// namespaces util-linux makes. A hostile agent cannot read the node's etc/ or var/, nor another agent's state; it
// sees no process of the host, has no network but its own, and leaves nothing in the host's world-writable
// directories; the run's limits hold as under bubblewrap. (A daemon killed mid-run takes its run along: the demo's
// test, test/demo/demo.test.ts, kills one under this mode.)
import { spawnSync } from 'node:child_process';

import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_UID_BASE, AGENT_UID_COUNT } from '../../src/node/runner/agent-ids.js';
import type { DEFAULT_AGENT_LIMITS } from '../../src/node/runner/agent-process.js';
import { resolveIsolation } from '../../src/node/runner/isolation.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { removeTempDirs } from '../helpers/temp.js';
import { aRun, removeOpenDirs, sandboxedHome } from './sandbox-support.js';

const HOSTILE = 'agent_ops_monitor_004';
const OTHER = 'agent_research_rag_015';
const MiB = 1024 * 1024;

/** Root, with util-linux able to make the namespaces of a run here (CI's container runs privileged). */
const unshareAvailable =
  process.getuid?.() === 0 &&
  spawnSync('unshare', ['--pid', '--fork', '--mount-proc', '--ipc', '--uts', '--net', '--', '/bin/true'], { stdio: 'ignore' }).status === 0;

afterAll(() => {
  removeTempDirs();
  removeOpenDirs();
});

const nodeHome = (limits: Partial<typeof DEFAULT_AGENT_LIMITS> = {}, options: { open?: boolean } = {}) =>
  sandboxedHome('unshare', limits, { ...options, loot: true });

/** What a run saw: its uid, what it could read or write where it should not, the processes it sees, the network. */
const PROBE = agentProgram(`const fs = await import('node:fs');
  const attempt = (fn) => { try { const value = fn(); return value === undefined ? 'allowed' : value; } catch (error) { return error.code ?? error.message; } };
  const asked = run.input;
  const out = { uid: process.getuid(), gid: process.getgid(), groups: process.getgroups() };
  if (asked.write_state) fs.writeFileSync(process.env.SWARM_STATE_DIR + '/secret', asked.write_state);
  out.own_state = attempt(() => fs.readFileSync(process.env.SWARM_STATE_DIR + '/secret', 'utf8'));
  for (const [name, path] of Object.entries(asked.read ?? {})) out[name] = attempt(() => fs.statSync(path).isDirectory() ? fs.readdirSync(path) : fs.readFileSync(path, 'utf8'));
  for (const [name, path] of Object.entries(asked.write ?? {})) out[name] = attempt(() => fs.writeFileSync(path, 'left by the agent'));
  out.processes = fs.readdirSync('/proc').filter((name) => /^\\d+$/.test(name)).map((pid) => attempt(() => fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0')[0]));
  if (asked.connect) {
    const net = await import('node:net');
    out.connect = await new Promise((resolve) => {
      const socket = net.connect(asked.connect, '127.0.0.1', () => { socket.destroy(); resolve('connected'); });
      socket.on('error', (error) => resolve(error.code));
    });
  }
  process.stdout.write(JSON.stringify(out));`);

describe.skipIf(!unshareAvailable)('agent_isolation unshare, as root', () => {
  it('is what the config asks for, never what auto picks', () => {
    expect(resolveIsolation('unshare', '/nonexistent/agent.sock')).toBe('unshare');
    expect(resolveIsolation('auto', '/nonexistent/agent.sock')).not.toBe('unshare');
  });

  it("a hostile agent runs as a uid of its own, cannot read the node's etc/ or var/ nor another agent's state, and sees no process of the host", async () => {
    const { home, runner } = nodeHome();
    installTestBundle(home, OTHER, PROBE);
    const other = await runner.run(aRun(OTHER, { write_state: 'the other agent' }));
    expect(other, JSON.stringify(other)).toMatchObject({ status: 'succeeded', output: { own_state: 'the other agent' } });
    installTestBundle(home, HOSTILE, PROBE);
    const hostile = await runner.run(
      aRun(HOSTILE, {
        read: {
          etc: join(home, 'etc'),
          credentials: join(home, 'etc', 'credentials.json'),
          database: join(home, 'var', 'swarm-node.db'),
          var_state: join(home, 'var', 'state'),
          other_image: join(home, 'var', 'state', `${OTHER}.img`),
          other_state: join(home, 'var', 'state', OTHER),
          root_home: '/root',
        },
        write: { var_tmp: '/var/tmp/left-by-agent', run_lock: '/run/lock/left-by-agent' },
      }),
    );
    expect(hostile.status, JSON.stringify(hostile)).toBe('succeeded');
    const seen = (hostile as { output: Record<string, unknown> }).output;
    const own = (other as { output: { uid: number } }).output.uid;
    expect(seen.uid).toBeGreaterThanOrEqual(AGENT_UID_BASE);
    expect(seen.uid).toBeLessThan(AGENT_UID_BASE + AGENT_UID_COUNT);
    expect(seen.uid).not.toBe(own);
    expect([seen.gid, seen.groups]).toEqual([seen.uid, [seen.uid]]);
    // The node's home is an empty tmpfs in the sandbox but for the ways to what the run is given.
    expect(seen.etc).toBe('ENOENT');
    expect(seen.credentials).toBe('ENOENT');
    expect(seen.database).toBe('ENOENT');
    expect(seen.var_state).toEqual([HOSTILE]);
    expect(seen.other_image).toBe('ENOENT');
    expect(seen.other_state).toBe('ENOENT');
    expect(seen.root_home).toEqual([]);
    expect(seen.own_state).toBe('ENOENT');
    // The host's world-writable directories are not the run's to leave files in.
    expect([seen.var_tmp, seen.run_lock]).toEqual(['EROFS', 'EROFS']);
    // Its own pid namespace: the launcher (pid 1), the uid switch and the agent's own processes; no vitest, no init.
    const processes = seen.processes as string[];
    expect(processes.length, processes.join(' ')).toBeLessThan(8);
    expect(
      processes.some((command) => /vitest|systemd|init|sshd/.test(command)),
      processes.join(' '),
    ).toBe(false);
  });

  it("another home's agents are other uids, and its home is out of sight", async () => {
    const first = nodeHome({}, { open: true });
    const second = nodeHome({}, { open: true });
    installTestBundle(first.home, HOSTILE, PROBE);
    installTestBundle(second.home, HOSTILE, PROBE);
    const mine = await second.runner.run(aRun(HOSTILE, { write_state: 'second home' }));
    const theirs = await first.runner.run(
      aRun(HOSTILE, {
        read: { credentials: join(second.home, 'etc', 'credentials.json'), database: join(second.home, 'var', 'swarm-node.db') },
      }),
    );
    expect(theirs, JSON.stringify(theirs)).toMatchObject({
      status: 'succeeded',
      output: { credentials: 'ENOENT', database: 'ENOENT', own_state: 'ENOENT' },
    });
    expect((theirs as { output: { uid: number } }).output.uid).not.toBe((mine as { output: { uid: number } }).output.uid);
  });

  describe('the network', () => {
    let server: Server;
    let port: number;
    afterAll(() => server?.close());

    it('an agent without "network" has none; one with "egress" reaches the host', async () => {
      server = createServer((socket) => socket.end());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
      const { home, runner } = nodeHome();
      installTestBundle(home, HOSTILE, PROBE);
      const none = await runner.run(aRun(HOSTILE, { connect: port }));
      expect(none, JSON.stringify(none)).toMatchObject({ status: 'succeeded', output: { connect: 'ECONNREFUSED' } });
      installTestBundle(home, HOSTILE, PROBE, { network: 'egress' });
      const egress = await runner.run(aRun(HOSTILE, { connect: port }));
      expect(egress, JSON.stringify(egress)).toMatchObject({ status: 'succeeded', output: { connect: 'connected' } });
    });
  });

  it('the limits hold: a full /tmp fails the run disk_quota, a fork flood task_limit or RLIMIT_NPROC, the time limit ends it', async () => {
    const { home, runner } = nodeHome({ tmpBytes: 4 * MiB, timeoutMs: 5_000 });
    installTestBundle(
      home,
      HOSTILE,
      agentProgram(`const fs = await import('node:fs');
        try { for (let i = 0; ; i += 1) fs.writeFileSync('/tmp/fill-' + i, Buffer.alloc(${MiB}, 1)); } catch (error) { process.stdout.write(JSON.stringify({ error: error.code })); }`),
    );
    expect(await runner.run(aRun(HOSTILE))).toMatchObject({ status: 'failed', output: { error: 'disk_quota' } });
    installTestBundle(
      home,
      HOSTILE,
      agentProgram(`const { spawn } = await import('node:child_process');
        let refused = 0;
        for (let i = 0; i < 200; i += 1) { try { spawn('sleep', ['30'], { stdio: 'ignore' }).on('error', () => { refused += 1; }); } catch { refused += 1; } }
        setTimeout(() => process.stdout.write(JSON.stringify({ refused }), () => process.exit(0)), 500);`),
    );
    const flood = await runner.run(aRun(HOSTILE));
    // A pids cgroup fails it task_limit; without one, RLIMIT_NPROC of the agent's uid refuses the forks.
    if (flood.status === 'failed') expect(flood.output.error).toBe('task_limit');
    else expect((flood.output as { refused: number }).refused).toBeGreaterThan(0);
    installTestBundle(home, HOSTILE, agentProgram(`setInterval(() => {}, 1000);`));
    expect(await runner.run(aRun(HOSTILE))).toMatchObject({ status: 'failed', output: { error: 'timeout' } });
  }, 60_000);
});
