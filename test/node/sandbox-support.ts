// What the sandbox tests need of the host, and how they find a run's processes from outside it.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { packageForOtherUsers } from '../helpers/staged-for-others.js';

/** The user systemd's stand-in runs agent-exec as. */
export const NOBODY = 65534;

/** Root, with bubblewrap able to make a sandbox here (.ci/run installs it). */
export const sandboxAvailable =
  process.getuid?.() === 0 && spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', '--', '/bin/true'], { stdio: 'ignore' }).status === 0;

/** The pids of processes whose environment holds `marker` (SWARM_RUN_ID=… is in every agent's). */
export function processesOf(marker: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker)) found.push(Number(pid));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
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
 * with a /tmp of its own at `privateTmp` (the unit's User= and PrivateTmp=, by the same kernel means), and, given
 * `artifacts`, the unit's tmpfs for the run's artifacts at that path, of that size (TemporaryFileSystem=).
 */
export async function agentSocketStandIn(socketPath: string, stateDir: string, privateTmp: string, artifacts?: { dir: string; bytes: number }): Promise<Server> {
  const server = createServer({ pauseOnConnect: true }, (connection) => {
    const mountArtifacts = artifacts === undefined ? '' : ` && mount -t tmpfs -o size=${artifacts.bytes},mode=1777,nosuid,nodev,noexec tmpfs "$ARTIFACTS_DIRECTORY"`;
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
      // The private /tmp is mounted at a path of its own, not over /tmp: the checkout under test may live in /tmp.
      {
        stdio: [connection, connection, 'inherit'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', STATE_DIRECTORY: stateDir, TMPDIR: privateTmp, ...(artifacts === undefined ? {} : { ARTIFACTS_DIRECTORY: artifacts.dir }) },
      },
    );
    // As systemd does once the instance runs: the connection is the service's alone.
    child.on('spawn', () => connection.destroy());
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return server;
}
