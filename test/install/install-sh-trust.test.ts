// install.sh runs only bytes it verified (docs/operations.md "With scripts/install.sh"), as root: it never picks up
// a package lying beside it (a tree planted by nobody ran as root and read the deploy token), and --artifact is
// copied once into its private directory, verified there and used from there, so a racer who swaps the tarball and
// the manifest at their path after the check has no effect. The version asked for (the service's, the artifact's
// name) is the one the signed manifest must have.
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseManifest, renderManifest, sha256Hex } from '../../src/lib/release-manifest.js';
import { activatedSession } from '../helpers/funnel.js';
import { startRelayout, startVersionLiar, type Interposer } from '../helpers/interposer.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { buildRelease, publish, signingKey, type BuiltRelease, type SigningKey } from './release-support.js';
import { filesUnder, homeOf, run, writeTokenFile } from './support.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
const installSh = new URL('../../scripts/install.sh', import.meta.url).pathname;
const NOBODY = 65534;
let key: SigningKey;
let release: BuiltRelease;

beforeAll(async () => {
  key = signingKey('trust');
  release = await buildRelease(key, { version: '0.1.0' });
  publish(release, releasesDir);
}, 180_000);

const token = async () => writeTokenFile((await activatedSession(service.baseUrl, uniqueEmail('trust'))).deploy_token);

/** A program that, run as swarm-node, leaves `marker` behind: the proof that unverified code ran as root. */
function plantedProgram(marker: string): string {
  // A dynamic import: the same program runs as a CommonJS script and as an ES module (a release's package is "module").
  return `#!/usr/bin/env node\nimport('node:fs').then((fs) => fs.writeFileSync(${JSON.stringify(marker)}, 'ran as uid ' + process.getuid() + '\\n'));\n`;
}

/** The release's own files, installed: what its signed manifest lists, digest by digest. */
function expectVerifiedReleaseInstalled(root: string): void {
  const home = homeOf(root);
  expect(readlinkSync(join(home, 'current'))).toBe('releases/0.1.0');
  const manifest = parseManifest(readFileSync(release.manifest, 'utf8'));
  for (const file of manifest.files) expect(sha256Hex(readFileSync(join(home, 'releases/0.1.0', file.path))), file.path).toBe(file.sha256);
}

