// What the sandbox tests need of the host, and how they find a run's processes from outside it.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { systemClock } from '../../src/lib/clock.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import type { AgentIsolation } from '../../src/node/host/config.js';
import { nodePaths } from '../../src/node/host/location.js';
import type { AgentLimits } from '../../src/node/runner/agent-process.js';
import { createLocalRunner, type LocalRunner } from '../../src/node/runner/run-local.js';
import type { RunDeps } from '../../src/node/runs/run-agent.js';
import { ServiceClient } from '../../src/node/service/service-client.js';
import { openNodeStore } from '../../src/node/store/database.js';
import { nodeCaller, type NodeCaller } from '../../src/node/work/caller.js';
import { packageForOtherUsers } from '../helpers/staged-for-others.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';

/** The user systemd's stand-in runs agent-exec as. */
export const NOBODY = 65534;

/** Root, with bubblewrap able to make a sandbox here (.ci/run installs it). */
export const sandboxAvailable =
  process.getuid?.() === 0 &&
  spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', '--', '/bin/true'], { stdio: 'ignore' }).status === 0;

const BWRAP_PATHS = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'].filter((path) => existsSync(path));

/** Whether this host has a bwrap to hide (withoutBubblewrap). */
export const bubblewrapInstalled = BWRAP_PATHS.length > 0;

/**
 * A host with only Node and npm, as root: an argv prefix that runs what follows it with each bwrap of this host bound
 * over by a program that fails (/bin/false), in a mount namespace of its own; util-linux stays as on every Debian.
 */
export const WITHOUT_BUBBLEWRAP = [
  'unshare',
  '--mount',
  '--propagation',
  'private',
  '--',
  'sh',
  '-c',
  'for bwrap in $0; do mount --bind /bin/false "$bwrap" || exit 1; done; exec "$@"',
  BWRAP_PATHS.join(' ') || '/nonexistent',
];

/** The pids of processes whose environment holds `marker` (SWARM_RUN_ID=… is in every agent's). */
export function processesOf(marker: string, program?: string): number[] {
  return processesAmong(
    readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number),
    marker,
    program,
  );
}

/**
 * Of `pids`, those whose environment holds `marker` (and, with `program`, whose command line starts with it). A pid
 * listed may have ended by the time its files are read (ENOENT, ESRCH): it is then not one of them, never an error.
 */
export function processesAmong(pids: readonly number[], marker: string, program?: string): number[] {
  return pids.filter((pid) => {
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker)) return false;
      return program === undefined || readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(`${program}\0`);
    } catch {
      // Gone meanwhile, or not ours to read.
      return false;
    }
  });
}

const opened: string[] = [];

/**
 * A directory every user may pass, where a host keeps things (/var/tmp; not /tmp, which is each run's own in a
 * sandbox): mkdtemp makes 0700, and the agent runs as another user. removeOpenDirs() takes them away.
 */
export function openDir(prefix: string): string {
  mkdirSync('/var/tmp', { recursive: true });
  const dir = mkdtempSync(join('/var/tmp', prefix));
  chmodSync(dir, 0o755);
  opened.push(dir);
  return dir;
}

