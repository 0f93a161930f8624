// The system-call filter of a run under bubblewrap (docs/operations.md "Agent isolation", "The system-call filter"):
// a BPF program per architecture, made with libseccomp by scripts/seccomp/generate.py and committed in seccomp/, which
// the package ships, so neither a checkout nor a release needs libseccomp. bwrap loads it (--seccomp) and applies it
// just before it execs what the sandbox runs.
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** config agent_syscall_filter: `auto` refuses runs on an installed root node without a filter; `optional` runs them. */
export const AGENT_SYSCALL_FILTERS = ['auto', 'optional'] as const;
export type AgentSyscallFilter = (typeof AGENT_SYSCALL_FILTERS)[number];

export type SyscallFilter = { path: string } | { path: undefined; missing: string };

/** The package's filter for this host's architecture, or why there is none. */
export function syscallFilterOf(packageDir: string, arch: string = process.arch): SyscallFilter {
  const file = `seccomp/agent-linux-${arch}.bpf`;
  const path = join(packageDir, file);
  if (existsSync(path)) return { path };
  return { path: undefined, missing: `no system call filter: this package has none for linux-${arch} (${file})` };
}

/** Whether the package is a release an install put in place (<home>/releases/<version>), not a checkout. */
export function isInstalledRelease(packageDir: string): boolean {
  return basename(dirname(packageDir)) === 'releases';
}
