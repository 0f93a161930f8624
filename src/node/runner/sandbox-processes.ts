// The processes of one sandbox, from the host: every descendant of bubblewrap that lives in a pid namespace below
// ours, but a namespace's first process (bubblewrap's init, whose end ends the namespace) and the bubblewrap that
// made one inside (the agent's own, unprivileged: ./sandbox.ts ownPidNamespaceArgv), whose end would end its init
// (--die-with-parent) and the agent with it at once. A SIGTERM for the run goes to these, so the agent may stop by
// itself before the SIGKILL that ends the sandbox whole.
import { readdirSync, readFileSync } from 'node:fs';

export function sandboxProcesses(bubblewrapPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const parent = parentOf(Number(name));
    if (parent === undefined) continue;
    children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
  }
  const firstOfNamespace = (pid: number): boolean => namespacePids(pid).at(-1) === 1;
  const inside: number[] = [];
  const queue = [...(children.get(bubblewrapPid) ?? [])];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const below = children.get(pid) ?? [];
    queue.push(...below);
    const ids = namespacePids(pid);
    if (ids.length > 1 && ids[ids.length - 1] !== 1 && !below.some(firstOfNamespace)) inside.push(pid);
  }
  return inside;
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The name may hold spaces and parentheses: the fields after the last ')' are fixed.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** NSpid: the process' pid in each pid namespace it is in, ours first. */
function namespacePids(pid: number): number[] {
  try {
    const line = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return line === null ? [] : line[1]!.trim().split(/\s+/).map(Number);
  } catch {
    return [];
  }
}
