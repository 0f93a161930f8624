// Each sandboxed run's own control group (docs/operations.md "Agent isolation"): memory (swap included), tasks and
// CPU held for the whole run however many processes it makes, the kernel's count of what reached a limit, and a
// handle on every process of the run to stop it. The daemon makes them under the control group it runs in:
// <own>/svc-swarm-node/<home key>/<run id>, so a limit above the daemon (a container's) still holds.
//
// cgroup v1 (this build machine: the `memory`, `pids` and `cpu` hierarchies) and v2 (the hosts we ship to), from
// the kernel's documentation (admin-guide/cgroup-v1/memory.rst, pids.rst; admin-guide/cgroup-v2.rst). The v2 path is
// not exercised on the build machine.
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { counter, pidsIn, readMounts, readOwnCgroups, relativeTo, type Mount } from './cgroup-mounts.js';

export interface CgroupLimits {
  /** Memory of the whole run, page cache and tmpfs included; swap is not given on top. */
  memoryBytes: number;
  /** Processes and threads of the whole run. */
  tasks: number;
  /** CPU time per wall-clock time, in percent of one CPU (100: one CPU). */
  cpuPercent: number;
}

export interface LimitsReached {
  memory: boolean;
  tasks: boolean;
}

/** One run's group: join it before the sandbox starts, read what reached a limit, stop everything in it. */
export interface RunCgroup {
  /** The files a process writes its pid to, to join (every hierarchy of v1, the one group of v2). */
  readonly procsFiles: readonly string[];
  reached(): LimitsReached;
  /** SIGKILL to every process of the run, until none is left; then the group is removed. */
  remove(): Promise<void>;
}

export type CgroupHost =
  | {
      version: 'v1' | 'v2';
      create(runId: string, limits: CgroupLimits): RunCgroup;
      leftovers(inFlight: (runId: string) => boolean): Promise<number>;
    }
  | { version: null; reason: string };

const CPU_PERIOD_US = 100_000;
const V1_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
const V2_CONTROLLERS = ['memory', 'pids', 'cpu'];
const PARENT = 'svc-swarm-node';

/** The control groups this process can make runs' groups in, for the node home `homeKey`; or why not. */
export function cgroupHost(homeKey: string): CgroupHost {
  try {
    const mounts = readMounts();
    const own = readOwnCgroups();
    const v2 = mounts.find((mount) => mount.fstype === 'cgroup2');
    const v1 = new Map(
      V1_CONTROLLERS.map((name) => [name, mounts.find((mount) => mount.fstype === 'cgroup' && mount.options.includes(name))]),
    );
    if (v1.get('memory') !== undefined && v1.get('pids') !== undefined) return v1Host(homeKey, v1, own);
    if (v2 !== undefined && readFileSync(join(v2.point, 'cgroup.controllers'), 'utf8').includes('memory'))
      return v2Host(homeKey, v2, own.get('') ?? '/');
    return {
      version: null,
      reason: 'this host has neither the cgroup v1 memory and pids hierarchies nor cgroup v2 with the memory controller',
    };
  } catch (error) {
    return { version: null, reason: `control groups cannot be used here: ${(error as Error).message}` };
  }
}

