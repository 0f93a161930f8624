// install.sh on a host without curl or openssl (docs/decisions/0036-install-without-curl-or-openssl.md,
// docs/operations.md "With `scripts/install.sh`"): a fresh minimal Debian with Node, as the demo's host is, downloads
// with the host's Node.js and checks the signature with it, holding the same caps and refusing the same bad
// signatures; a host with neither curl nor Node, or neither openssl nor Node, is told what to install, and nothing is
// installed. Before, each stopped at the first `command -v`.
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MANIFEST_BYTES } from '../../src/lib/release-manifest.js';
import { activatedSession } from '../helpers/funnel.js';
import { claimLatest, sendEndlessBody, startInterposer, type Interposer } from '../helpers/interposer.js';
import { pathWithout } from '../helpers/path-without.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { buildRelease, publish, signingKey, type BuiltRelease, type SigningKey } from './release-support.js';
import { filesUnder, homeOf, run, writeTokenFile } from './support.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
let key: SigningKey;
let release: BuiltRelease;

beforeAll(async () => {
  key = signingKey('no-curl');
  release = await buildRelease(key, { version: '0.1.0' });
  publish(release, releasesDir);
}, 180_000);

const token = async () => writeTokenFile((await activatedSession(service.baseUrl, uniqueEmail('no-curl'))).deploy_token);

/** The script as piped from the service: a copy, nothing beside it. */
function pipedScript(): string {
  const script = join(tempDir('no-curl-sh-'), 'install.sh');
  copyFileSync(new URL('../../scripts/install.sh', import.meta.url).pathname, script);
  return script;
}

const installSh = (args: string[], path: string, env: Record<string, string> = {}) =>
  run('sh', [pipedScript(), ...args], { env: { PATH: path, ...env }, timeoutMs: 120_000 });

