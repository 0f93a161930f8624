// What a run's system-call filter refuses and lets through (docs/operations.md "Agent isolation", "What each mode
// holds": system calls, keyrings), as an agent sees it: a Node agent that works its threads and the file system, runs
// Python 3 (multiprocessing, subprocess, threads, and the calls themselves through ctypes), git and sh, and programs of
// another ABI. Shared by the bubblewrap tests (test/node/hostile-agents.test.ts, unprivileged-sandbox.test.ts) and the
// systemd mode's (test/install/systemd-nspawn.test.ts).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';
import { agentProgram } from '../helpers/bundles.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { defaultCacheDir } from '../../src/release/release-runtime.js';
import { releaseRuntimeVersion } from '../../src/release/runtime-package.js';

/**
 * The calls through ctypes (numbers per architecture), each answered with what it returned or its errno's name, then
 * Python's own threads, processes and children. argv: the launcher's pid (the agent's parent), what to do with the
 * user keyring (add, find, or nothing) and the key's description.
 */
const PYTHON = String.raw`
import ctypes, errno, json, multiprocessing, os, platform, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {
    'x86_64': dict(add_key=248, request_key=249, keyctl=250, unshare=272, clone=56, ptrace=101, process_vm_readv=310,
                   clone3=435, io_uring_setup=425, personality=135),
    'aarch64': dict(add_key=217, request_key=218, keyctl=219, unshare=97, clone=220, ptrace=117, process_vm_readv=270,
                    clone3=435, io_uring_setup=425, personality=92),
}[platform.machine()]
KEY_SPEC_USER_KEYRING, KEYCTL_SEARCH = -4, 10
CLONE_NEWUSER, SIGCHLD, PTRACE_SEIZE, ADDR_NO_RANDOMIZE = 0x10000000, 17, 0x4206, 0x0040000

def call(name, *args):
    ctypes.set_errno(0)
    result = libc.syscall(NR[name], *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return 'ok' if result >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

def square(n):
    return n * n

def thread_sum():
    seen = []
    threads = [threading.Thread(target=seen.append, args=(n,)) for n in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    return sum(seen)

if __name__ == '__main__':
    launcher, keyring, desc = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
    out = {}
    if keyring == 'add':
        out['add_key'] = call('add_key', b'user', desc, b'left for the next run', 21, KEY_SPEC_USER_KEYRING)
    if keyring == 'find':
        out['keyctl_search'] = call('keyctl', KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b'user', desc, 0)
        out['request_key'] = call('request_key', b'user', desc, None, 0)
    out['ptrace_launcher'] = call('ptrace', PTRACE_SEIZE, launcher, None, None)
    # One byte of the launcher's first mapping, as a debugger reads it; where its maps are not the agent's to read (a
    # launcher of another uid), of where a program is mapped without ASLR.
    try:
        start = int(open('/proc/%d/maps' % launcher).readline().split('-')[0], 16)
    except OSError:
        start = 0x400000
    buffer = ctypes.create_string_buffer(1)
    local, remote = (ctypes.c_void_p * 2)(ctypes.addressof(buffer), 1), (ctypes.c_void_p * 2)(start, 1)
    out['process_vm_readv_launcher'] = call('process_vm_readv', launcher, local, 1, remote, 1, 0)
    out['clone3'] = call('clone3', None, 0)
    out['io_uring_setup'] = call('io_uring_setup', 1, ctypes.create_string_buffer(120))
    out['personality_query'] = call('personality', 0xFFFFFFFF)
    out['personality_no_aslr'] = call('personality', ADDR_NO_RANDOMIZE)
    out['threads'] = thread_sum()
    with multiprocessing.Pool(2) as pool:
        out['multiprocessing'] = sum(pool.map(square, range(10)))
    out['subprocess'] = subprocess.run(['sh', '-c', 'echo $((6 * 7))'], capture_output=True, text=True, check=True).stdout.strip()
    # Last: a user namespace of its own would leave this process's uid unmapped, and the calls above refused by that.
    child = libc.syscall(NR['clone'], ctypes.c_long(CLONE_NEWUSER | SIGCHLD), None, None, None, None)
    if child == 0:
        os._exit(0)
    out['clone_newuser'] = 'ok' if child > 0 else errno.errorcode[ctypes.get_errno()]
    if child > 0: os.waitpid(child, 0)
    out['unshare_user'] = call('unshare', CLONE_NEWUSER)
    print(json.dumps(out))
`;

