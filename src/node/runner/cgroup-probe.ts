// Control groups as status, doctor and agent-exec see them: which a runner would use here, or why none (without
// making or moving anything), and the counters of the group this process is in.
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { counter, readMounts, readOwnCgroups, relativeTo, type Mount } from './cgroup-mounts.js';
import type { RunCgroup } from './cgroups.js';

/** Which cgroups a runner made here would use, or why none, without making or moving anything (status, doctor). */
export function probeCgroups(): { version: 'v1' | 'v2' | null; reason: string | null } {
  try {
    const mounts = readMounts();
    const own = readOwnCgroups();
    const writable = (mount: Mount | undefined, controller: string): boolean => {
      if (mount === undefined) return false;
      try {
        accessSync(join(mount.point, relativeTo(own.get(controller) ?? '/', mount.root)), constants.W_OK);
        return true;
      } catch {
        return false;
      }
    };
    const v1Memory = mounts.find((mount) => mount.fstype === 'cgroup' && mount.options.includes('memory'));
    const v1Pids = mounts.find((mount) => mount.fstype === 'cgroup' && mount.options.includes('pids'));
    if (v1Memory !== undefined && v1Pids !== undefined) {
      return writable(v1Memory, 'memory') && writable(v1Pids, 'pids')
        ? { version: 'v1', reason: null }
        : { version: null, reason: 'the cgroup v1 memory and pids hierarchies are not writable by this user' };
    }
    const v2 = mounts.find((mount) => mount.fstype === 'cgroup2');
    if (v2 === undefined || !readFileSync(join(v2.point, 'cgroup.controllers'), 'utf8').includes('memory')) {
      return {
        version: null,
        reason: 'this host has neither the cgroup v1 memory and pids hierarchies nor cgroup v2 with the memory controller',
      };
    }
    return writable(v2, '')
      ? { version: 'v2', reason: null }
      : { version: null, reason: "this user's control group is not delegated to it (cgroup v2)" };
  } catch (error) {
    return { version: null, reason: `control groups cannot be read here: ${(error as Error).message}` };
  }
}

/**
 * The counters of the group this process is in (agent-exec under systemd: the run's own unit), read-only: what
 * reached a limit the unit sets (MemoryMax=, TasksMax=). undefined where the group cannot be read.
 */
export function ownCgroupCounters(): Pick<RunCgroup, 'reached'> | undefined {
  try {
    const mounts = readMounts();
    const own = readOwnCgroups();
    const at = (fstype: string, controller?: string): string | undefined => {
      const mount = mounts.find((entry) => entry.fstype === fstype && (controller === undefined || entry.options.includes(controller)));
      return mount === undefined ? undefined : join(mount.point, relativeTo(own.get(controller ?? '') ?? '/', mount.root));
    };
    const memory = at('cgroup', 'memory');
    const pids = at('cgroup', 'pids');
    const unified = at('cgroup2');
    if (memory !== undefined && pids !== undefined) {
      return {
        reached: () => ({
          memory: counter(join(memory, 'memory.oom_control'), 'oom_kill') > 0,
          tasks: counter(join(pids, 'pids.events'), 'max') > 0,
        }),
      };
    }
    if (unified === undefined) return undefined;
    return {
      reached: () => ({
        memory: counter(join(unified, 'memory.events'), 'oom_kill') > 0,
        tasks: counter(join(unified, 'pids.events'), 'max') > 0,
      }),
    };
  } catch {
    return undefined;
  }
}
