// What the demo starts and must take down again: a scratch directory, the service, the daemon, and the CLI runs in
// flight. Cleanup runs once, on success, on failure, and on Ctrl+C or SIGTERM; an exit by any other path still
// signals the children and removes the scratch directory synchronously.
import { execa } from 'execa';
import { chmodSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
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

/** Stops everything still running and removes the scratch directory; once, however often it is asked. */
export function cleanup() {
  cleanupPromise ??= (async () => {
    abort.abort();
    const waits = [...running].map(async (child) => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await child.catch(() => undefined);
      clearTimeout(timer);
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
