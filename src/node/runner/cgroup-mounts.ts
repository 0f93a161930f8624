// What the kernel says of control groups: where each hierarchy is mounted, which group this process is in, and the
// counters in a group's files. Shared by the groups the runner makes (./cgroups.ts) and what status reads
// (./cgroup-probe.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Mount {
  point: string;
  root: string;
  fstype: string;
  options: string[];
}

export function pidsIn(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** `name N` of a flat keyed file (memory.oom_control, memory.events, pids.events); 0 when absent. */
export function counter(file: string, name: string): number {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((entry) => entry.startsWith(`${name} `));
    return line === undefined ? 0 : Number(line.slice(name.length + 1));
  } catch {
    return 0;
  }
}

export function readMounts(): Mount[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [before, after] = line.split(' - ');
      const fields = before!.split(' ');
      const [fstype, , superOptions] = after!.split(' ');
      return { root: unescapeMount(fields[3]!), point: unescapeMount(fields[4]!), fstype: fstype!, options: superOptions!.split(',') };
    });
}

/** controller → the path of this process' group in that hierarchy ('' for v2's unified one). */
export function readOwnCgroups(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n').filter(Boolean)) {
    const [, controllers, ...path] = line.split(':');
    for (const name of controllers!.split(',')) own.set(name, path.join(':'));
  }
  return own;
}

/** The group's path inside a mount of its hierarchy that shows only a subtree (a container's). */
export function relativeTo(path: string, mountRoot: string): string {
  if (mountRoot === '/' || !path.startsWith(mountRoot)) return path;
  return path.slice(mountRoot.length) || '/';
}

function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}
