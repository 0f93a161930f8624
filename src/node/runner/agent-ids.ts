// The user and group each agent of each node home runs as under bubblewrap, as root (docs/operations.md "Agent
// isolation"): one uid, and a gid of the same number, per (home, agent), never given to another home or agent on
// this host. Its state is its own (an image only its runs mount), and nothing on the host belongs to it otherwise.
//
// The host keeps one claim file per uid in /var/lib/svc-swarm-node/agent-uids, naming the home and the agent: on
// disk, not in /run, because the state images keep files of that uid across reboots. A claim whose home has no var/
// any more (a home removed, a test's scratch home) is given to the next home that needs one, once nothing of that uid
// is left anywhere (./uid-scrub.ts: its processes, keyrings, SysV IPC and files in the shared temporary directories;
// its state went with the home; docs/decisions/0028-freed-uids-are-scrubbed.md). A claim file is removed only after
// that too (releaseAgentIds, at uninstall --purge), so a uid without one carries nothing. Only a process that sees
// the host's homes may decide that: agent-exec
// under systemd (./agent-exec.ts) sees neither other nodes' homes nor /tmp, so it claims free uids and never takes one
// over. Its agents' state is outside the home (/var/lib/svc-swarm-node-agents…, which uninstall keeps without --purge): the claim
// names it, and holds while it is there.
import { mkdirSync, openSync, readdirSync, readFileSync, rmSync, closeSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { processIsAlive } from '../host/process-alive.js';
import type { RunIdentity } from './isolation.js';
import { scrubUid, type UidScrub } from './uid-scrub.js';

/** Above Debian's UID_MAX (60000), below systemd's DynamicUser range (61184): no account of the host is in it. */
export const AGENT_UID_BASE = 60_100;
export const AGENT_UID_COUNT = 1_000;
export const HOST_AGENT_UIDS_DIR = '/var/lib/svc-swarm-node/agent-uids';

interface Claim {
  home: string;
  agent_id: string;
  /** Where the uid keeps files outside the home (agent-exec's state directory): the claim holds while it exists. */
  keeps?: string;
}

const known = new Map<string, RunIdentity>();

/**
 * The uid and gid of `agentId` on the node at `home`: its claim, or a free uid claimed now; with `reclaim`, a uid
 * whose home and what it `keeps` are gone counts as free.
 */
export function agentIdentity(
  home: string,
  agentId: string,
  dir: string = HOST_AGENT_UIDS_DIR,
  options: { reclaim: boolean; keeps?: string } = { reclaim: true },
): RunIdentity {
  const wanted: Claim = { home: resolve(home), agent_id: agentId, ...(options.keeps === undefined ? {} : { keeps: options.keeps }) };
  const key = `${dir}\n${wanted.home}\n${agentId}`;
  const cached = known.get(key);
  if (cached !== undefined) return cached;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const uid = withLock(dir, () => {
    const claims = readClaims(dir);
    const mine = claims.find(([, claim]) => claim.home === wanted.home && claim.agent_id === agentId);
    if (mine !== undefined) return mine[0];
    const taken = new Map(claims);
    for (let uid = AGENT_UID_BASE; uid < AGENT_UID_BASE + AGENT_UID_COUNT; uid += 1) {
      const claim = taken.get(uid);
      if (
        claim !== undefined &&
        (!options.reclaim || existsSync(join(claim.home, 'var')) || (claim.keeps !== undefined && existsSync(claim.keeps)))
      )
        continue;
      // A uid its last holder left keeps nothing of it for the next; one that cannot be made clean is not given.
      if (claim !== undefined && !scrubUid(uid).clean) continue;
      writeFileSync(join(dir, String(uid)), `${JSON.stringify(wanted)}\n`, { mode: 0o600 });
      return uid;
    }
    throw new Error(
      `every agent uid of this host (${AGENT_UID_BASE}-${AGENT_UID_BASE + AGENT_UID_COUNT - 1}) is claimed by a node home (${dir})`,
    );
  });
  const identity = { uid, gid: uid };
  known.set(key, identity);
  return identity;
}

/**
 * Gives up every claim of the node at `home` (uninstall --purge, once its daemon stopped and its files are gone): each
 * uid scrubbed, then its claim removed; a uid that cannot be made clean keeps its claim, for the next claimer to
 * scrub again. Nothing to do where the claims cannot be read (not root, no claim yet).
 */
export function releaseAgentIds(home: string, dir: string = HOST_AGENT_UIDS_DIR): Array<{ uid: number; agent_id: string } & UidScrub> {
  if (!existsSync(dir)) return [];
  const wanted = resolve(home);
  try {
    readdirSync(dir);
  } catch {
    return [];
  }
  const released = withLock(dir, () =>
    readClaims(dir)
      .filter(([, claim]) => claim.home === wanted)
      .map(([uid, claim]) => {
        const scrub = scrubUid(uid);
        if (scrub.clean) rmSync(join(dir, String(uid)), { force: true });
        return { uid, agent_id: claim.agent_id, ...scrub };
      }),
  );
  for (const key of [...known.keys()]) if (key.startsWith(`${dir}\n${wanted}\n`)) known.delete(key);
  return released;
}

/**
 * Every node home the host's claims name (other homes' agents ran here as root, or under systemd): what a run's sandbox
 * hides besides its own home. Read without the lock: a claim being written is one run late, never wrong.
 */
export function claimedHomes(dir: string = HOST_AGENT_UIDS_DIR): string[] {
  try {
    return [...new Set(readClaims(dir).map(([, claim]) => claim.home))];
  } catch {
    return [];
  }
}

function readClaims(dir: string): Array<[number, Claim]> {
  const claims: Array<[number, Claim]> = [];
  for (const name of readdirSync(dir)) {
    if (!/^\d+$/.test(name)) continue;
    try {
      claims.push([Number(name), JSON.parse(readFileSync(join(dir, name), 'utf8')) as Claim]);
    } catch {
      // Being written by another process: its lock keeps us from reaching here; a torn file is a free uid's.
    }
  }
  return claims;
}

/** One claimer at a time on this host: a lock file holding the holder's pid; a dead holder's lock is taken over. */
function withLock<T>(dir: string, fn: () => T): T {
  const lock = join(dir, '.lock');
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx', 0o600);
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (lockIsAbandoned(lock)) rmSync(lock, { force: true });
      else if (Date.now() > deadline) throw new Error(`${lock} is held by another process`);
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

function lockIsAbandoned(lock: string): boolean {
  try {
    const pid = Number(readFileSync(lock, 'utf8'));
    if (Number.isSafeInteger(pid) && pid > 0) return !processIsAlive(pid);
    return Date.now() - statSync(lock).mtimeMs > 10_000;
  } catch {
    return false;
  }
}
