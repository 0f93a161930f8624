// `upgrade` without systemd, of a daemon started by hand (`swarm-node daemon`, recorded with supervisor "none"):
// nobody would start it again after the switch, so upgrade restarts it itself, as it found it (docs/operations.md
// "Upgrade"): the same arguments, environment, working directory and user, its output to the same file, from the new
// `current`. How it was started is read from /proc (Linux: where nodes run) before the switch, and kept in memory
// only: its environment may hold secrets.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { DEFAULT_DRAIN_MS, REPORT_GRACE_MS } from '../daemon/timing.js';
import { processIsAlive } from '../host/process-alive.js';
import type { InstallLayout } from '../host/location.js';
import { daemonAlive, readDaemonRecord } from './daemon-health.js';
import { serviceManager } from './systemctl.js';

/** SIGTERM lets the daemon's runs finish (the drain), then report (the grace); past this it is ended. */
const STOP_BOUND_MS = DEFAULT_DRAIN_MS + REPORT_GRACE_MS + 5_000;

export interface StartedDaemon {
  /** The process it was read from. */
  pid: number;
  /** What followed the program's script: `daemon` and its options (global ones like --node included). */
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid: number;
  gid: number;
  /** Where its output went: a file path (kept for the new one), or undefined (a terminal, a pipe). */
  output: string | undefined;
}

/** How the running daemon `pid` was started; a sentence saying why not when it cannot be read (or run again so). */
export function howStarted(pid: number): StartedDaemon | string {
  let cmdline: string[];
  let environ: string[];
  let status: string;
  let cwd: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((word) => word !== '');
    environ = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((entry) => entry.includes('='));
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch (error) {
    return `its process cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): run upgrade as its user or as root`;
  }
  const script = cmdline.findIndex((word) => ['swarm-node', 'swarm-node.js'].includes(basename(word)));
  if (script < 0 || !cmdline.slice(script + 1).includes('daemon'))
    return `its command line is not swarm-node's daemon (${cmdline.slice(0, 3).join(' ')})`;
  const ids = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? Number.NaN);
  const [uid, gid] = [ids('Uid'), ids('Gid')];
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) return 'its user cannot be read';
  if (uid !== process.getuid?.() && process.getuid?.() !== 0)
    return `it runs as uid ${uid}: run upgrade as root to start it again as that user`;
  const env = Object.fromEntries(environ.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
  return { pid, args: cmdline.slice(script + 1), cwd: existsSync(cwd) ? cwd : '/', env, uid, gid, output: outputFile(pid) };
}

/** The regular file (or /dev/null) the daemon's stdout goes to; undefined for a terminal, a pipe or a socket. */
function outputFile(pid: number): string | undefined {
  try {
    const target = readlinkSync(`/proc/${pid}/fd/1`);
    if (target === '/dev/null') return target;
    return target.startsWith('/') && statSync(target).isFile() ? target : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Without systemd, the daemon `upgrade` must start again itself once `current` moved: the running one, when it
 * recorded that nobody else starts it (supervisor "none": started by hand), as it was started; a sentence when it
 * cannot be started again from here (it keeps running the release it runs); undefined when none runs, or systemd or
 * a supervisor of the operator's starts it. Logged, as it is decided before anything changes.
 */
export function daemonStartedByHand(
  layout: Pick<InstallLayout, 'databaseFile' | 'onHost' | 'units'>,
  log: (line: string) => void,
): StartedDaemon | string | undefined {
  const record = readDaemonRecord(layout.databaseFile);
  if (record.pid === null || record.supervisor !== 'none' || !daemonAlive(record)) return undefined;
  if (serviceManager({ noStart: false, onHost: layout.onHost, units: layout.units }).skipReason === undefined) return undefined;
  const how = howStarted(record.pid);
  if (typeof how === 'string') {
    const reason = `the daemon (pid ${record.pid}) was started by hand and upgrade cannot start it again: ${how}; it runs the release it runs until you restart it (stop it, then start it as before)`;
    log(reason);
    return reason;
  }
  log(
    `the daemon (pid ${record.pid}) was started by hand, and no service manager starts it again: upgrade stops it and starts it as it was started (swarm-node ${how.args.join(' ')}), from the release switched to`,
  );
  return how;
}

/** Stops the daemon `how` was read from (when it still runs) and starts `current`'s as it was started. */
export async function restartAsBefore(
  how: StartedDaemon,
  layout: Pick<InstallLayout, 'currentLink' | 'varDir'>,
): Promise<{ pid: number; output: string }> {
  await stopAndWait(how.pid);
  return startAsBefore(how, layout);
}

/**
 * Starts `current`'s bin/swarm-node as `how` was started, detached from upgrade: its output appended to the file it
 * went to, else to var/daemon.log (a terminal or a pipe cannot be taken over). Returns its pid and where its output
 * goes.
 */
export function startAsBefore(how: StartedDaemon, layout: Pick<InstallLayout, 'currentLink' | 'varDir'>): { pid: number; output: string } {
  const bin = join(layout.currentLink, 'bin', 'swarm-node');
  const output = how.output ?? join(layout.varDir, 'daemon.log');
  const fd = openSync(output, 'a', 0o600);
  try {
    const sameUser = how.uid === process.getuid?.();
    const child = spawn(bin, how.args, {
      cwd: how.cwd,
      env: how.env,
      detached: true,
      stdio: ['ignore', fd, fd],
      ...(sameUser ? {} : { uid: how.uid, gid: how.gid }),
    });
    child.unref();
    // A program that cannot be started says so by an 'error' event after this; its missing pid says it here.
    child.on('error', () => undefined);
    if (child.pid === undefined)
      throw new SvcError('failed', `${bin} could not be started`, { remedy: `Start the daemon yourself: ${bin} ${how.args.join(' ')}.` });
    return { pid: child.pid, output };
  } finally {
    closeSync(fd);
  }
}

/**
 * Asks `pid` to stop (SIGTERM: the daemon lets its runs finish) and waits until it is gone, up to STOP_BOUND_MS;
 * then ends it (SIGKILL: what did not finish stays pending and is settled by the next start).
 */
export async function stopAndWait(pid: number, sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))): Promise<void> {
  if (!processIsAlive(pid)) return;
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + STOP_BOUND_MS;
  while (processIsAlive(pid) && Date.now() < deadline) await sleep(100);
  if (!processIsAlive(pid)) return;
  signal(pid, 'SIGKILL');
  const killedBy = Date.now() + 10_000;
  while (processIsAlive(pid) && Date.now() < killedBy) await sleep(50);
}

export function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Gone already.
  }
}
