// What every agent's eval shares: running an agent of agents/ as a node runs it (its manifest's entry, the run
// document on stdin, a clean environment, a private working directory), temporary directories, and the printing
// of figures. The eval measures; it asserts nothing (npm run eval:agents, outside npm test).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const AGENTS_DIR = join(REPO_ROOT, 'agents');
export const SETS_DIR = join(REPO_ROOT, 'scripts', 'eval', 'sets');

const made = [];
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `eval-${prefix}-`));
  made.push(dir);
  return dir;
}
export function removeTempDirs() {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function readSet(agentId, part) {
  return JSON.parse(readFileSync(join(SETS_DIR, agentId, `${part}.json`), 'utf8'));
}

/**
 * An agent's parts, training first: train.json, then train-2.json… (held-out parts moved into training once their
 * results were read, each saying so in its `about`), then heldout.json, the part kept aside now.
 */
export function setParts(agentId) {
  // --no-heldout: the training parts alone, to tune on without reading the held-out part's figures.
  const heldout = !process.argv.includes('--no-heldout');
  const names = readdirSync(join(SETS_DIR, agentId))
    .map((file) => /^(train(?:-(\d+))?|heldout)\.json$/.exec(file))
    .filter((match) => match !== null && (heldout || match[1] !== 'heldout'));
  const order = (match) => (match[1] === 'heldout' ? Infinity : Number(match[2] ?? 1));
  return names.sort((a, b) => order(a) - order(b)).map((match) => match[1]);
}

/**
 * One run of `agentId` with `input`. `stateDir` is kept between runs (SWARM_STATE_DIR), `artifactsDir` receives
 * the run's files (SWARM_ARTIFACTS_DIR), `env` adds variables (an agent's declared secrets).
 */
export function runAgent(agentId, input, { stateDir, artifactsDir, env = {}, tier = 'svc_starter_agents', timeoutMs = 3_600_000 } = {}) {
  const agentDir = join(AGENTS_DIR, agentId);
  const manifest = JSON.parse(readFileSync(join(agentDir, 'agent.json'), 'utf8'));
  const runDir = tempDir('run');
  if (stateDir) mkdirSync(stateDir, { recursive: true });
  const runId = randomUUID();
  const [program, ...args] = manifest.entry;
  const childEnv = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: runDir,
    TMPDIR: runDir,
    LANG: 'C.UTF-8',
    SWARM_RUN_ID: runId,
    SWARM_AGENT_ID: agentId,
    SWARM_AGENT_DIR: agentDir,
    SWARM_NODE_HOME: join(runDir, 'no-node-home'),
    SWARM_DOCS_DIR: join(REPO_ROOT, 'docs', 'sections'),
    ...(stateDir ? { SWARM_STATE_DIR: stateDir } : {}),
    ...(artifactsDir ? { SWARM_ARTIFACTS_DIR: artifactsDir } : {}),
    ...env,
  };
  const command = program === 'node' ? process.execPath : program;
  const argv = args.map((arg) => (arg.endsWith('.mjs') ? join(agentDir, arg) : arg));
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { cwd: runDir, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs });
    const out = [];
    let stderr = '';
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (exitCode) => {
      const stdout = Buffer.concat(out).toString('utf8');
      let json = null;
      try {
        json = stdout.trim() === '' ? null : JSON.parse(stdout);
      } catch {
        json = null;
      }
      resolve({ exitCode, json, stderr: stderr.trim(), ms: performance.now() - started });
    });
    child.stdin.end(JSON.stringify({ run_id: runId, agent_id: agentId, user_id: 'eval@example.com', tier, input }));
  });
}

export function percent(part, whole) {
  return whole === 0 ? 'n/a' : `${((100 * part) / whole).toFixed(1)}%`;
}

/** One figure: `label  value  (detail)`. */
export function figure(label, value, detail = '') {
  process.stdout.write(`  ${label.padEnd(58)} ${String(value).padStart(12)}${detail ? `  ${detail}` : ''}\n`);
}

export function heading(text) {
  process.stdout.write(`\n${text}\n`);
}