describe('install.sh without curl and openssl', { timeout: 120_000 }, () => {
  it('downloads with the host Node.js, checks the signature with it, and installs the verified release', async () => {
    const root = tempDir('no-curl-root-');
    const result = await installSh(
      ['--base-url', service.baseUrl, '--root', root, '--trust-key', key.publicFile, '--token-file', await token(), '--no-start'],
      pathWithout(['curl', 'openssl']),
    );
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/^openssl is not on PATH: checking the signature with Node\.js v\d+\.\d+\.\d+ \(\/\S+\/node\)$/m);
    expect(result.stderr).toMatch(/^curl is not on PATH: downloading with Node\.js v\d+\.\d+\.\d+ \(\/\S+\/node\)$/m);
    expect(result.stderr).toMatch(/verified swarm-node 0\.1\.0 \(swarm-node-0\.1\.0-linux-\w+\.tar\.gz, signed by trusted\)/);
    expect(result.stdout).toMatch(/installed swarm-node 0\.1\.0 under /);
    expect(filesUnder(homeOf(root))).toContain(join('releases', '0.1.0', 'bin', 'swarm-node.js'));
  });

  it('refuses with Node.js what openssl refuses: a release no trusted key signed, the token not spent', async () => {
    const root = tempDir('no-curl-root-');
    const tokenFile = await token();
    const untrusted = await installSh(
      ['--base-url', service.baseUrl, '--root', root, '--token-file', tokenFile, '--no-start'],
      pathWithout(['curl', 'openssl']),
    );
    expect(untrusted.exitCode).toBe(1);
    expect(untrusted.stderr).toContain("the release's signature does not verify with any key this script trusts");
    expect(filesUnder(root)).toEqual([]);
    // Another key than the one that signed: refused too.
    const other = signingKey('no-curl-other');
    const wrong = await installSh(
      ['--base-url', service.baseUrl, '--root', root, '--trust-key', other.publicFile, '--token-file', tokenFile, '--no-start'],
      pathWithout(['curl', 'openssl']),
    );
    expect(wrong.exitCode).toBe(1);
    expect(wrong.stderr).toContain("the release's signature does not verify with any key this script trusts");
    expect(filesUnder(root)).toEqual([]);
  });

  it('--artifact without openssl: the signature checked with Node.js, installed', async () => {
    const root = tempDir('no-curl-root-');
    const result = await installSh(
      ['--artifact', release.artifact.path, '--root', root, '--trust-key', key.publicFile, '--token-file', await token(), '--no-start'],
      pathWithout(['openssl']),
      { SVC_BASE_URL: service.baseUrl },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/^openssl is not on PATH: checking the signature with Node\.js /m);
    expect(result.stderr).not.toContain('downloading with');
    expect(result.stderr).toMatch(/verified swarm-node 0\.1\.0 .*signed by trusted/);
  });

  it('neither curl nor Node.js: says to install curl, installs nothing', async () => {
    const root = tempDir('no-curl-root-');
    const result = await installSh(
      ['--base-url', service.baseUrl, '--root', root, '--trust-key', key.publicFile, '--token-file', await token()],
      pathWithout(['curl', 'node']),
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      'install.sh: curl is needed to download the release and is not on PATH (apt-get install curl, dnf install curl; Node.js 20 or newer on PATH also does), or install a release at hand with --artifact FILE',
    );
    expect(filesUnder(root)).toEqual([]);
  });

  it('neither openssl nor Node.js: says to install openssl, installs nothing', async () => {
    const root = tempDir('no-curl-root-');
    const result = await installSh(
      ['--base-url', service.baseUrl, '--root', root, '--trust-key', key.publicFile, '--token-file', await token()],
      pathWithout(['openssl', 'node']),
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      "install.sh: openssl is needed to check the release's signature and is not on PATH (apt-get install openssl, dnf install openssl; Node.js on PATH also does)",
    );
    expect(filesUnder(root)).toEqual([]);
  });

  it('a proxy set and no curl: says to install curl (Node.js fetch would not use the proxy)', async () => {
    const root = tempDir('no-curl-root-');
    const result = await installSh(
      ['--base-url', service.baseUrl, '--root', root, '--trust-key', key.publicFile, '--token-file', await token()],
      pathWithout(['curl']),
      { https_proxy: 'http://proxy.internal:3128' },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      'install.sh: curl is needed to download the release through the proxy in https_proxy and is not on PATH (apt-get install curl, dnf install curl)',
    );
    expect(filesUnder(root)).toEqual([]);
  });

  describe('the caps hold with Node.js', () => {
    let mitm: Interposer;
    let taken: Promise<{ sent: number; hungUp: boolean }> | undefined;
    beforeAll(async () => {
      // Claims 9.9.9 is the newest and sends its manifest without end (test/install/bounded-downloads.test.ts, with curl).
      mitm = await startInterposer(service.baseUrl, async (req, res) => {
        if (await claimLatest(service.baseUrl, req, res, '9.9.9')) return true;
        if (!(req.url ?? '').endsWith('.manifest')) return false;
        taken = sendEndlessBody(res, 200 * 1024 * 1024);
        return true;
      });
    });
    afterAll(() => mitm.close());

    it('a manifest without end is cut off past 1 MiB, and nothing is installed', async () => {
      const root = tempDir('no-curl-root-');
      const result = await installSh(
        ['--base-url', mitm.url, '--root', root, '--token-file', await token()],
        pathWithout(['curl', 'openssl']),
      );
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toContain(
        `swarm-node-9.9.9-linux-${process.arch}.manifest is larger than a manifest may be (${MAX_MANIFEST_BYTES} bytes); nothing was installed`,
      );
      const { sent, hungUp } = await taken!;
      expect(hungUp).toBe(true);
      // What loopback's socket buffers hold between the sender and the reader that stopped, at most.
      expect(sent).toBeLessThan(MAX_MANIFEST_BYTES + 16 * 1024 * 1024);
      expect(filesUnder(root)).toEqual([]);
    });
  });

  describe('a download cut off mid-body', () => {
    let mitm: Interposer;
    beforeAll(async () => {
      // The manifest's answer announces its whole length, sends part of it and resets the connection.
      mitm = await startInterposer(service.baseUrl, async (req, res) => {
        if (!(req.url ?? '').endsWith('.manifest')) return false;
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100000' });
        res.write(Buffer.alloc(5000, 0x61), () => res.socket?.destroy());
        return true;
      });
    });
    afterAll(() => mitm.close());

    it("is no answer, never a 200 of part of the file, and nothing is installed; a token given with a newline in SVC_DEPLOY_TOKEN is cleaned as a file's is", async () => {
      const root = tempDir('no-curl-root-');
      const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('no-curl-cut'));
      const result = await installSh(
        ['--base-url', mitm.url, '--root', root, '--trust-key', key.publicFile],
        pathWithout(['curl', 'openssl']),
        { SVC_DEPLOY_TOKEN: `${deploy_token}\n` },
      );
      expect(result.exitCode).not.toBe(0);
      expect(result.stderr).toMatch(/the download was cut off/);
      expect(result.stderr).not.toContain(deploy_token);
      expect(filesUnder(root)).toEqual([]);
    });
  });
});