export function removeOpenDirs(): void {
  for (const dir of opened.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * What svc-swarm-node-agent.socket (Accept=yes) and svc-swarm-node-agent@.service do, without systemd: each
 * connection starts the built `swarm-node agent-exec` with the connection as its stdin and stdout, under another user,
 * with a /tmp of its own (the unit's User= and PrivateTmp=, by the same kernel means), its state directory as
 * StateDirectory= makes it, and, given `artifactsBytes`, the unit's tmpfs of that size for the run's artifacts
 * (TemporaryFileSystem=, ARTIFACTS_DIRECTORY=).
 */
export async function agentSocketStandIn(socketPath: string, options: { artifactsBytes?: number } = {}): Promise<Server> {
  // StateDirectory=: systemd makes it, 0700, owned by the agent user.
  const stateDir = join(openDir('swarm-agent-state-'), 'state');
  mkdirSync(stateDir, { mode: 0o700 });
  chownSync(stateDir, NOBODY, NOBODY);
  // PrivateTmp=: each run's own, mounted in its own namespace at the same path (agent-exec's os.tmpdir()); so is the
  // artifacts tmpfs. Paths of their own, not /tmp: the checkout under test may live in /tmp.
  const privateTmp = join(openDir('swarm-private-tmp-'), 'tmp');
  const artifacts =
    options.artifactsBytes === undefined
      ? undefined
      : { dir: join(openDir('swarm-unit-artifacts-'), 'artifacts'), bytes: options.artifactsBytes };
  for (const dir of [privateTmp, ...(artifacts === undefined ? [] : [artifacts.dir])]) mkdirSync(dir, { mode: 0o1777 });
  const server = createServer({ pauseOnConnect: true }, (connection) => {
    const mountArtifacts =
      artifacts === undefined
        ? ''
        : ` && mount -t tmpfs -o size=${artifacts.bytes},mode=1777,nosuid,nodev,noexec tmpfs "$ARTIFACTS_DIRECTORY"`;
    const child = spawn(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        `mount -t tmpfs -o mode=1777 tmpfs "$TMPDIR"${mountArtifacts} && exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs "$@"`,
        'sh',
        // The installed release is readable by the agent user; this checkout may not be (a clone in root's home).
        packageForOtherUsers().node,
        join(packageForOtherUsers().root, 'bin', 'swarm-node.js'),
        'agent-exec',
      ],
      {
        stdio: [connection, connection, 'inherit'],
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          STATE_DIRECTORY: stateDir,
          TMPDIR: privateTmp,
          ...(artifacts === undefined ? {} : { ARTIFACTS_DIRECTORY: artifacts.dir }),
        },
      },
    );
    // As systemd does once the instance runs: the connection is the service's alone.
    child.on('spawn', () => connection.destroy());
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return server;
}

export interface TestNodeCaller {
  caller: NodeCaller;
  db: SqliteDatabase;
  client: ServiceClient;
  /** What runAgent takes to run an agent on this node from its own credential, as `swarm-node run` does. */
  deps: RunDeps;
}

/** An enrolled node's caller in `home`, against the service at `baseUrl`, running agents as `options` say. */
export function testNodeCaller(
  baseUrl: string,
  home: string,
  enrolled: { node_id: string; credential: string; email: string },
  options: { isolation: AgentIsolation; agentSocket?: string; limits?: Partial<AgentLimits> },
): TestNodeCaller {
  const db = openNodeStore(join(home, 'var', 'swarm-node.db'));
  const client = new ServiceClient({ baseUrl });
  const node = {
    node_id: enrolled.node_id,
    user_id: enrolled.email,
    tier_id: 'svc_starter_agents',
    enrolled_at: new Date().toISOString(),
    credential: enrolled.credential,
  };
  const caller = nodeCaller({
    node,
    client,
    db,
    clock: systemClock,
    pid: process.pid,
    version: 'test',
    paths: nodePaths(home),
    ...options,
  });
  return { caller, db, client, deps: { db, client, clock: systemClock, caller, source: 'cli', pid: process.pid } };
}

/** A run of `agentId` for the hostile user, as the service hands one to a node. */
export const aRun = (agentId: string, input: unknown = {}) => ({
  run_id: randomUUID(),
  agent_id: agentId,
  user_id: 'hostile@example.com',
  tier: 'svc_starter_agents',
  input,
});

/**
 * A node home and its runner in `isolation`: a mkdtemp closed to others (the sandbox makes its own way to what the
 * agent needs), or `open`, where a host keeps one (/opt: every user may pass), with var/ 0711 as install makes it.
 * `loot`: a credential and a database left readable in it, for the agent to try to steal.
 */
export function sandboxedHome(
  isolation: 'bubblewrap' | 'unshare',
  limits: Partial<AgentLimits> = {},
  options: { open?: boolean; loot?: boolean } = {},
): { home: string; runner: LocalRunner } {
  const home = options.open === true ? openDir(`${isolation}-open-home-`) : tempDir(`${isolation}-home-`);
  mkdirSync(join(home, 'etc'));
  if (options.loot === true) writeFileSync(join(home, 'etc', 'credentials.json'), '{"node":{"credential":"svcn_secret"}}', { mode: 0o644 });
  mkdirSync(join(home, 'var'), { mode: 0o711 });
  chmodSync(join(home, 'var'), 0o711);
  if (options.loot === true) writeFileSync(join(home, 'var', 'swarm-node.db'), 'the database', { mode: 0o644 });
  const runner = createLocalRunner({
    home,
    varDir: join(home, 'var'),
    packageDir: REPO_ROOT,
    isolation,
    limits: { timeoutMs: 60_000, ...limits },
  });
  return { home, runner };
}