/**
 * The agent (its input, or its bundle's asked.json): `node_only` works Node alone (its threads and the file system
 * under load); otherwise Python's probe, git, sh and each program of `programs` (a bundle file), reporting how each
 * ended.
 */
export const SYSCALL_PROBE = agentProgram(`const fs = await import('node:fs');
  const { Worker } = await import('node:worker_threads');
  const { execFileSync, spawnSync } = await import('node:child_process');
  // Where the service checks the input against a catalog agent's schema (systemd-nspawn.test.ts), a file says what to do.
  const instructions = process.env.SWARM_AGENT_DIR + '/asked.json';
  const asked = fs.existsSync(instructions) ? JSON.parse(fs.readFileSync(instructions, 'utf8')) : run.input;
  const dir = process.env.TMPDIR;
  const worker = (n) => new Promise((resolve, reject) => {
    const code = "const { parentPort, workerData } = require('node:worker_threads'); const c = require('node:crypto');" +
      "parentPort.postMessage(c.pbkdf2Sync('x', 'salt', 20000, 32, 'sha256').length + workerData);";
    const w = new Worker(code, { eval: true, workerData: n });
    w.on('message', resolve);
    w.on('error', reject);
  });
  const out = { node: process.version };
  out.workers = (await Promise.all([0, 1, 2, 3].map(worker))).reduce((a, b) => a + b, 0);
  // The file system under load: libuv's thread pool, 128 requests at once (the run's descriptors are 256), 3 rounds.
  out.fs = 0;
  for (let round = 0; round < 3; round += 1) {
    const files = Array.from({ length: 128 }, (_, i) => dir + '/load-' + i);
    await Promise.all(files.map((file, i) => fs.promises.writeFile(file, String(i + round).repeat(1000))));
    const read = await Promise.all(files.map((file) => fs.promises.readFile(file, 'utf8')));
    out.fs += read.filter((text, i) => text === String(i + round).repeat(1000)).length;
    await Promise.all(files.map((file) => fs.promises.rm(file)));
  }
  if (!asked.node_only) {
    const args = [String(process.ppid), asked.keyring ?? '', asked.key ?? ''];
    out.python = JSON.parse(execFileSync('python3', ['-c', ${JSON.stringify(PYTHON)}, ...args], { encoding: 'utf8' }));
    const git = (...args) => execFileSync('git', ['-C', dir + '/repo', ...args], { encoding: 'utf8' }).trim();
    fs.mkdirSync(dir + '/repo');
    git('init', '-q');
    fs.writeFileSync(dir + '/repo/file', 'x');
    git('add', 'file');
    git('-c', 'user.name=probe', '-c', 'user.email=probe@example.com', 'commit', '-qm', 'probe');
    out.git = git('log', '--format=%s');
    out.sh = execFileSync('sh', ['-c', 'a=$(echo 6); b=$( (echo 7) & wait ); echo $((a * b)) | cat'], { encoding: 'utf8' }).trim();
    out.programs = Object.fromEntries((asked.programs ?? []).map((name) => {
      const ran = spawnSync(process.env.SWARM_AGENT_DIR + '/' + name);
      return [name, ran.signal ?? ran.status];
    }));
  }
  process.stdout.write(JSON.stringify({ summary: 'probed', ...out }));`);

/** What Node's part answers: 4 workers' sums (32 bytes each and their number), 3 rounds of 128 files. */
export const NODE_WORKS = { workers: 4 * 32 + 6, fs: 384 };

/** What each program of another ABI ended with: killed by the filter. */
export function killedBySigsys(programs: string[]): Record<string, string> {
  return Object.fromEntries(programs.map((name) => [name, 'SIGSYS']));
}

