// What the demo starts and must take down again: a scratch directory, the service, the daemon (and the agents it
// runs), and the CLI runs in flight. Cleanup runs once, on success, on failure, and on Ctrl+C or SIGTERM; an exit by
// any other path still signals the children and removes the scratch directory synchronously.
import { execa } from 'execa';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SVC_API_BIN = join(REPO_ROOT, 'bin', 'svc-api.js');
export const SWARM_NODE_BIN = join(REPO_ROOT, 'bin', 'swarm-node.js');

/** A step that did not do what it should: the demo stops, says which step and why, and exits 1. */
export class DemoFailure extends Error {
  constructor(message, output) {
    super(message);
    this.output = output;
  }
}

const running = new Set();
const abort = new AbortController();
let scratch;
let cleanupPromise;
let interruptedBy;

export function makeScratchDir() {
  // realpath: macOS's tmpdir is a symlink, and paths the CLI prints are real ones.
  scratch = realpathSync(mkdtempSync(join(tmpdir(), 'svc-demo-')));
  // 0711, like /opt on a host: as root, each agent run gets a user of its own, which must pass through here to
  // reach its directory under <root>/opt/svc/swarm-node/var/runs (mkdtemp's 0700 refuses it). Passing is not
  // listing, and every file in here has its own mode (the deploy token 0600, the service's data dir 0700).
  chmodSync(scratch, 0o711);
  return scratch;
}

export function interrupted() {
  return interruptedBy;
}

/**
 * The environment every child gets: the caller's, minus anything that would point the programs elsewhere or hand
 * them a secret from the caller's shell, with this Node first on PATH (the installed shim runs `env node`).
 */
export function cleanEnv(extra = {}) {
  const env = { ...process.env };
  for (const name of [
    'SWARM_NODE_HOME',
    'SVC_BASE_URL',
    'SVC_WALLET_URL',
    'SVC_MERCHANT_ID',
    'SVC_JWT',
    'SVC_TOKEN',
    'SVC_DEPLOY_TOKEN',
    'SVC_JWT_SECRET',
    'SVC_WEBHOOK_SECRET',
    'SVC_LOG_LEVEL',
    'FORCE_COLOR',
  ]) {
    delete env[name];
  }
  env.PATH = [dirname(process.execPath), env.PATH ?? ''].join(delimiter);
  env.NO_COLOR = '1';
  return { ...env, ...extra };
}

/** Runs a program to its end; reject: false, the caller judges the exit code. */
export async function runProgram(file, args, { env, timeoutMs = 30_000, input } = {}) {
  if (abort.signal.aborted) throw new DemoFailure('interrupted');
  const child = execa(file, args, {
    env,
    extendEnv: false,
    reject: false,
    all: true,
    timeout: timeoutMs,
    cancelSignal: abort.signal,
    ...(input === undefined ? { stdin: 'ignore' } : { input }),
  });
  running.add(child);
  try {
    const result = await child;
    return {
      exitCode: result.exitCode ?? -1,
      stdout: String(result.stdout ?? ''),
      stderr: String(result.stderr ?? ''),
      all: String(result.all ?? ''),
      timedOut: result.timedOut === true,
    };
  } finally {
    running.delete(child);
  }
}

/**
 * Starts a long-running program and returns once `ready` matches its stdout. Its output is kept (the last 64 KiB)
 * for a failure report and for the caller to read.
 */
export async function startProgram(file, args, { env, ready, timeoutMs = 15_000, name }) {
  const child = execa(file, args, { env, extendEnv: false, reject: false, stdin: 'ignore', buffer: false });
  running.add(child);
  const log = { text: '' };
  const keep = (chunk) => {
    log.text = (log.text + chunk.toString()).slice(-65_536);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = child.then((result) => {
    running.delete(child);
    return result;
  });
  let match;
  if (ready !== undefined) {
    match = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new DemoFailure(`${name} did not start within ${timeoutMs / 1000} s`, log.text)), timeoutMs);
      const look = () => {
        const found = ready.exec(log.text);
        if (found) {
          clearTimeout(timer);
          child.stdout.off('data', look);
          resolve(found);
        }
      };
      child.stdout.on('data', look);
      void exited.then((result) => {
        clearTimeout(timer);
        reject(new DemoFailure(`${name} exited (${result.exitCode ?? result.signal}) before it was ready`, log.text));
      });
    });
  }
  return {
    pid: child.pid,
    match,
    log,
    exited,
    /** Waits until `pattern` matches its output (what it logged so far counts), at most `timeoutMs`. */
    waitFor(pattern, what, timeoutMs = 20_000) {
      return waitUntil(
        () => pattern.exec(log.text) ?? undefined,
        `${name}: ${what}`,
        timeoutMs,
        () => log.text,
      );
    },
    /** SIGKILL to it and to every process it started, at once, as when its host loses power; resolves once it is gone. */
    async kill() {
      killTree(child.pid);
      await exited;
    },
    /** SIGTERM, then its exit code (waits at most `graceMs`, then SIGKILL). */
    async stop(graceMs = 10_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result.exitCode ?? result.signal;
    },
  };
}

