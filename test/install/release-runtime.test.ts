// The Node.js a release ships comes from the npm registry checked against its dist.integrity (docs/operations.md
// "The runtime"): a cached tarball that no longer matches the integrity recorded with it is fetched again, through
// npm, not shipped. The global setup of this project has the cache warm; npm's own cache serves the fetch again.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostPlatform } from '../../src/lib/release-manifest.js';
import { defaultCacheDir } from '../../src/release/release-runtime.js';
import { matchesIntegrity, obtainRuntimePackage, releaseRuntimeVersion } from '../../src/release/runtime-package.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';

const version = releaseRuntimeVersion(REPO_ROOT);
const name = `node-${hostPlatform()}-${version}.tgz`;

describe('the runtime package', { timeout: 300_000 }, () => {
  it('a cached tarball altered after it was checked is fetched again, and what is kept matches the registry', () => {
    const cached = join(defaultCacheDir(REPO_ROOT), name);
    const integrity = readFileSync(`${cached}.integrity`, 'utf8').trim();
    const cacheDir = join(tempDir('runtime-cache-'), 'cache');
    mkdirSync(cacheDir);
    copyFileSync(cached, join(cacheDir, name));
    writeFileSync(join(cacheDir, `${name}.integrity`), `${integrity}\n`);
    const bytes = readFileSync(join(cacheDir, name));
    bytes.writeUInt8(bytes.readUInt8(bytes.length >> 1) ^ 0xff, bytes.length >> 1);
    writeFileSync(join(cacheDir, name), bytes);

    const said: string[] = [];
    const runtime = obtainRuntimePackage({ platform: hostPlatform(), version, cacheDir, cwd: REPO_ROOT, log: (line) => said.push(line) });
    expect(said.join('\n')).toMatch(/does not match the integrity recorded with it: fetching node-linux-\w+@[\d.]+ again/);
    expect(runtime).toEqual({ spec: `node-${hostPlatform()}@${version}`, version, integrity, tarball: join(cacheDir, name) });
    expect(matchesIntegrity(readFileSync(runtime.tarball), integrity)).toBe(true);
  });

  it('an integrity is met only by its sha512 digest: not another digest, not a weaker algorithm alone', () => {
    const data = Buffer.from('runtime');
    const sha512 = `sha512-${createHash('sha512').update(data).digest('base64')}`;
    const sha1 = `sha1-${createHash('sha1').update(data).digest('base64')}`;
    expect(matchesIntegrity(data, sha512)).toBe(true);
    expect(matchesIntegrity(data, `${sha1} ${sha512}`)).toBe(true);
    expect(matchesIntegrity(Buffer.from('runtimf'), sha512)).toBe(false);
    expect(matchesIntegrity(data, sha1)).toBe(false);
  });
});
