// Where a run writes its artifacts (SWARM_ARTIFACTS_DIR; docs/operations.md "Agent isolation"), when the run's
// sandbox is made by the daemon: var/artifacts/<run_id>, the same path on the host and in the sandbox, empty at the
// start, kept after the agent ended until its files were uploaded, then removed.
//
// As root it is a tmpfs of its own, sized to a run's artifacts, owned by the run's uid, nosuid, nodev, noexec: what
// the agent writes there cannot fill the host, and counts in the run's memory as its /tmp does. The tmpfs is never
// mounted on the host (as the state image is not): a holder process mounts it in a mount namespace of its own, the
// run's sandbox starts from a copy of that namespace (nsenter), and the daemon reads the files through the holder's
// /proc/<pid>/root. The holder waits on a pipe from the daemon, so a daemon that dies (SIGKILL) takes it along, and
// the tmpfs goes with the last process that sees it: nothing stays mounted. Unprivileged (and under `none`) it is a
// plain directory of the node's user, bounded per file only (RLIMIT_FSIZE), as its state is there. Under systemd the
// unit has its own (./agent-exec.ts). var/artifacts is the daemon's, 0700: no agent reaches another run's.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RunIdentity } from './isolation.js';

export interface ArtifactSpace {
  /** The agent's SWARM_ARTIFACTS_DIR. */
  dir: string;
  /** Where the node reads what the run left there: `dir`, or the holder's view of it. */
  readDir: string;
  /** The mount namespace that holds the tmpfs (/proc/<holder>/ns/mnt): the run's sandbox starts from a copy of it. */
  namespace?: string;
  /** A tmpfs of the size asked for; false: a plain directory. */
  capped: boolean;
  /** Ends the holder and removes the directory: the files are gone. */
  release(): void;
}

/** Files and directories an artifacts tmpfs holds at most: ten times what is ever looked at (artifact-source.ts). */
const MAX_INODES = 10_000;
const HOLDER_READY_MS = 10_000;

// $1 the tmpfs's options, $2 where; then "ready", and it stays (and the namespace with it) until its stdin closes.
const HOLDER = 'mount -t tmpfs -o "$1" swarm-artifacts "$2" || exit 1; echo ready; read -r _';

/** var/artifacts, the daemon's own (0700). */
export function artifactsRoot(varDir: string): string {
  const root = join(varDir, 'artifacts');
  mkdirSync(root, { recursive: true, mode: 0o700 });
  chmodSync(root, 0o700);
  return root;
}

/** The run's empty directory: a tmpfs of `bytes` owned by `owner` when given (root), else a plain directory, 0700. */
export async function makeArtifactSpace(varDir: string, runId: string, bytes: number, owner?: RunIdentity): Promise<ArtifactSpace> {
  const dir = join(artifactsRoot(varDir), runId);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o700 });
  const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
  if (owner === undefined) return { dir, readDir: dir, capped: false, release: removeDir };

  const options = `size=${bytes},nr_inodes=${MAX_INODES},mode=0700,uid=${owner.uid},gid=${owner.gid},nosuid,nodev,noexec`;
  const holder = spawn('unshare', ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', HOLDER, 'swarm-artifacts', options, dir], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const end = (): void => {
    holder.kill('SIGKILL');
    removeDir();
  };
  try {
    await holderReady(holder);
  } catch (error) {
    end();
    throw new Error(`cannot make the artifacts directory ${dir}: ${(error as Error).message}`);
  }
  return { dir, readDir: `/proc/${holder.pid}/root${dir}`, namespace: `/proc/${holder.pid}/ns/mnt`, capped: true, release: end };
}

/**
 * Removes the directories of runs under `parent` (var/runs, var/artifacts) that a node cut short left (a crash
 * mid-run; an artifacts tmpfs went with its holder, leaving its empty directory), but those of runs `inFlight` names:
 * another live process of this node (a `swarm-node run` beside the daemon) still executes them.
 */
export function removeLeftoverRunDirs(parent: string, inFlight: (runId: string) => boolean): number {
  if (!existsSync(parent)) return 0;
  let removed = 0;
  for (const runId of readdirSync(parent)) {
    if (inFlight(runId)) continue;
    rmSync(join(parent, runId), { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}

/** Resolves once the holder mounted the tmpfs ("ready"); rejects with what it said when it could not. */
function holderReady(holder: ChildProcessWithoutNullStreams): Promise<void> {
  return new Promise((resolve, reject) => {
    let said = '';
    const timer = setTimeout(() => reject(new Error('its tmpfs was not mounted in time')), HOLDER_READY_MS);
    const settle = (error?: Error): void => {
      clearTimeout(timer);
      holder.stdout.removeAllListeners('data');
      if (error === undefined) resolve();
      else reject(error);
    };
    holder.stdin.on('error', () => undefined);
    holder.stderr.on('data', (chunk: Buffer) => {
      if (said.length < 2000) said += chunk.toString();
    });
    holder.stdout.once('data', () => settle());
    holder.once('error', (error) => settle(error));
    holder.once('exit', () => settle(new Error(said.trim() || 'the holder of its tmpfs exited')));
  });
}