/**
 * Polls `probe` (sync or async) until it returns something other than undefined, and returns that; a DemoFailure
 * naming `what` after `timeoutMs`. For the demo's waits on an event it cannot subscribe to: a row, a state, a process.
 */
export async function waitUntil(probe, what, timeoutMs = 20_000, detail = () => '') {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (abort.signal.aborted) throw new DemoFailure('interrupted');
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new DemoFailure(`${what}: not within ${timeoutMs / 1000} s`, detail());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Every process descended from `pid` (Linux /proc): the agents a daemon started are its children. */
export function descendantsOf(pid) {
  if (!existsSync('/proc')) return [];
  const parentOf = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may hold spaces and parentheses; the fields after its last ')' are "state ppid …".
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone between readdir and read.
    }
  }
  const found = [];
  let generation = [pid];
  while (generation.length > 0) {
    generation = [...parentOf].filter(([, parent]) => generation.includes(parent)).map(([child]) => child);
    found.push(...generation);
  }
  return found;
}

/** A process's command line and real uid; undefined once it is gone (a zombie, dead but not yet reaped, is gone). */
export function processInfo(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    if (/^State:\s+Z/m.test(status)) return undefined;
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((word) => word !== '');
    return { pid, commandLine, uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) };
  } catch {
    return undefined;
  }
}

/**
 * SIGKILL to `pid` and all its descendants. Each is stopped first (SIGSTOP), so none starts a process that escapes
 * the kill: an agent a daemon starts runs in a process group of its own, and would outlive its daemon otherwise.
 */
export function killTree(pid) {
  const signal = (target, name) => {
    try {
      process.kill(target, name);
    } catch {
      // Gone already.
    }
  };
  const stopped = new Set([pid]);
  signal(pid, 'SIGSTOP');
  for (let more = true; more;) {
    more = false;
    for (const descendant of descendantsOf(pid)) {
      if (stopped.has(descendant)) continue;
      stopped.add(descendant);
      signal(descendant, 'SIGSTOP');
      more = true;
    }
  }
  for (const target of stopped) signal(target, 'SIGKILL');
}

/** Stops everything still running (and what it started) and removes the scratch directory; once, however often asked. */
export function cleanup() {
  cleanupPromise ??= (async () => {
    abort.abort();
    const waits = [...running].map(async (child) => {
      // Its agents, known now: once it is gone they are no longer its children.
      const descendants = child.pid === undefined ? [] : descendantsOf(child.pid);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => killTree(child.pid), 5_000);
      await child.catch(() => undefined);
      clearTimeout(timer);
      for (const pid of descendants) if (processInfo(pid) !== undefined) killTree(pid);
      // SIGKILL is asynchronous: wait (bounded) until they are dead.
      const deadline = Date.now() + 5_000;
      while (descendants.some((pid) => processInfo(pid) !== undefined) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
    });
    await Promise.all(waits);
    running.clear();
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  })();
  return cleanupPromise;
}

/** Ctrl+C or SIGTERM: take everything down, then exit 130 (or 143), as an interrupted program does. */
export function onInterrupt(report) {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    // `on`, not `once`: execa's exit hook re-raises a signal that no other listener is left to handle, which
    // would kill the demo before its cleanup. A second Ctrl+C while cleaning up changes nothing.
    process.on(signal, () => {
      if (interruptedBy !== undefined) return;
      interruptedBy = signal;
      report(signal);
      void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  process.once('exit', () => {
    for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });
}
