// Why a run failed, as the node reports it (docs/api.md, a failed run's `output.error`), where the reason is a limit
// of the run's own that the agent reached: the kernel's counters of its cgroup (memory, tasks) and the room left
// on the filesystems it writes to (disk). A limit reached fails the run even if the agent answered: what it answered
// was made without the memory, process or file that was refused to it.
import type { LimitsReached } from './cgroups.js';
import type { DECLARED_FAILURE } from '../../contract/kit-protocol.js';

export type AgentFailure =
  | 'timeout'
  | 'exit'
  | 'bad_output'
  | 'spawn'
  | 'aborted'
  | 'cancelled'
  | 'memory_limit'
  | 'task_limit'
  | 'disk_quota'
  | typeof DECLARED_FAILURE;

/** What the launcher reported after the agent ended, for each filesystem of the run's own, by path. */
export interface RoomLeft {
  path: string;
  /** Bytes an unprivileged writer may still write. */
  availableBytes: number;
  /** Bytes in use: what the run's files take. */
  usedBytes: number;
  freeInodes: number;
}

/** `stat -f -c '%a %f %b %d %S %n'` lines: available, free and all blocks, free inodes, block size, the path. */
export function parseRoomLeft(report: string): RoomLeft[] {
  const left: RoomLeft[] = [];
  for (const line of report.split('\n')) {
    const match = /^(\d+) (\d+) (\d+) (\d+) (\d+) (\/.*)$/.exec(line.trim());
    if (match === null) continue;
    const [available, free, blocks, inodes, size] = match.slice(1, 6).map(Number) as [number, number, number, number, number];
    left.push({ path: match[6]!, availableBytes: available * size, usedBytes: (blocks - free) * size, freeInodes: inodes });
  }
  return left;
}

/**
 * A filesystem of the run's own: `bytes` its cap; `margin`: it has room beyond the cap (a state image), so the run is
 * over when more than the cap is in use; otherwise (a tmpfs of the cap's size) when nothing is left.
 */
export interface CappedFilesystem {
  path: string;
  what: string;
  bytes: number;
  margin?: boolean;
}

export function limitFailure(
  reached: LimitsReached | undefined,
  room: readonly RoomLeft[],
  capped: readonly CappedFilesystem[],
  limits: { memoryBytes: number; processes: number },
): { error: AgentFailure; message: string } | undefined {
  if (reached?.memory === true) {
    return {
      error: 'memory_limit',
      message: `the run went over its memory limit of ${mib(limits.memoryBytes)} (its processes together, files in its /tmp and /dev/shm included): the kernel stopped a process of it`,
    };
  }
  if (reached?.tasks === true) {
    return { error: 'task_limit', message: `the run went over its limit of ${limits.processes} processes and threads: a fork was refused` };
  }
  for (const fs of capped) {
    const left = room.find((entry) => entry.path === fs.path);
    if (left === undefined) continue;
    // A state image made by an earlier release (its margin an eighth of the cap) ends just before the cap: full, it has
    // less than a write's MiB left.
    const over = fs.margin === true && (left.usedBytes > fs.bytes || left.availableBytes < 1024 * 1024);
    if (over || left.availableBytes === 0 || left.freeInodes === 0) {
      return { error: 'disk_quota', message: `the run filled ${fs.what} (${fs.path}, at most ${mib(fs.bytes)})` };
    }
  }
  return undefined;
}

function mib(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}
