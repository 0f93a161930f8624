// The releases svc-api publishes (docs/operations.md "Publish"): the files `npm run release` wrote into the
// directory given with svc-api --releases-dir. Read on every request, so a release copied in is served without a
// restart; a release counts only when its four files are there and its manifest reads. The service does not check
// signatures: the node does, against the keys it trusts, whoever served the files.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { compareVersions, parseManifest, releaseFileNames, type ReleaseManifest } from '../../lib/release-manifest.js';

export interface PublishedRelease {
  manifest: ReleaseManifest;
  names: ReturnType<typeof releaseFileNames>;
}

export interface ReleaseDirectory {
  /** The newest release for the platform, pre-releases (1.2.0-rc.1) left out, or undefined. */
  latest(platform: string): PublishedRelease | undefined;
  /** The path of one of a release's four files, or undefined when `name` is not one of them. */
  file(version: string, name: string): string | undefined;
}

export function openReleaseDirectory(dir: string): ReleaseDirectory {
  const published = (): PublishedRelease[] => {
    if (!existsSync(dir)) return [];
    const found: PublishedRelease[] = [];
    for (const entry of readdirSync(dir)) {
      if (!entry.endsWith('.manifest')) continue;
      let manifest: ReleaseManifest;
      try {
        manifest = parseManifest(readFileSync(join(dir, entry), 'utf8'));
      } catch {
        continue;
      }
      const names = releaseFileNames(manifest.version, manifest.platform);
      if (names.manifest !== entry) continue;
      if (Object.values(names).every((name) => isFile(join(dir, name)))) found.push({ manifest, names });
    }
    return found;
  };
  return {
    latest(platform) {
      return (
        published()
          // A fleet upgrades to releases only; a pre-release is installed on purpose, with upgrade --from FILE.
          .filter((release) => release.manifest.platform === platform && !isPreRelease(release.manifest.version))
          .sort((a, b) => compareVersions(b.manifest.version, a.manifest.version))[0]
      );
    },
    file(version, name) {
      const release = published().find(
        (candidate) => candidate.manifest.version === version && (Object.values(candidate.names) as string[]).includes(name),
      );
      return release === undefined ? undefined : join(dir, name);
    },
  };
}

function isPreRelease(version: string): boolean {
  return version.split('+')[0]!.includes('-');
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
