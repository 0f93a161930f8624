// Where the bubblewrap runs' system-call filter comes from (docs/operations.md "Agent isolation", "The system-call
// filter"): the committed BPF programs are what scripts/seccomp/generate.py makes with libseccomp; a package without
// one for its architecture runs agents without it and says so, but for an installed root node, which refuses to run
// them unless agent_syscall_filter says optional. What the filter refuses: hostile-agents.test.ts.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { run, stagedPackage } from '../install/support.js';
import { sandboxAvailable } from './sandbox-support.js';

afterAll(() => removeTempDirs());

const FILTERS = join(REPO_ROOT, 'seccomp');
/** The architecture each program is for, as the kernel reports it to a filter (linux/audit.h). */
const AUDIT_ARCH: Record<string, number> = { 'agent-linux-x64.bpf': 0xc000003e, 'agent-linux-arm64.bpf': 0xc00000b7 };

/** A Python 3 with libseccomp's binding (Debian: python3-seccomp), or why there is none. */
function pythonWithSeccomp(): { python: string } | { missing: string } {
  for (const python of ['python3', '/usr/bin/python3']) {
    // From /: the checkout's own seccomp/ would be imported as a package of that name.
    if (spawnSync(python, ['-c', 'import seccomp; seccomp.SyscallFilter'], { stdio: 'ignore', cwd: '/' }).status === 0) return { python };
  }
  return { missing: "no Python 3 here imports libseccomp's binding (apt-get install python3-seccomp)" };
}

describe('the system-call filters in seccomp/', () => {
  it('are one BPF program per architecture a release ships, each refusing another architecture first', () => {
    expect(readdirSync(FILTERS).sort()).toEqual(Object.keys(AUDIT_ARCH).sort());
    for (const [name, arch] of Object.entries(AUDIT_ARCH)) {
      const program = readFileSync(join(FILTERS, name));
      process.stdout.write(`${name}: ${program.length} bytes, ${program.length / 8} instructions\n`);
      // struct sock_filter is 8 bytes; BPF_MAXINSNS is 4096.
      expect(program.length % 8).toBe(0);
      expect(program.length / 8).toBeLessThan(4096);
      // ld [4] (seccomp_data.arch), then jeq its architecture.
      expect([program.readUInt16LE(0), program.readUInt32LE(4)]).toEqual([0x20, 4]);
      expect([program.readUInt16LE(8), program.readUInt32LE(12)]).toEqual([0x15, arch]);
    }
  });

  it('are what scripts/seccomp/generate.py makes with libseccomp (skipped where its Python binding is absent)', (context) => {
    const found = pythonWithSeccomp();
    if ('missing' in found) {
      process.stdout.write(`skipped: ${found.missing}\n`);
      context.skip();
      return;
    }
    const out = tempDir('seccomp-generated-');
    const generated = spawnSync(found.python, [join(REPO_ROOT, 'scripts', 'seccomp', 'generate.py'), out], { encoding: 'utf8' });
    expect(generated.status, generated.stderr).toBe(0);
    for (const name of Object.keys(AUDIT_ARCH)) {
      const same = readFileSync(join(out, name)).equals(readFileSync(join(FILTERS, name)));
      expect(same, `${name} differs from what the generator makes: npm run seccomp`).toBe(true);
    }
  });
});

/** The built package, where an install puts a release (<home>/releases/<version>) or elsewhere, without its filter. */
function packageWithoutFilter(installed: boolean): { bin: string; home: string } {
  const home = join(tempDir('seccomp-home-'), 'opt', 'svc', 'swarm-node');
  const dir = installed ? join(home, 'releases', '0.0.0-test') : join(home, 'checkout');
  mkdirSync(dir, { recursive: true });
  cpSync(stagedPackage(), dir, { recursive: true, verbatimSymlinks: true });
  rmSync(join(dir, 'seccomp', `agent-linux-${process.arch}.bpf`));
  return { bin: join(dir, 'bin', 'swarm-node.js'), home };
}

const MISSING = `no system call filter: this package has none for linux-${process.arch} (seccomp/agent-linux-${process.arch}.bpf)`;

interface Status {
  node: { isolation: string | null; isolation_error: string | null; isolation_cannot: string[] };
}

/** `swarm-node status` of that package, bubblewrap asked for (no service answers: what it says of isolation stands). */
async function statusOf(bin: string, home: string, env: Record<string, string> = {}): Promise<Status> {
  const result = await run('node', [bin, '--json', 'status'], {
    env: { SWARM_NODE_HOME: home, SVC_BASE_URL: 'http://127.0.0.1:9', SWARM_AGENT_ISOLATION: 'bubblewrap', ...env },
  });
  return JSON.parse(result.stdout) as Status;
}

describe.skipIf(!sandboxAvailable)('a package without a filter for its architecture, as root', () => {
  it('run from a checkout: agents run without it, and status says so in one line', async () => {
    const { bin, home } = packageWithoutFilter(false);
    const status = await statusOf(bin, home);
    expect(status.node.isolation, JSON.stringify(status.node)).toBe('bubblewrap');
    expect(status.node.isolation_cannot.filter((line) => line.includes('system call filter'))).toEqual([
      `${MISSING}: the kernel's whole surface is the agent's, keyrings included`,
    ]);
  });

  it('an installed release: refuses to run agents under bubblewrap, as without bubblewrap, unless agent_syscall_filter is optional', async () => {
    const { bin, home } = packageWithoutFilter(true);
    const refused = await statusOf(bin, home);
    expect(refused.node.isolation, JSON.stringify(refused.node)).toBeNull();
    expect(refused.node.isolation_error).toBe(`agents cannot run isolated on this host: ${MISSING}`);
    // The config key, from the environment and from the file, as every key.
    expect((await statusOf(bin, home, { SWARM_AGENT_SYSCALL_FILTER: 'optional' })).node.isolation).toBe('bubblewrap');
    const set = await run('node', [bin, 'config', 'set', 'agent_syscall_filter', 'optional'], { env: { SWARM_NODE_HOME: home } });
    expect(set.exitCode, set.stderr).toBe(0);
    const optional = await statusOf(bin, home);
    expect(optional.node.isolation, JSON.stringify(optional.node)).toBe('bubblewrap');
    expect(optional.node.isolation_cannot.filter((line) => line.includes('system call filter'))).toHaveLength(1);
    const bad = await run('node', [bin, 'config', 'set', 'agent_syscall_filter', 'off'], { env: { SWARM_NODE_HOME: home } });
    expect([bad.exitCode, bad.stderr]).toEqual([2, expect.stringContaining('agent_syscall_filter must be one of auto, optional')]);
  });
});
