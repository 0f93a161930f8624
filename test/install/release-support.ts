// Helpers for the release tests: a throwaway signing key, `npm run release` of the staged package (with or without
// the Node runtime, which release-runtime-setup.ts fetched for the run), publishing into a service's releases
// directory, and a PATH without node.
import { generateKeyPairSync } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { expect } from 'vitest';
import { releaseRuntimeVersion } from '../../src/release/runtime-package.js';
import { readDaemonRecord, startedHealthy, type DaemonRecord } from '../../src/node/install/daemon-health.js';
import { activatedSession, waitFor } from '../helpers/funnel.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { run, stagedPackage, writeTokenFile } from './support.js';

export interface SigningKey {
  privateFile: string;
  publicFile: string;
  publicPem: string;
}

export function signingKey(label: string): SigningKey {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const dir = tempDir(`release-key-${label}-`);
  const privateFile = join(dir, `${label}.pem`);
  const publicFile = join(dir, `${label}.pub.pem`);
  const publicPem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
  writeFileSync(privateFile, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  writeFileSync(publicFile, publicPem, { mode: 0o644 });
  return { privateFile, publicFile, publicPem };
}

/** The Node.js a release ships, `v22.23.3` (package.json's releaseRuntime.node). */
export const RELEASE_RUNTIME = `v${releaseRuntimeVersion(REPO_ROOT)}`;

export interface BuiltRelease {
  version: string;
  runtime: string | null;
  runtime_source: { package: string; integrity: string } | null;
  engines: { node: string };
  artifact: { path: string; bytes: number; sha256: string };
  sha256_file: string;
  manifest: string;
  signature: string;
  deb: { path: string; bytes: number } | null;
  files: number;
  unpacked_bytes: number;
  seconds: number;
}

/** `npm run release` of the staged package (or `packageDir`), into a directory of its own. */
export async function buildRelease(
  key: SigningKey,
  options: { version?: string; runtime?: boolean; deb?: boolean; packageDir?: string } = {},
): Promise<BuiltRelease> {
  const packageDir = options.packageDir ?? stagedPackage();
  const out = tempDir('release-out-');
  const args = [join(packageDir, 'dist', 'swarm-node-release.js'), '--key', key.privateFile, '--out', out, '--package-dir', packageDir];
  if (options.version !== undefined) args.push('--version', options.version);
  if (options.runtime !== true) args.push('--no-runtime');
  if (options.deb !== true) args.push('--no-deb');
  const result = await run('node', args, { timeoutMs: 240_000 });
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as BuiltRelease;
}

/** install.sh --artifact of `release` under `root`, trusting `key`, enrolled with a fresh deploy token of `baseUrl`. */
export async function installWithScript(
  baseUrl: string,
  release: BuiltRelease,
  key: SigningKey,
  root: string,
  extra: string[] = [],
): Promise<void> {
  const { deploy_token } = await activatedSession(baseUrl, uniqueEmail('script-install'));
  const installSh = new URL('../../scripts/install.sh', import.meta.url).pathname;
  const args = [
    '--base-url',
    baseUrl,
    '--root',
    root,
    '--artifact',
    release.artifact.path,
    '--trust-key',
    key.publicFile,
    '--token-file',
    writeTokenFile(deploy_token),
    ...extra,
  ];
  const installed = await run('sh', [installSh, ...args]);
  expect(installed.exitCode, installed.stderr).toBe(0);
}

/** The record of the node's daemon once one started after `since` is alive and has ticked (daemon-health.ts). */
export function healthyDaemonOf(home: string, since: number): Promise<DaemonRecord> {
  return waitFor(
    async () => {
      const record = readDaemonRecord(join(home, 'var', 'swarm-node.db'));
      return startedHealthy(record, since) ? record : undefined;
    },
    'a healthy daemon',
    60_000,
  );
}

/** Copies a release's four files into a directory svc-api serves (--releases-dir). */
export function publish(release: Pick<BuiltRelease, 'artifact' | 'sha256_file' | 'manifest' | 'signature'>, releasesDir: string): void {
  mkdirSync(releasesDir, { recursive: true });
  for (const file of [release.artifact.path, release.sha256_file, release.manifest, release.signature])
    copyFileSync(file, join(releasesDir, basename(file)));
}

/** A copy of the staged package whose daemon exits at once: a release that cannot start. */
export function brokenPackage(): string {
  const dir = join(tempDir('broken-package-'), 'package');
  cpSync(stagedPackage(), dir, { recursive: true, verbatimSymlinks: true });
  const bin = join(dir, 'bin', 'swarm-node.js');
  const text = readFileSync(bin, 'utf8').replace(
    /^(#!.*\n)/,
    "$1if (process.argv[2] === 'daemon') { process.stderr.write('this release is broken on purpose\\n'); process.exit(70); }\n",
  );
  writeFileSync(bin, text);
  return dir;
}

/** The tools install.sh uses, linked into one directory, and nothing else: no node. */
export function pathWithoutNode(): string {
  const dir = tempDir('path-without-node-');
  const tools = [
    'sh',
    'curl',
    'openssl',
    'sha256sum',
    'tar',
    'gzip',
    'mktemp',
    'sed',
    'grep',
    'awk',
    'tr',
    'cut',
    'head',
    'wc',
    'find',
    'cat',
    'cp',
    'rm',
    'mkdir',
    'chmod',
    'dirname',
    'basename',
    'uname',
    'id',
    'readlink',
    'env',
    'ls',
    // What a root node's state images take (src/node/runner/state-image-probe.ts): doctor's isolation check tries them.
    'truncate',
    'mkfs.ext4',
    'debugfs',
    'unshare',
    'mount',
  ];
  for (const tool of tools) {
    const found = ['/usr/bin', '/bin', '/usr/local/bin', '/usr/sbin', '/sbin']
      .map((prefix) => join(prefix, tool))
      .find((path) => existsSync(path));
    expect(found, `${tool} is not installed`).toBeDefined();
    symlinkSync(found!, join(dir, tool));
  }
  // The host's sandbox stays on PATH: doctor's isolation check and the agents' runs need it, not node.
  for (const prefix of ['/usr/bin', '/bin']) {
    if (existsSync(join(prefix, 'bwrap')) && !existsSync(join(dir, 'bwrap'))) symlinkSync(join(prefix, 'bwrap'), join(dir, 'bwrap'));
  }
  expect(existsSync(join(dir, 'node'))).toBe(false);
  return dir;
}
