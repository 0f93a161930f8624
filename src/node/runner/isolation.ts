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
import { readFileSync } from 'node:fs';
import { AGENT_IDS } from '../../contract/agents.js';

/** CAP_SETGID is bit 6, CAP_SETUID bit 7 (linux/capability.h). */
const SETUID_SETGID = 0b1100_0000n;

/** The first uid of the pool, and of the agents' gids: above Debian's UID_MAX (60000), below systemd's DynamicUser range (61184). */
export const DEFAULT_RUN_UID_BASE = 60_900;
export const MAX_RUN_SLOTS = 32;
export const AGENT_GID_BASE = 60_950;

export type IsolationMode = 'uid' | 'none';

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
 * A pool of run uids: a uid is taken for one run and given back after its processes are killed and its directory
 * removed, so two runs in flight never share one and a later run finds nothing of an earlier one.
 */
export class RunUidPool {
  readonly #base: number;
  readonly #size: number;
  readonly #taken = new Set<number>();

  constructor(base = DEFAULT_RUN_UID_BASE, size = MAX_RUN_SLOTS) {
    this.#base = base;
    this.#size = size;
  }

  /** The lowest free uid; undefined when every slot is busy (the caller runs at most `size` agents at once). */
  take(): number | undefined {
    for (let uid = this.#base; uid < this.#base + this.#size; uid += 1) {
      if (!this.#taken.has(uid)) {
        this.#taken.add(uid);
        return uid;
      }
    }
    return undefined;
  }

  release(uid: number): void {
    this.#taken.delete(uid);
  }

  get inUse(): number {
    return this.#taken.size;
  }
}
