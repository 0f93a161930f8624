// Isolation on bare metal (docs/operations.md "Agent isolation"), as root with real users: an agent that tries to
// read the node's credential, its database and another run's directory is refused each, sees no SVC_* variable and
// no token, holds no capability, and is held to its time, memory and output limits. Both ways a node runs agents are
// checked:
//   bubblewrap  the daemon is root: each run in a sandbox of its own, under its agent's uid (test/node/hostile-agents
//               has the hostile agent of each limit);
//   systemd  an installed node: the daemon connects to the agent socket and systemd starts
//            svc-swarm-node-agent@.service as the agent user. systemd is not running here, so a stand-in accepts
//            on the socket the way the unit's Accept=yes does and starts the built `swarm-node agent-exec` with the
//            connection as its stdin and stdout, under another user, with a /tmp of its own (the unit's User= and
//            PrivateTmp=, by the same kernel means). It leaves out the unit's InaccessiblePaths=: the file modes
//            alone must refuse the agent, so this checks more than the unit needs. It runs agent-exec as the unit of
//            a release before agents had uids of their own did; the unit as it is now (agent-exec as root, the agent
//            as its own uid) runs under a real systemd in test/install/systemd-nspawn.test.ts.
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCredentials } from '../../src/node/identity/credentials.js';
import { openNodeStore } from '../../src/node/store/database.js';
import { createLocalRunner, type LocalRunner } from '../../src/node/runner/run-local.js';
import { RUN_CANCELLED } from '../../src/node/runner/agent-process.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { waitFor } from '../helpers/funnel.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';
import { agentSocketStandIn, openDir, processesOf, removeOpenDirs, sandboxAvailable } from './sandbox-support.js';

const PROBE_AGENT = 'agent_research_rag_015';
const PEER_AGENT = 'agent_ops_monitor_004';
const SECRET = 'svc_node_credential_that_must_not_leak';

const asRoot = sandboxAvailable && existsSync('/usr/bin/setpriv') && existsSync('/usr/bin/unshare');

/** Tries each thing an agent must not do and reports what happened: 'read' would be a hole. */
const PROBE = agentProgram(`const fs = await import('node:fs');
  const attempt = (fn) => { try { fn(); return 'allowed'; } catch (error) { return error.code ?? error.name; } };
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const asked = run.input;
  process.stdout.write(JSON.stringify({
    uid: process.getuid(),
    cap_eff: /CapEff:\\s*(\\w+)/.exec(status)[1],
    env: Object.keys(process.env).sort(),
    env_values: Object.values(process.env).join('\\n'),
    credentials: attempt(() => fs.readFileSync(asked.credentials)),
    database: attempt(() => fs.readFileSync(asked.database)),
    peer_file: attempt(() => fs.readFileSync(asked.peer_file)),
    peer_dir: attempt(() => fs.readdirSync(asked.peer_dir)),
    write_home: attempt(() => fs.writeFileSync(asked.home_file, 'x')),
    cwd: process.cwd(),
  }));`);

/**
 * Writes a secret into its own run directory, says so in `ready_dir` where it may write there (a sandbox keeps the
 * host read-only: the test then finds it by its process, ./sandbox-support.ts), and holds until `release` exists.
 */
const PEER = agentProgram(`const fs = await import('node:fs');
  fs.writeFileSync('secret.txt', 'peer secret');
  try { fs.writeFileSync(run.input.ready_dir + '/' + run.run_id, process.cwd()); } catch {}
  fs.writeFileSync('ready', '');
  const poll = setInterval(() => {
    if (!fs.existsSync(run.input.release)) return;
    clearInterval(poll);
    process.stdout.write('{}');
  }, 20);`);

/** A node home as enroll and the daemon leave it: etc/credentials.json 0600, var/swarm-node.db 0600. */
function nodeHome(): string {
  const home = openDir('swarm-isolation-');
  mkdirSync(join(home, 'etc'), { mode: 0o755 });
  writeCredentials(join(home, 'etc', 'credentials.json'), {
    node: {
      node_id: 'node_isolation',
      user_id: 'iso@example.com',
      tier_id: 'svc_starter_agents',
      enrolled_at: new Date().toISOString(),
      credential: SECRET,
    },
  } as never);
  openNodeStore(join(home, 'var', 'swarm-node.db')).close();
  installTestBundle(home, PROBE_AGENT, PROBE);
  installTestBundle(home, PEER_AGENT, PEER);
  return home;
}

afterAll(() => {
  removeOpenDirs();
  removeTempDirs();
});

const aRun = (agentId: string, input: unknown) => ({
  run_id: randomUUID(),
  agent_id: agentId,
  user_id: 'iso@example.com',
  tier: 'svc_starter_agents',
  input,
});