/** What the probe answers where the filter holds, whichever mode (but for what `find` asks of the keyring). */
export const FILTERED = {
  unshare_user: 'EPERM',
  clone_newuser: 'EPERM',
  ptrace_launcher: 'EPERM',
  process_vm_readv_launcher: 'EPERM',
  clone3: 'ENOSYS',
  io_uring_setup: 'ENOSYS',
  personality_query: 'ok',
  personality_no_aslr: 'EPERM',
  threads: 6,
  multiprocessing: 285,
  subprocess: '42',
};

/** A static x86-64 program of `code` (no libc): one loadable segment, its entry right after the headers. */
function tinyElf(code: number[]): Buffer {
  const base = 0x400000;
  const headers = 64 + 56;
  const elf = Buffer.alloc(headers + code.length);
  elf.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0); // ELF, 64-bit, little-endian, version 1
  elf.writeUInt16LE(2, 16); // ET_EXEC
  elf.writeUInt16LE(62, 18); // EM_X86_64
  elf.writeUInt32LE(1, 20);
  elf.writeBigUInt64LE(BigInt(base + headers), 24); // e_entry
  elf.writeBigUInt64LE(64n, 32); // e_phoff
  elf.writeUInt16LE(64, 52); // e_ehsize
  elf.writeUInt16LE(56, 54); // e_phentsize
  elf.writeUInt16LE(1, 56); // e_phnum
  elf.writeUInt32LE(1, 64); // PT_LOAD
  elf.writeUInt32LE(5, 68); // PF_R | PF_X
  elf.writeBigUInt64LE(BigInt(base), 80); // p_vaddr
  elf.writeBigUInt64LE(BigInt(base), 88); // p_paddr
  elf.writeBigUInt64LE(BigInt(elf.length), 96); // p_filesz
  elf.writeBigUInt64LE(BigInt(elf.length), 104); // p_memsz
  elf.writeBigUInt64LE(0x1000n, 112); // p_align
  elf.set(code, headers);
  return elf;
}

/** exit(0) through the native ABI: mov eax, 60; xor edi, edi; syscall. */
const EXIT_0 = [0xb8, 60, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05];

/**
 * Programs that make one call of another ABI and then exit 0: getpid through int 0x80 (i386) and through syscall
 * with the x32 bit (x32). Hand-assembled, since neither gcc -m32 (gcc-multilib) nor an x32 toolchain is on the
 * build machine, and no interpreter makes a call of another ABI than its own. x86-64 only.
 */
export const OTHER_ABI_PROGRAMS: Record<string, Buffer> =
  arch() === 'x64'
    ? {
        i386: tinyElf([0xb8, 20, 0, 0, 0, 0xcd, 0x80, ...EXIT_0]),
        x32: tinyElf([0xb8, 39, 0, 0, 0x40, 0x0f, 0x05, ...EXIT_0]),
      }
    : {};

/** Writes the programs into a bundle directory (executable) and returns their names. */
export function writeOtherAbiPrograms(dir: string): string[] {
  for (const [name, program] of Object.entries(OTHER_ABI_PROGRAMS)) writeFileSync(join(dir, name), program, { mode: 0o755 });
  return Object.keys(OTHER_ABI_PROGRAMS);
}

/**
 * Node 22, the release's runtime (package.json releaseRuntime.node), unpacked into `bundleDir` from the cache the
 * release tests fill (test/helpers/release-runtime-setup.ts): its path in the bundle, or why there is none.
 */
export function releaseNodeIn(bundleDir: string): { entry: string } | { missing: string } {
  const version = releaseRuntimeVersion(REPO_ROOT);
  const tarball = join(defaultCacheDir(REPO_ROOT), `node-linux-${arch()}-${version}.tgz`);
  if (!existsSync(tarball)) return { missing: `${tarball} is absent (npx vitest run --project release fills it)` };
  execFileSync('tar', ['-xzf', tarball, '-C', bundleDir, '--no-same-owner', 'package/bin/node']);
  return { entry: 'package/bin/node' };
}

/** A key description no other run of the tests uses. */
export function keyName(): string {
  return `swarm-test-${randomUUID()}`;
}
