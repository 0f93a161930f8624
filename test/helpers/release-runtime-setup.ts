// vitest global setup of the release project: the Node.js a release ships and better-sqlite3 built for it, fetched
// and built once for the run, before the release test files start their builds side by side (two workers, eight
// releases), into the cache every `npm run release` of this checkout reads (a warm cache costs a digest check).
// The bound is generous: a cold cache fetches ~50 MB from the registry and compiles SQLite.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostPlatform } from '../../src/lib/release-manifest.js';
import { defaultCacheDir, prepareReleaseRuntime } from '../../src/release/release-runtime.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export default function setup(): void {
  const work = mkdtempSync(join(tmpdir(), 'release-runtime-setup-'));
  try {
    prepareReleaseRuntime({
      packageDir: REPO_ROOT,
      platform: hostPlatform(),
      cacheDir: defaultCacheDir(REPO_ROOT),
      workDir: work,
      log: (line) => process.stderr.write(`release runtime: ${line}\n`),
    });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