describe.skipIf(!asRoot).each(['bubblewrap', 'systemd'] as const)('an agent run with isolation %s, as root', (isolation) => {
  let home: string;
  let runner: LocalRunner;
  let server: Server | undefined;

  beforeAll(async () => {
    home = nodeHome();
    const agentSocket = join(home, 'agent.sock');
    if (isolation === 'systemd') server = await agentSocketStandIn(agentSocket);
    runner = createLocalRunner({
      home,
      varDir: join(home, 'var'),
      packageDir: REPO_ROOT,
      isolation,
      agentSocket,
      limits: { timeoutMs: 60_000 },
    });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  });

  it("cannot read the node's credential, its database or another run's directory; no SVC_* and no token; no capability", async () => {
    const scratch = openDir('swarm-isolation-scratch-');
    const readyDir = join(scratch, 'ready');
    mkdirSync(readyDir);
    chmodSync(readyDir, 0o1777);
    const release = join(scratch, 'release');
    const peerRun = aRun(PEER_AGENT, { ready_dir: readyDir, release });
    const peer = runner.run(peerRun);
    try {
      const peerCwd = await waitFor(async () => peerReady(readyDir, peerRun.run_id), 'the peer run to write its secret', 30_000);
      const probe = await runner.run(
        aRun(PROBE_AGENT, {
          credentials: join(home, 'etc', 'credentials.json'),
          database: join(home, 'var', 'swarm-node.db'),
          peer_file: join(peerCwd, 'secret.txt'),
          peer_dir: peerCwd,
          home_file: join(home, 'etc', 'planted'),
        }),
      );
      expect(probe.status, JSON.stringify(probe)).toBe('succeeded');
      const seen = (probe as { output: Record<string, unknown> }).output;
      expect(seen.uid).not.toBe(0);
      expect(seen.cap_eff).toBe('0000000000000000');
      // Refused by the file's mode (systemd's stand-in), or not there at all: the sandbox hides the node's home (bubblewrap).
      const refused = isolation === 'bubblewrap' ? ['ENOENT'] : ['EACCES'];
      expect(refused).toContain(seen.credentials);
      expect(refused).toContain(seen.database);
      // Another run's directory: not there at all in this run's own /tmp.
      expect(['EACCES', 'ENOENT']).toContain(seen.peer_file);
      expect(['EACCES', 'ENOENT']).toContain(seen.peer_dir);
      expect(isolation === 'bubblewrap' ? ['ENOENT', 'EROFS'] : ['EACCES']).toContain(seen.write_home);
      expect((seen.env as string[]).filter((name) => name.startsWith('SVC_'))).toEqual([]);
      expect(seen.env_values).not.toContain(SECRET);
      expect(seen.cwd).not.toBe(peerCwd);
    } finally {
      writeFileSync(release, '');
      chmodSync(release, 0o644);
    }
    expect((await peer).status).toBe('succeeded');
  });

  it('is held to its limits: memory, output and time', async () => {
    // The time limit is short only where it is the limit under test: a loaded machine may take seconds to start an
    // agent, which must not turn the memory and output cases into timeouts.
    const limitedTo = (timeoutMs: number) =>
      createLocalRunner({
        home,
        varDir: join(home, 'var'),
        packageDir: REPO_ROOT,
        isolation,
        agentSocket: join(home, 'agent.sock'),
        limits: { memoryBytes: 256 * 1024 * 1024, outputBytes: 64 * 1024, timeoutMs },
      });
    const limited = limitedTo(120_000);
    const hog = agentProgram(`const mode = run.input.mode;
      if (mode === 'memory') { const kept = []; for (let i = 0; i < 64; i++) kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); process.stdout.write(JSON.stringify({ kept: kept.length })); }
      if (mode === 'output') process.stdout.write(JSON.stringify({ text: 'x'.repeat(200 * 1024) }));
      if (mode === 'time') setInterval(() => {}, 1000);`);
    installTestBundle(home, PEER_AGENT, hog);
    try {
      const memory = await limited.run(aRun(PEER_AGENT, { mode: 'memory' }));
      expect(memory.status, JSON.stringify(memory)).toBe('failed');
      const output = await limited.run(aRun(PEER_AGENT, { mode: 'output' }));
      expect(output, JSON.stringify(output)).toMatchObject({ status: 'failed', output: { error: 'bad_output' } });
      const time = await limitedTo(3_000).run(aRun(PEER_AGENT, { mode: 'time' }));
      expect(time, JSON.stringify(time)).toMatchObject({ status: 'failed', output: { error: 'timeout' } });
    } finally {
      installTestBundle(home, PEER_AGENT, PEER);
    }
  });

  it('gets the secrets of its run as environment variables of their names (never a reserved name), and what it wrote has them redacted', async () => {
    const value = 'sk_live_LEAKCHECK_42/+?';
    const echo = agentProgram(`const value = process.env.API_KEY;
      if (run.input.fail) {
        process.stderr.write('using token ' + value + ' b64 ' + Buffer.from(value).toString('base64') + ' url ' + encodeURIComponent(value) + '\\n');
        process.exit(3);
      }
      process.stdout.write(JSON.stringify({ got: value === run.input.expected, echoed: 'key=' + value, ld: process.env.LD_PRELOAD ?? null, path: process.env.PATH }));`);
    installTestBundle(home, PEER_AGENT, echo);
    try {
      const secrets = { API_KEY: value, LD_PRELOAD: '/tmp/evil.so', PATH: '/evil' };
      const ok = await runner.run({ ...aRun(PEER_AGENT, { expected: value }), secrets });
      expect(ok, JSON.stringify(ok)).toMatchObject({
        status: 'succeeded',
        output: { got: true, echoed: 'key=***', ld: null, path: '/usr/local/bin:/usr/bin:/bin' },
      });
      const failed = await runner.run({ ...aRun(PEER_AGENT, { fail: true }), secrets });
      expect(failed.status).toBe('failed');
      const message = (failed.output as { message: string }).message;
      expect(message).toContain('using token *** b64 *** url ***');
      expect(message).not.toContain('LEAKCHECK');
      expect(message).not.toContain(Buffer.from(value).toString('base64').slice(4, 16));
    } finally {
      installTestBundle(home, PEER_AGENT, PEER);
    }
  });

  it('hands on its stdout and stderr as they come; its result file, seen only in its sandbox, is its answer', async () => {
    const scratch = openDir('swarm-isolation-output-');
    const release = join(scratch, 'release');
    installTestBundle(
      home,
      PEER_AGENT,
      agentProgram(`const fs = await import('node:fs');
        console.log('free text on stdout');
        console.error('a note on stderr');
        const poll = setInterval(() => {
          if (!fs.existsSync(run.input.release)) return;
          clearInterval(poll);
          fs.writeFileSync(process.env.SWARM_RESULT_FILE, JSON.stringify({ summary: 'from the result file', path: process.env.SWARM_RESULT_FILE }));
        }, 20);`),
    );
    try {
      const seen = { stdout: '', stderr: '' };
      const running = runner.run(aRun(PEER_AGENT, { release }), undefined, (stream, chunk) => (seen[stream] += chunk.toString()));
      // Before the agent ends: what it wrote comes through the sandbox (and the agent socket) while it runs.
      await waitFor(
        async () => (seen.stdout.includes('free text') && seen.stderr.includes('a note') ? true : undefined),
        'the output while the run goes on',
        30_000,
      );
      writeFileSync(release, '');
      chmodSync(release, 0o644);
      const outcome = await running;
      expect(outcome, JSON.stringify(outcome)).toMatchObject({
        status: 'succeeded',
        output: { summary: 'from the result file', path: expect.stringMatching(/\/swarm-result\.json$/) },
      });
      expect(seen).toEqual({ stdout: 'free text on stdout\n', stderr: 'a note on stderr\n' });
    } finally {
      installTestBundle(home, PEER_AGENT, PEER);
    }
  });

  it('a run the node stops (shutdown) ends at once as aborted, one its user cancelled as cancelled, and its agent is gone', async () => {
    for (const [reason, error] of [
      [undefined, 'aborted'],
      [RUN_CANCELLED, 'cancelled'],
    ] as const) {
      const scratch = openDir('swarm-isolation-abort-');
      const readyDir = join(scratch, 'ready');
      mkdirSync(readyDir);
      chmodSync(readyDir, 0o1777);
      const run = aRun(PEER_AGENT, { ready_dir: readyDir, release: join(scratch, 'never') });
      const stop = new AbortController();
      const outcome = runner.run(run, stop.signal);
      await waitFor(async () => peerReady(readyDir, run.run_id), 'the held run to start', 30_000);
      stop.abort(reason);
      expect(await outcome).toMatchObject({ status: 'failed', output: { error } });
      // Its process is gone: no process of any user still runs the held program for this run.
      await waitFor(async () => (pgrep(run.run_id) ? undefined : true), 'the stopped agent to be gone', 30_000);
    }
  });
});

/** The held peer's run directory once it wrote its secret: as it told in `readyDir`, or as its process shows it. */
function peerReady(readyDir: string, runId: string): string | undefined {
  if (existsSync(join(readyDir, runId))) return readFileSync(join(readyDir, runId), 'utf8');
  for (const pid of processesOf(`SWARM_RUN_ID=${runId}`)) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cwd === `/tmp/swarm-run-${runId}` && existsSync(`/proc/${pid}/root${cwd}/ready`)) return cwd;
    } catch {
      // Gone, or not the agent.
    }
  }
  return undefined;
}

/** Whether a process whose stdin-fed run id shows in its environment is still alive (SWARM_RUN_ID is in every agent's). */
function pgrep(runId: string): boolean {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`SWARM_RUN_ID=${runId}`)) return true;
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return false;
}
