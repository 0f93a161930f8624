// Packs a staged release tree into the published files (docs/operations.md "Releases"): the tarball, its SHA-256
// file (sha256sum's format), the manifest and the manifest's Ed25519 signature. The tarball is reproducible from
// the same tree: sorted names, root owner, one fixed mtime, gzip without a name or time.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import {
  releaseFileNames,
  releaseStem,
  renderManifest,
  sha256Hex,
  type ManifestFile,
  type ReleaseManifest,
} from '../lib/release-manifest.js';
import { signManifest } from '../lib/release-signature.js';

export interface PublishedRelease {
  manifest: ReleaseManifest;
  /** Absolute paths of the four files. */
  paths: { artifact: string; sha256: string; manifest: string; signature: string };
}

export interface PackOptions {
  /** The directory holding the staged tree as <stem>/ (release-tree.ts). */
  stageDir: string;
  outDir: string;
  version: string;
  platform: string;
  runtime: string | null;
  files: ManifestFile[];
  signingKey: KeyObject;
  /** The tarball's one mtime (SOURCE_DATE_EPOCH), seconds. */
  mtime: number;
}

export function packRelease(options: PackOptions): PublishedRelease {
  const names = releaseFileNames(options.version, options.platform);
  const stem = releaseStem(options.version, options.platform);
  const paths = {
    artifact: join(options.outDir, names.artifact),
    sha256: join(options.outDir, names.sha256),
    manifest: join(options.outDir, names.manifest),
    signature: join(options.outDir, names.signature),
  };
  const tar = execFileSync(
    'tar',
    [
      '--sort=name',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      `--mtime=@${options.mtime}`,
      '--format=gnu',
      '-C',
      options.stageDir,
      '-cf',
      '-',
      stem,
    ],
    { maxBuffer: 1 << 30 },
  );
  const gzipped = execFileSync('gzip', ['-6', '-n', '-c'], { input: tar, maxBuffer: 1 << 30 });
  writeFileSync(paths.artifact, gzipped, { mode: 0o644 });
  const digest = sha256Hex(gzipped);
  writeFileSync(paths.sha256, `${digest}  ${names.artifact}\n`, { mode: 0o644 });
  const manifest: ReleaseManifest = {
    version: options.version,
    platform: options.platform,
    runtime: options.runtime,
    artifact: { name: names.artifact, sha256: digest, size: gzipped.length },
    files: options.files,
  };
  const text = Buffer.from(renderManifest(manifest));
  writeFileSync(paths.manifest, text, { mode: 0o644 });
  writeFileSync(paths.signature, signManifest(text, options.signingKey), { mode: 0o644 });
  return { manifest, paths };
}