describe('install.sh as root', { timeout: 120_000 }, () => {
  it('run as sh ./install.sh beside a package planted by nobody: installs the verified release, never that tree', async () => {
    // /srv/planted/{package.json, bin/swarm-node.js, scripts/install.sh}: the script's parent looks like a package.
    const planted = join(tempDir('planted-'), 'pkg');
    const marker = join(planted, '..', 'pwned');
    mkdirSync(join(planted, 'bin'), { recursive: true });
    mkdirSync(join(planted, 'scripts'));
    writeFileSync(
      join(planted, 'package.json'),
      JSON.stringify({ name: 'svc-swarm-node', version: '9.9.9', engines: { node: '>=20.18.1' } }),
    );
    writeFileSync(join(planted, 'bin', 'swarm-node.js'), plantedProgram(marker));
    copyFileSync(installSh, join(planted, 'scripts', 'install.sh'));
    for (const path of [
      planted,
      join(planted, 'bin'),
      join(planted, 'scripts'),
      join(planted, 'package.json'),
      join(planted, 'bin', 'swarm-node.js'),
    ])
      chownSync(path, NOBODY, NOBODY);
    chmodSync(join(planted, '..'), 0o755);

    const root = tempDir('trust-root-');
    const result = await run(
      'sh',
      ['./install.sh', '--root', root, '--trust-key', key.publicFile, '--token-file', await token(), '--no-start'],
      {
        cwd: join(planted, 'scripts'),
        env: { SVC_BASE_URL: service.baseUrl },
      },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(result.stderr).toMatch(/verified swarm-node 0\.1\.0/);
    expectVerifiedReleaseInstalled(root);
  });

  it('--artifact: a racer who swaps the tarball and the manifest at their path once they are checked changes nothing', async () => {
    // The files at hand, in a directory the racer writes.
    const dir = tempDir('race-');
    for (const file of [release.artifact.path, release.manifest, release.signature]) copyFileSync(file, join(dir, basename(file)));
    const artifact = join(dir, basename(release.artifact.path));
    const manifestPath = join(dir, basename(release.manifest));

    // The racer's release: the same tree with bin/swarm-node.js replaced, its manifest rewritten to match (unsigned).
    const marker = join(tempDir('race-marker-'), 'pwned');
    const hostile = tempDir('race-hostile-');
    const stem = basename(artifact, '.tar.gz');
    expect((await run('tar', ['-xzf', artifact, '-C', hostile])).exitCode).toBe(0);
    const program = plantedProgram(marker);
    writeFileSync(join(hostile, stem, 'bin', 'swarm-node.js'), program);
    const hostileArtifact = join(tempDir('race-out-'), basename(artifact));
    expect((await run('tar', ['-czf', hostileArtifact, '-C', hostile, stem])).exitCode).toBe(0);
    const manifest = parseManifest(readFileSync(manifestPath, 'utf8'));
    const bytes = readFileSync(hostileArtifact);
    const hostileManifest = join(tempDir('race-out-'), basename(manifestPath));
    writeFileSync(
      hostileManifest,
      renderManifest({
        ...manifest,
        artifact: { ...manifest.artifact, sha256: sha256Hex(bytes), size: bytes.length },
        files: manifest.files.map((file) =>
          file.path === 'bin/swarm-node.js' ? { ...file, sha256: sha256Hex(program), size: Buffer.byteLength(program) } : file,
        ),
      }),
    );

    // The racer strikes at a moment of the script's own: right after it has hashed the tarball (its signature is
    // checked by then), it swaps both files at their path, once. No timing involved: the swap is in the script's flow.
    const shim = tempDir('race-shim-');
    const done = join(shim, 'swapped');
    writeFileSync(
      join(shim, 'sha256sum'),
      `#!/bin/sh\n/usr/bin/sha256sum "$@"; rc=$?\ncase "$1" in *.tar.gz) if [ ! -e "${done}" ]; then : >"${done}"; cp "${hostileArtifact}" "${artifact}"; cp "${hostileManifest}" "${manifestPath}"; fi ;; esac\nexit $rc\n`,
    );
    chmodSync(join(shim, 'sha256sum'), 0o755);

    const root = tempDir('trust-root-');
    const result = await run(
      'sh',
      [installSh, '--artifact', artifact, '--root', root, '--trust-key', key.publicFile, '--token-file', await token(), '--no-start'],
      {
        env: { PATH: `${shim}:${process.env.PATH}`, SVC_BASE_URL: service.baseUrl },
      },
    );
    expect(existsSync(done), 'the racer had its moment').toBe(true);
    expect(readFileSync(artifact).equals(bytes)).toBe(true);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expectVerifiedReleaseInstalled(root);
    // The key it trusts from now on is the copy it verified with.
    expect(readFileSync(join(homeOf(root), 'etc', 'release-keys', basename(key.publicFile)), 'utf8')).toBe(key.publicPem);
  });

  it('--artifact named for another version than its signed manifest says: refused, nothing installed', async () => {
    const dir = tempDir('renamed-');
    const renamed = (file: string) => join(dir, basename(file).replace('0.1.0', '9.9.9'));
    for (const file of [release.artifact.path, release.manifest, release.signature]) copyFileSync(file, renamed(file));
    const root = tempDir('trust-root-');
    const result = await run(
      'sh',
      [
        installSh,
        '--artifact',
        renamed(release.artifact.path),
        '--root',
        root,
        '--trust-key',
        key.publicFile,
        '--token-file',
        await token(),
      ],
      {
        env: { SVC_BASE_URL: service.baseUrl },
      },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /swarm-node-9\.9\.9-linux-\w+\.tar\.gz is not what its signed manifest describes \(swarm-node-0\.1\.0-linux-\w+\.tar\.gz\); nothing was installed/,
    );
    expect(filesUnder(root)).toEqual([]);
  });

  describe('a service that names one version and serves another', () => {
    let mitm: Interposer;
    beforeAll(async () => {
      mitm = await startVersionLiar(service.baseUrl, '9.9.9', '0.1.0');
    });
    afterAll(() => mitm.close());

    it('claims 9.9.9 and sends the signed 0.1.0: refused before the tarball is fetched, the token not spent', async () => {
      const root = tempDir('trust-root-');
      const tokenFile = await token();
      const result = await run('sh', [
        installSh,
        '--base-url',
        mitm.url,
        '--root',
        root,
        '--trust-key',
        key.publicFile,
        '--token-file',
        tokenFile,
      ]);
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toMatch(/the service named swarm-node 9\.9\.9, and the signed manifest is of 0\.1\.0.*nothing was installed/);
      expect(filesUnder(root)).toEqual([]);
      const honest = await run('sh', [
        installSh,
        '--base-url',
        service.baseUrl,
        '--root',
        root,
        '--trust-key',
        key.publicFile,
        '--token-file',
        tokenFile,
        '--no-start',
      ]);
      expect(honest.exitCode, honest.stderr).toBe(0);
    });
  });

  it('reads the newest release from the service whatever the layout of its JSON: pretty-printed, the version last', async () => {
    const relaid = await startRelayout(service.baseUrl);
    try {
      const root = tempDir('trust-root-');
      const result = await run('sh', [
        installSh,
        '--base-url',
        relaid.url,
        '--root',
        root,
        '--trust-key',
        key.publicFile,
        '--token-file',
        await token(),
        '--no-start',
      ]);
      expect(result.exitCode, result.stderr).toBe(0);
      expectVerifiedReleaseInstalled(root);
    } finally {
      await relaid.close();
    }
  });
});
