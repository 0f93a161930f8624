// How an agent run is kept from the node's secrets on a bare host, without a container runtime (spec §1.6,
// docs/operations.md "Agent isolation"). Each run gets a user id of its own from a pool, like systemd's
// DynamicUser: no passwd entry, nothing on the host owned by it but the run's own directory, so it can read neither
// the node's 0600 credentials and database (owned by the daemon's user) nor another run's 0700 directory (another
// uid). Runs of one agent share a group id, which owns that agent's state directory (an index kept between runs).
//
// Changing to another uid needs CAP_SETUID and CAP_SETGID: root has them, and the unit grants exactly these two to
// the daemon's service user (AmbientCapabilities). Without them (a developer's machine, a test as a normal user)
// a run executes as the daemon's own user, in a private directory with a clean environment and limits, and the
// daemon says so at start.
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_IDS } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import type { AgentIsolation } from '../host/config.js';
import { processIsAlive } from '../host/process-alive.js';

/** CAP_SETGID is bit 6, CAP_SETUID bit 7 (linux/capability.h). */
const SETUID_SETGID = 0b1100_0000n;

/** The first uid of the pool, and of the agents' gids: above Debian's UID_MAX (60000), below systemd's DynamicUser range (61184). */
export const DEFAULT_RUN_UID_BASE = 60_900;
export const MAX_RUN_SLOTS = 32;
export const AGENT_GID_BASE = 60_950;

/** systemd: each run a service of its own (svc-swarm-node-agent@.service); uid: a uid of the pool; none: this user. */
export type IsolationMode = 'systemd' | 'uid' | 'none';

export interface RunIdentity {
  uid: number;
  gid: number;
}

/** Whether this process may run agents as other users: root, or CAP_SETUID and CAP_SETGID in its effective set. */
export function canSwitchUsers(statusText: string = readProcStatus()): boolean {
  if (process.getuid?.() === 0) return true;
  const match = /^CapEff:\s*([0-9a-f]+)$/m.exec(statusText);
  return match !== null && (BigInt(`0x${match[1]}`) & SETUID_SETGID) === SETUID_SETGID;
}

function readProcStatus(): string {
  try {
    return readFileSync('/proc/self/status', 'utf8');
  } catch {
    return '';
  }
}

/** The group every run of `agentId` gets: it owns the agent's state directory. */
export function agentGid(agentId: string, base = AGENT_GID_BASE): number {
  const index = (AGENT_IDS as readonly string[]).indexOf(agentId);
  if (index < 0) throw new Error(`no gid for the unknown agent ${agentId}`);
  return base + index;
}

/**
 * The pool of run uids, shared by every process of every node home on this host (the daemon, a `swarm-node run`
 * typed beside it, another home run by root; run-local.ts puts its slots in /run): a uid
 * is taken by creating its slot file exclusively, and given back by removing it after the run's processes are
 * killed and its directory removed. Two runs in flight never share a uid, and a later run finds nothing of an
 * earlier one. A slot left by a process that died is taken over (its pid is gone).
 */
export class RunUidPool {
  readonly #dir: string;
  readonly #base: number;
  readonly #size: number;

  constructor(slotsDir: string, base = DEFAULT_RUN_UID_BASE, size = MAX_RUN_SLOTS) {
    this.#dir = slotsDir;
    this.#base = base;
    this.#size = size;
  }

  /**
   * The lowest free uid; undefined when every slot is busy. `abandoned`: its last holder died mid-run, so processes
   * of that uid may still be about (the caller kills them before the uid runs anything new).
   */
  take(): { uid: number; abandoned: boolean } | undefined {
    for (let uid = this.#base; uid < this.#base + this.#size; uid += 1) {
      const slot = join(this.#dir, String(uid));
      if (claimSlot(slot)) return { uid, abandoned: false };
      if (slotIsAbandoned(slot)) {
        rmSync(slot, { force: true });
        if (claimSlot(slot)) return { uid, abandoned: true };
      }
    }
    return undefined;
  }

  release(uid: number): void {
    rmSync(join(this.#dir, String(uid)), { force: true });
  }
}

function claimSlot(path: string): boolean {
  try {
    writeFileSync(path, String(process.pid), { flag: 'wx', mode: 0o600 });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** A slot whose process is gone. One with no pid yet is being claimed right now, unless it is older than a moment. */
function slotIsAbandoned(path: string): boolean {
  try {
    const pid = Number(readFileSync(path, 'utf8'));
    if (Number.isSafeInteger(pid) && pid > 0) return !processIsAlive(pid);
    return Date.now() - statSync(path).mtimeMs > 10_000;
  } catch {
    return false;
  }
}

/**
 * `auto`: systemd's agent socket when it listens (an installed node), else a uid of each run's own when this process
 * may switch users (root), else the node's own user.
 */
export function resolveIsolation(wanted: AgentIsolation, agentSocket: string): IsolationMode {
  if (wanted === 'none') return 'none';
  if (wanted === 'systemd' || (wanted === 'auto' && isSocket(agentSocket))) return 'systemd';
  if (canSwitchUsers()) return 'uid';
  if (wanted === 'uid') {
    throw new SvcError('local_state', 'agent_isolation is uid, but this process may not switch users (it needs root, or CAP_SETUID and CAP_SETGID)', {
      remedy: 'Run the node as installed (systemd starts each run as a sandboxed service), or set agent_isolation to auto or none.',
    });
  }
  return 'none';
}

function isSocket(path: string): boolean {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
}
