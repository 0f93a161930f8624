// The processes of one sandbox, from the host: every descendant of bubblewrap that lives in a pid namespace below
// ours, but the namespace's first process (bubblewrap's init, whose end ends the namespace). A SIGTERM for the run
// goes to these, so the agent may stop by itself before the SIGKILL that ends the sandbox whole.
import { readdirSync, readFileSync } from 'node:fs';

export function sandboxProcesses(bubblewrapPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const parent = parentOf(Number(name));
    if (parent === undefined) continue;
    children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
  }
  const inside: number[] = [];
  const queue = [...(children.get(bubblewrapPid) ?? [])];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    queue.push(...(children.get(pid) ?? []));
    const ids = namespacePids(pid);
    if (ids.length > 1 && ids[ids.length - 1] !== 1) inside.push(pid);
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
