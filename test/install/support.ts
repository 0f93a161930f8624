// Helpers for the install tests: run a swarm-node binary (the repo's, or one installed under a scratch root) with a
// clean environment, snapshot a tree, and fake a newer version by re-labelling a copy of an installed release.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { runProgram, type CliResult } from '../helpers/cli.js';
import { SWARM_NODE_BIN } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';

export const INSTALL_PATH = 'opt/svc/swarm-node';

export type Run = CliResult;

/** The environment of a fresh shell: no proxy, token or home leaks in from the test runner. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  // The staged package on the PATH, as installed: what it prints names it bare (src/lib/program-word.ts).
  const env: Record<string, string> = {
    PATH: `${stagedOnPath()}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: process.env.HOME ?? '/root',
    NO_COLOR: '1',
  };
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
}

export function run(
  command: string,
  args: string[],
  options: { env?: Record<string, string | undefined>; input?: string; cwd?: string; timeoutMs?: number } = {},
): Promise<Run> {
  return runProgram(command, args, { ...options, env: cleanEnv(options.env), extendEnv: false, timeoutMs: options.timeoutMs ?? 60_000 });
}

/** A directory with links named swarm-node and svc-api to the staged package's bin/ scripts. */
export function stagedOnPath(): string {
  const bin = join(stagedPackage(), 'bin');
  // Beside the package, not in it: a release built from the package must not carry it.
  const dir = join(stagedPackage(), '..', 'on-path');
  if (!existsSync(dir)) {
    mkdirSync(dir);
    for (const program of ['swarm-node', 'svc-api']) symlinkSync(join(bin, `${program}.js`), join(dir, program));
  }
  return dir;
}

let staged: string | undefined;

/**
 * The built package of this checkout (npm run build first; `npm test` does), copied once per test file as it
 * ships (package.json `files`), with node_modules linked: a rebuild of dist/ by someone else mid-test cannot
 * pull the binary away, and what runs is what a package holds, not the source tree.
 */
export function stagedPackage(): string {
  // Re-staged when a suite's removeTempDirs() took the previous copy away.
  if (staged !== undefined && existsSync(staged)) return staged;
  const source = join(SWARM_NODE_BIN, '..', '..');
  const manifest = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as { files: string[] };
  for (let attempt = 1; ; attempt += 1) {
    const dir = join(tempDir('swarm-node-built-'), 'package');
    try {
      for (const entry of ['package.json', ...manifest.files]) {
        if (existsSync(join(source, entry))) cpSync(join(source, entry), join(dir, entry), { recursive: true });
      }
      symlinkSync(join(source, 'node_modules'), join(dir, 'node_modules'));
      if (existsSync(join(dir, 'dist', 'swarm-node.js'))) return (staged = dir);
    } catch (error) {
      if (attempt >= 5) throw error;
    }
    if (attempt >= 5) throw new Error('dist/ is missing: run npm run build');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2_000);
  }
}

export function swarmNode(args: string[], options: Parameters<typeof run>[2] = {}): Promise<Run> {
  return run('node', [join(stagedPackage(), 'bin', 'swarm-node.js'), ...args], options);
}

export function writeTokenFile(token: string): string {
  const file = join(tempDir('deploy-token-'), 'token');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return file;
}

export function homeOf(root: string): string {
  return join(root, INSTALL_PATH);
}

/** Every file and link under `root` (directories are left out: empty ones may stay on a real host). */
export function filesUnder(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else found.push(relative(root, path));
    }
  };
  if (existsSync(root)) walk(root);
  return found.sort();
}

/** Path → what it is now (content hash, link target, mode, mtime): equal snapshots, nothing touched. */
export function snapshot(root: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const path of filesUnder(root)) {
    const full = join(root, path);
    const stat = lstatSync(full);
    entries[path] = stat.isSymbolicLink()
      ? `link ${readlinkSync(full)}`
      : `${(stat.mode & 0o7777).toString(8)} ${stat.mtimeMs} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`;
  }
  return entries;
}

/** Test-only: a "newer" package made from an installed release, differing only in its version. */
export function relabelledPackage(releaseDir: string, version: string): string {
  const dir = join(tempDir('swarm-node-pkg-'), `svc-swarm-node-${version}`);
  cpSync(releaseDir, dir, { recursive: true, verbatimSymlinks: true });
  const manifestPath = join(dir, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  writeFileSync(manifestPath, `${JSON.stringify({ ...manifest, version }, null, 2)}\n`);
  return dir;
}

export function mode(path: string): number {
  return lstatSync(path).mode & 0o777;
}

/**
 * `swarm-node login` of an installed node by mail, as a script does it: --send-code (for the address the node knows,
 * its user's), the code read from that inbox, then the login that takes it on standard input. `prefix`: global
 * options before the command (--node gpu).
 */
export async function loginByMail(bin: string, prefix: string[], env: Record<string, string | undefined>): Promise<Run> {
  const sent = await run(bin, [...prefix, '--json', 'login', '--send-code'], { env });
  if (sent.exitCode !== 0) return sent;
  const email = String(sent.json.email);
  const mail = await nextMailTo(email, { match: (each) => each.text.includes(`reference ${String(sent.json.challenge_id).slice(0, 8)}`) });
  return run(bin, [...prefix, 'login'], { env, input: `${signInCodeOf(mail)}\n` });
}
