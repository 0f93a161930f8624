// An agent that goes for its launcher (src/node/runner/launcher.ts), the process that reports the run's room left
// and its result file back (docs/operations.md "Agent isolation"): it finds it (its parent, or sh running the
// launcher's script, named swarm-agent, where its /proc shows one) and every other process it sees, and of each opens
// the memory read-write, reads the environment, signals and ptraces it. Then, on x86-64, it writes code into the
// launcher where it waits for the agent (/proc/<pid>/syscall says where), code that reports plenty of room on fd 3
// and exits 0 before the launcher measures anything. With `fill`, it first fills its TMPDIR and answers as if all went
// well: the run must fail disk_quota all the same. What it saw goes to stderr too, since a run that fails disk_quota
// keeps no answer. Shared by test/node/hostile-agents.test.ts (bubblewrap as root) and unprivileged-sandbox.test.ts.
import { expect } from 'vitest';
import { agentProgram } from '../helpers/bundles.js';

/** ptrace(PTRACE_ATTACH) through ctypes: 'ok' or the errno's name. */
const PTRACE = String.raw`
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
result = libc.ptrace(ctypes.c_long(16), ctypes.c_long(int(sys.argv[1])), None, None)
print('ok' if result == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())))
`;

export const LAUNCHER_PROBE = agentProgram(`const fs = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  // Where the service checks the input against a catalog agent's schema, a file says what to do.
  const instructions = process.env.SWARM_AGENT_DIR + '/asked.json';
  const asked = fs.existsSync(instructions) ? JSON.parse(fs.readFileSync(instructions, 'utf8')) : run.input;
  const attempt = (fn) => { try { fn(); return 'allowed'; } catch (error) { return error.code ?? error.message; } };
  const cmdline = (pid) => { try { return fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\\0'); } catch { return []; } };
  const visible = fs.readdirSync('/proc').filter((name) => /^\\d+$/.test(name)).map(Number).filter((pid) => pid !== process.pid);
  // The launcher: sh running its script, named swarm-agent (bubblewrap's init, which started it, holds its words too).
  const launchers = visible.filter((pid) => cmdline(pid)[0] === '/bin/sh' && cmdline(pid).includes('swarm-agent'));
  // Plenty of room on every filesystem a launcher reports.
  const forged = Buffer.from(['/tmp', '/tmp/run', '/dev/shm'].map((path) => '999999999 999999999 999999999 999999 4096 ' + path + '\\n').join(''));
  const ptrace = (pid) => {
    try { return execFileSync('python3', ['-c', ${JSON.stringify(PTRACE)}, String(pid)], { encoding: 'utf8' }).trim(); } catch (error) { return 'python3: ' + (error.code ?? error.message); }
  };
  const reach = (pid) => ({
    mem: attempt(() => fs.closeSync(fs.openSync('/proc/' + pid + '/mem', 'r+'))),
    environ: attempt(() => fs.readFileSync('/proc/' + pid + '/environ')),
    signal: attempt(() => process.kill(pid, 0)),
    ptrace: ptrace(pid),
  });
  // lea rsi, [rip + 26]; mov eax, 1 (write); mov edi, 3; mov edx, length; syscall; mov eax, 231 (exit_group);
  // xor edi, edi; syscall; then the forged report.
  const length = [0, 8, 16, 24].map((shift) => (forged.length >> shift) & 0xff);
  const code = Buffer.from([0x48, 0x8d, 0x35, 26, 0, 0, 0, 0xb8, 1, 0, 0, 0, 0xbf, 3, 0, 0, 0, 0xba, ...length, 0x0f, 0x05, 0xb8, 231, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05]);
  const inject = (pid) => {
    if (process.arch !== 'x64') return 'not on x86-64';
    let mem;
    try { mem = fs.openSync('/proc/' + pid + '/mem', 'r+'); } catch (error) { return error.code; }
    // Where it returns to from the call it waits in.
    const pc = Number(fs.readFileSync('/proc/' + pid + '/syscall', 'utf8').trim().split(' ').at(-1));
    const written = fs.writeSync(mem, Buffer.concat([code, forged]), 0, code.length + forged.length, pc);
    fs.closeSync(mem);
    return written === code.length + forged.length ? 'written' : 'short';
  };
  const out = {
    parent: cmdline(process.ppid)[0] ?? 'not visible',
    parent_is_launcher: launchers.includes(process.ppid),
    launchers: launchers.length,
    // Its parent, whether its /proc shows it or not, and every process it sees but itself, by what it runs.
    parent_reached: reach(process.ppid),
    reached: Object.fromEntries(visible.map((pid) => [(launchers.includes(pid) ? 'launcher' : (cmdline(pid)[0] ?? '?').split('/').pop()), reach(pid)])),
  };
  if (asked.fill) {
    try { for (let i = 0; ; i += 1) fs.writeFileSync(process.env.TMPDIR + '/fill-' + i, Buffer.alloc(1024 * 1024, 1)); } catch (error) { out.filled = error.code; }
  }
  out.inject = launchers.length === 0 ? 'no launcher in sight' : inject(launchers[0]);
  process.stderr.write('launcher-probe ' + JSON.stringify(out) + '\\n');
  process.stdout.write(JSON.stringify({ summary: 'probed', ...out }));`);

/** What the probe saw, from the run's stderr (its answer, where the run failed, is not kept). */
export function probeSeen(stderr: string): Record<string, unknown> | undefined {
  const line = stderr.split('\n').find((entry) => entry.startsWith('launcher-probe '));
  return line === undefined ? undefined : (JSON.parse(line.slice('launcher-probe '.length)) as Record<string, unknown>);
}

/** Each way the kernel refuses a process of another uid, or one it cannot name (a pid not in its namespace). */
export const REFUSED = expect.stringMatching(/^(EACCES|EPERM|ENOENT|ESRCH)$/);