function v1Host(homeKey: string, mounts: Map<string, Mount | undefined>, own: Map<string, string>): CgroupHost {
  const parents = new Map<string, string>();
  for (const [name, mount] of mounts) {
    if (mount === undefined) continue;
    const group = join(mount.point, relativeTo(own.get(name) ?? '/', mount.root));
    // A hierarchy this user may not write (an unprivileged node on cgroup v1): no cgroups, said as such.
    if (name !== 'cpu') accessSync(group, constants.W_OK);
    parents.set(name, join(group, PARENT, homeKey));
  }
  return {
    version: 'v1',
    create(runId, limits) {
      const dirs = new Map([...parents].map(([name, parent]) => [name, join(parent, runId)]));
      try {
        for (const dir of dirs.values()) makeGroup(dir);
        const memory = dirs.get('memory')!;
        writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        // Swap accounting, where the kernel has it: memory and swap together, so swap is not extra memory.
        if (existsSync(join(memory, 'memory.memsw.limit_in_bytes')))
          writeFileSync(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        writeFileSync(join(dirs.get('pids')!, 'pids.max'), String(limits.tasks));
        const cpu = dirs.get('cpu');
        if (cpu !== undefined) {
          writeFileSync(join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
          writeFileSync(join(cpu, 'cpu.cfs_quota_us'), String(Math.round((CPU_PERIOD_US * limits.cpuPercent) / 100)));
        }
      } catch (error) {
        void removeGroups([...dirs.values()]);
        throw error;
      }
      return {
        procsFiles: [...dirs.values()].map((dir) => join(dir, 'cgroup.procs')),
        reached: () => ({
          memory: counter(join(dirs.get('memory')!, 'memory.oom_control'), 'oom_kill') > 0,
          tasks: counter(join(dirs.get('pids')!, 'pids.events'), 'max') > 0,
        }),
        remove: () => removeGroups([...dirs.values()]).then(() => removeEmpty([...parents.values()])),
      };
    },
    leftovers: (inFlight) => removeLeftovers([...parents.values()], inFlight),
  };
}

function v2Host(homeKey: string, mount: Mount, ownPath: string): CgroupHost {
  const own = join(mount.point, relativeTo(ownPath, mount.root));
  accessSync(own, constants.W_OK);
  const controllers = delegateBelow(own);
  if (!controllers.includes('+memory') || !controllers.includes('+pids'))
    throw new Error(`${own} has no memory or pids controller to hand down`);
  const parent = join(own, PARENT, homeKey);
  return {
    version: 'v2',
    create(runId, limits) {
      const dir = join(parent, runId);
      for (const level of [join(own, PARENT), parent]) {
        mkdirSync(level, { recursive: true });
        writeFileSync(join(level, 'cgroup.subtree_control'), controllers);
      }
      makeGroup(dir);
      try {
        writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes));
        if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
        writeFileSync(join(dir, 'pids.max'), String(limits.tasks));
        if (existsSync(join(dir, 'cpu.max')))
          writeFileSync(join(dir, 'cpu.max'), `${Math.round((CPU_PERIOD_US * limits.cpuPercent) / 100)} ${CPU_PERIOD_US}`);
      } catch (error) {
        void removeGroups([dir]);
        throw error;
      }
      return {
        procsFiles: [join(dir, 'cgroup.procs')],
        reached: () => ({
          memory: counter(join(dir, 'memory.events'), 'oom_kill') > 0,
          tasks: counter(join(dir, 'pids.events'), 'max') > 0,
        }),
        remove: () => removeGroups([dir]).then(() => removeEmpty([parent])),
      };
    },
    leftovers: (inFlight) => removeLeftovers([parent], inFlight),
  };
}

/**
 * v2 lets a group hand controllers to its children only while it holds no process itself ("no internal process"
 * rule, cgroup-v2.rst; the root group excepted). When the daemon's own group cannot, for the daemon in it, the daemon
 * moves itself into a leaf beside the runs' groups and tries again. Another process left in its group (a shell it
 * was started from) makes this fail, and the error says so. Returns the controllers it hands down.
 */
function delegateBelow(own: string): string {
  const available = readFileSync(join(own, 'cgroup.controllers'), 'utf8').split(/\s+/);
  const controllers = V2_CONTROLLERS.filter((name) => available.includes(name))
    .map((name) => `+${name}`)
    .join(' ');
  const control = join(own, 'cgroup.subtree_control');
  try {
    writeFileSync(control, controllers);
    return controllers;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
  }
  const leaf = join(own, 'svc-swarm-node-daemon');
  mkdirSync(leaf, { recursive: true });
  writeFileSync(join(leaf, 'cgroup.procs'), String(process.pid));
  try {
    writeFileSync(control, controllers);
    return controllers;
  } catch (error) {
    throw new Error(
      `${own} cannot hand its controllers to the runs' groups (${(error as NodeJS.ErrnoException).code ?? 'error'}): start the daemon in a control group of its own (systemd-run --scope -p Delegate=yes, or a container's)`,
    );
  }
}

/**
 * A run's group, its home's group made on the way. Each run's end removes its home's group when it was the last one
 * there (removeEmpty), so a run starting at that moment makes it again.
 */
function makeGroup(dir: string): void {
  for (let attempt = 0; ; attempt += 1) {
    try {
      mkdirSync(dir, { recursive: true });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw error;
    }
  }
}

/** A home's group once no run is left in it: an empty group still costs the kernel memory. */
function removeEmpty(parents: readonly string[]): void {
  for (const parent of parents) {
    try {
      rmdirSync(parent);
    } catch {
      // A run of the home is in it (EBUSY), or it is gone already.
    }
  }
}

/** The groups of runs a process that died left (with their processes, if any survived it): all killed and removed. */
async function removeLeftovers(parents: readonly string[], inFlight: (runId: string) => boolean): Promise<number> {
  const runs = new Set<string>();
  for (const parent of parents.filter((dir) => existsSync(dir))) {
    for (const entry of readdirSync(parent, { withFileTypes: true }))
      if (entry.isDirectory() && !inFlight(entry.name)) runs.add(entry.name);
  }
  for (const runId of runs) await removeGroups(parents.map((parent) => join(parent, runId)).filter((dir) => existsSync(dir)));
  return runs.size;
}

/** Kills what is in each group until it is empty, then removes it; a group stays busy a moment after its last exit. */
async function removeGroups(dirs: readonly string[]): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    let busy = false;
    for (const dir of dirs) {
      if (!existsSync(dir)) continue;
      for (const pid of pidsIn(dir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
      try {
        rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') busy = true;
      }
    }
    if (!busy) return;
    await new Promise((resolve) => setTimeout(resolve, 10 + attempt * 5));
  }
  throw new Error(`the control groups ${dirs.join(', ')} still hold processes`);
}
