// npm run release (docs/operations.md "Releases"): builds swarm-node-<version>-linux-<arch>.tar.gz with its SHA-256
// file, its signed manifest and a .deb, from the built package (npm run build first; `npm run release` does), with
// the Node.js of package.json's releaseRuntime.node (release-runtime.ts). The signing key is an Ed25519 private key
// in a file kept off the repository, named by --key or SVC_RELEASE_SIGNING_KEY.
import { createPublicKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { hostPlatform, RELEASE_VERSION_PATTERN, releaseStem } from '../lib/release-manifest.js';
import { keyId, privateKeyFromPem } from '../lib/release-signature.js';
import { runningPackageDir } from '../lib/package-dir.js';
import { packRelease } from './artifact.js';
import { buildDeb } from './deb.js';
import { defaultCacheDir, prepareReleaseRuntime, releaseEngineRange } from './release-runtime.js';
import { stageReleaseTree } from './release-tree.js';

/** Progress to stderr: stdout carries the summary, as JSON. */
const log = (line: string) => process.stderr.write(`release: ${line}\n`);

const USAGE = `Usage: npm run release -- [--key FILE] [--out DIR] [--version V] [--no-runtime] [--no-deb] [--cache-dir DIR]

Builds the release of this package for this host's platform (linux-${process.arch}):
  swarm-node-<version>-linux-<arch>.tar.gz          the node: bundle, native addon, units, agents, Node runtime
  swarm-node-<version>-linux-<arch>.tar.gz.sha256   its SHA-256 (sha256sum -c)
  swarm-node-<version>-linux-<arch>.manifest        every file's SHA-256, the tarball's, the runtime's version
  swarm-node-<version>-linux-<arch>.manifest.sig    Ed25519 signature of the manifest (raw 64 bytes)
  svc-swarm-node_<version>_<arch>.deb               the same tree as a Debian package

Options:
  --key FILE       the Ed25519 private key (PEM) that signs; or SVC_RELEASE_SIGNING_KEY=FILE. Never in the repository.
  --out DIR        where the files go                                   default: release/
  --version V      the release's version                               default: package.json's
  --no-runtime     ship no Node runtime: the host brings the Node that builds the release (its major, at least
                   its version; the release's package.json engines says so), for which npm ci built the addon
  --no-strip       ship the runtime with its symbols (by default strip(1) drops them: ~2 MB less compressed)
  --no-deb         skip the .deb
  --package-dir D  the built package to release                        default: this checkout
  --cache-dir D    where the runtime package and the addon built for it are kept
                                                  default: <package-dir>/node_modules/.cache/swarm-node-release

The runtime is the npm registry's node-linux-<arch> at package.json's releaseRuntime.node, fetched with npm once
(checked against the registry's dist.integrity) and cached; better-sqlite3 is built for it with node-gyp against
its headers, once per version (python3, make and g++ are needed).

Example:
  $ openssl genpkey -algorithm ed25519 -out ~/keys/svc-release.pem     # once, off the repository
  $ SVC_RELEASE_SIGNING_KEY=~/keys/svc-release.pem npm run release -- --out /srv/svc-api/releases
`;

function main(): number {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        key: { type: 'string' },
        out: { type: 'string' },
        version: { type: 'string' },
        'no-runtime': { type: 'boolean', default: false },
        'no-deb': { type: 'boolean', default: false },
        'no-strip': { type: 'boolean', default: false },
        'package-dir': { type: 'string' },
        'cache-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    process.stderr.write(`release: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const keyFile = values.key ?? process.env.SVC_RELEASE_SIGNING_KEY;
  if (keyFile === undefined || keyFile === '') {
    process.stderr.write('release: no signing key: pass --key FILE or set SVC_RELEASE_SIGNING_KEY=FILE (an Ed25519 private key in PEM)\n');
    return 2;
  }
  if (values.version !== undefined && !RELEASE_VERSION_PATTERN.test(values.version)) {
    process.stderr.write(`release: --version ${JSON.stringify(values.version)} is not a usable version (letters, digits, . + _ -)\n`);
    return 2;
  }
  const keyStat = statSync(keyFile, { throwIfNoEntry: false });
  if (keyStat === undefined) {
    process.stderr.write(`release: no signing key at ${keyFile}\n`);
    return 2;
  }
  if ((keyStat.mode & 0o077) !== 0) process.stderr.write(`release: warning: ${keyFile} is readable by others; chmod 600 it\n`);
  const signingKey = privateKeyFromPem(readFileSync(keyFile, 'utf8'), keyFile);

  const started = Date.now();
  const packageDir = resolve(values['package-dir'] ?? runningPackageDir());
  const outDir = resolve(values.out ?? join(packageDir, 'release'));
  mkdirSync(outDir, { recursive: true });
  const platform = hostPlatform();
  const work = mkdtempSync(join(tmpdir(), 'swarm-node-release-'));
  try {
    const prepared = values['no-runtime']
      ? null
      : prepareReleaseRuntime({
          packageDir,
          platform,
          cacheDir: resolve(values['cache-dir'] ?? defaultCacheDir(packageDir)),
          workDir: work,
          log,
        });
    const runtime =
      prepared === null ? null : { binary: prepared.binary, version: prepared.version, addon: prepared.addon, strip: !values['no-strip'] };
    const engines = { node: releaseEngineRange(runtime?.version ?? process.version) };
    const stage = join(work, 'stage');
    // The top directory is named after the version, known once package.json is read: stage, then rename.
    const provisional = join(stage, 'tree');
    const tree = stageReleaseTree(packageDir, provisional, {
      ...(values.version === undefined ? {} : { version: values.version }),
      runtime,
      engines,
    });
    const stem = releaseStem(tree.version, platform);
    const treeDir = join(stage, stem);
    rmSync(treeDir, { recursive: true, force: true });
    renameSync(provisional, treeDir);
    const published = packRelease({
      stageDir: stage,
      outDir,
      version: tree.version,
      platform,
      runtime: runtime === null ? null : runtime.version,
      files: tree.files,
      signingKey,
      mtime: Number(process.env.SOURCE_DATE_EPOCH ?? Math.floor(Date.now() / 1000)),
    });
    const deb = values['no-deb']
      ? null
      : buildDeb({
          treeDir,
          workDir: work,
          outFile: join(outDir, `svc-swarm-node_${tree.version}_${platform === 'linux-arm64' ? 'arm64' : 'amd64'}.deb`),
          version: tree.version,
          platform,
          withRuntime: runtime !== null,
          engines,
        });
    const summary = {
      version: tree.version,
      platform,
      runtime: runtime === null ? null : runtime.version,
      runtime_source: prepared?.source ?? null,
      engines,
      signed_by: keyId(createPublicKey(signingKey)),
      files: tree.files.length,
      unpacked_bytes: tree.files.reduce((sum, file) => sum + file.size, 0),
      artifact: { path: published.paths.artifact, bytes: published.manifest.artifact.size, sha256: published.manifest.artifact.sha256 },
      sha256_file: published.paths.sha256,
      manifest: published.paths.manifest,
      signature: published.paths.signature,
      deb: deb === null ? null : { path: deb, bytes: statSync(deb).size },
      seconds: (Date.now() - started) / 1000,
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

try {
  process.exitCode = main();
} catch (error) {
  process.stderr.write(`release: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
