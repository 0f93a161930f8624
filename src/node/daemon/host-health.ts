// What the node says of its host at each poll (docs/api.md "Node health"), as a GitHub runner's machine or a
// kubelet's node status shows it: the load averages, the memory (available as the kernel reckons it, MemAvailable,
// which is what libuv's free memory reads on Linux), the filesystem of the node's home, the host's uptime. Read at
// most every HEALTH_EVERY_MS: a busy node polls many times a second, and the service keeps one a second at most.
// A service older than this daemon refuses the field (its poll is closed to fields it does not know): the daemon
// then polls without it (work-puller.ts) and asks again an hour later, so a service upgraded meanwhile hears it.
import { statfs } from 'node:fs/promises';
import { freemem, loadavg, totalmem, uptime } from 'node:os';
import { MAX_LOAD_AVERAGE, type NodeHealth } from '../../contract/node-protocol.js';
import { SvcError } from '../../contract/errors.js';

const HEALTH_EVERY_MS = 5_000;
/** How long the daemon polls without health after a service refused it, before it offers it again. */
export const HEALTH_REFUSED_FOR_MS = 60 * 60 * 1000;

const count = (value: number): number => Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.floor(value)));
const load = (value: number): number => Math.min(MAX_LOAD_AVERAGE, Math.max(0, Math.round(value * 100) / 100));

/** The host's health now; the disk's two absent when the home's filesystem cannot be read. */
export async function readHostHealth(home: string): Promise<NodeHealth> {
  const [one, five, fifteen] = loadavg();
  const total = count(totalmem());
  const disk = await statfs(home).then(
    (fs) => ({ disk_total_bytes: count(fs.blocks * fs.bsize), disk_free_bytes: count(Math.min(fs.bavail, fs.blocks) * fs.bsize) }),
    () => ({}),
  );
  return {
    load_1: load(one ?? 0),
    load_5: load(five ?? 0),
    load_15: load(fifteen ?? 0),
    memory_total_bytes: total,
    memory_available_bytes: Math.min(total, count(freemem())),
    ...disk,
    uptime_seconds: count(uptime()),
  };
}

/** The poll's health, read again when it has aged; none for an hour after the service refused it. */
export class HostHealth {
  #last: { at: number; health: NodeHealth } | undefined;
  #refusedUntil = 0;

  constructor(
    readonly home: string,
    readonly now: () => number,
  ) {}

  async current(): Promise<NodeHealth | undefined> {
    const now = this.now();
    if (now < this.#refusedUntil) return undefined;
    if (this.#last === undefined || now - this.#last.at >= HEALTH_EVERY_MS)
      this.#last = { at: now, health: await readHostHealth(this.home) };
    return this.#last.health;
  }

  /**
   * True when `error` is a service's refusal of the poll's health field itself (an older service: "/health: is not a
   * known field"): the daemon stops sending it for a while and polls again at once, without it.
   */
  refused(error: unknown): boolean {
    if (!(error instanceof SvcError) || error.code !== 'invalid_request') return false;
    const errors = error.extensions.errors;
    const aboutHealth =
      Array.isArray(errors) && errors.some((each) => typeof each?.path === 'string' && (each.path as string).startsWith('/health'));
    if (!aboutHealth && !error.message.startsWith('/health')) return false;
    this.#refusedUntil = this.now() + HEALTH_REFUSED_FOR_MS;
    return true;
  }
}
