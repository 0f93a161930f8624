// docs/api.md "Releases": which release is `latest` among those in --releases-dir (the newest by semver, no
// pre-release, only complete ones, per platform), and the release manifest's format (src/lib/release-manifest.ts).
// The service does not verify signatures, so releases here are files with made-up contents.
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  parseManifest,
  releaseFileNames,
  renderManifest,
  sha256Hex,
  type ReleaseManifest,
} from '../../src/lib/release-manifest.js';
import { activatedSession } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';

const releasesDir = join(tempDir('releases-'), 'published');
const PUBLIC_URL = 'https://svc.example.com';
const service = useSvcApi(() => ({ releasesDir, env: { SVC_PUBLIC_URL: PUBLIC_URL } }));

function manifestOf(version: string, platform = 'linux-x64'): ReleaseManifest {
  const names = releaseFileNames(version, platform);
  return {
    version,
    platform,
    runtime: 'v20.20.2',
    artifact: { name: names.artifact, sha256: sha256Hex(version), size: 10 },
    files: [{ path: 'bin/swarm-node.js', sha256: sha256Hex('x'), size: 1, executable: true }],
  };
}

function fakeRelease(version: string, options: { platform?: string; without?: 'signature' } = {}): void {
  mkdirSync(releasesDir, { recursive: true });
  const manifest = manifestOf(version, options.platform);
  const names = releaseFileNames(version, manifest.platform);
  writeFileSync(join(releasesDir, names.manifest), renderManifest(manifest));
  writeFileSync(join(releasesDir, names.artifact), 'x'.repeat(10));
  writeFileSync(join(releasesDir, names.sha256), `${manifest.artifact.sha256}  ${names.artifact}\n`);
  if (options.without !== 'signature') writeFileSync(join(releasesDir, names.signature), Buffer.alloc(64));
}

describe('GET /v1/swarm/releases/latest', () => {
  it('is the newest complete release of the platform, by semver, never a pre-release', async () => {
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('releases'));
    const latest = async (platform = 'linux-x64') => {
      const response = await fetch(`${service.baseUrl}/v1/swarm/releases/latest?platform=${platform}`, {
        headers: { authorization: `Bearer ${deploy_token}` },
      });
      return { status: response.status, body: (await response.json()) as { version?: string; code?: string; artifact?: { url: string } } };
    };
    expect(await latest()).toMatchObject({ status: 404, body: { code: 'not_found' } });
    fakeRelease('0.9.0');
    fakeRelease('0.10.0');
    fakeRelease('0.11.0-rc.1');
    fakeRelease('1.0.0', { without: 'signature' });
    fakeRelease('2.0.0', { platform: 'linux-arm64' });
    writeFileSync(join(releasesDir, 'swarm-node-3.0.0-linux-x64.manifest'), 'not a manifest\n');
    expect((await latest()).body.version).toBe('0.10.0');
    // Nodes are told the public URL (SVC_PUBLIC_URL), not the address this process listens on.
    expect((await latest()).body.artifact?.url).toBe(`${PUBLIC_URL}/v1/swarm/releases/0.10.0/swarm-node-0.10.0-linux-x64.tar.gz`);
    expect((await latest('linux-arm64')).body.version).toBe('2.0.0');
    expect((await latest('linux-mips')).status).toBe(400);
    // A pre-release's files are served all the same: it is installed on purpose, with upgrade --from FILE.
    const names = releaseFileNames('0.11.0-rc.1', 'linux-x64');
    const file = await fetch(`${service.baseUrl}/v1/swarm/releases/0.11.0-rc.1/${names.sha256}`, {
      headers: { authorization: `Bearer ${deploy_token}` },
    });
    expect(file.status).toBe(200);
  });
});

describe('GET /install.sh', () => {
  const installShWithHost = (host: string) =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(`${service.baseUrl}/install.sh`);
      const call = request({ host: url.hostname, port: url.port, path: url.pathname, headers: { host } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve(text));
      });
      call.on('error', reject);
      call.end();
    });

  it("names the service's public URL (SVC_PUBLIC_URL), whatever Host or X-Forwarded-Host the request carries", async () => {
    // A Host reflected into a script piped into a root shell let anyone who could put a link (or a cache) in front
    // of the service make installs download from their own host.
    for (const host of ['evil.example', 'svc.example:8443', "x'$(touch /tmp/pwned)'"]) {
      const script = await installShWithHost(host);
      expect(script).toMatch(/^DEFAULT_BASE_URL='https:\/\/svc\.example\.com'$/m);
      expect(script).not.toContain('pwned');
    }
    const forwarded = await fetch(`${service.baseUrl}/install.sh`, {
      headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' },
    });
    expect(await forwarded.text()).toMatch(/^DEFAULT_BASE_URL='https:\/\/svc\.example\.com'$/m);
  });
});

describe('release manifest', () => {
  it('renders and parses back; refuses what would be unsafe to install from', () => {
    const manifest = manifestOf('1.2.3');
    expect(parseManifest(renderManifest(manifest))).toEqual(manifest);
    const text = renderManifest(manifest);
    for (const [bad, why] of [
      [text.replace('svc-swarm-node-release 1', 'something else'), /not a swarm-node release manifest/],
      [`${text}file ${sha256Hex('y')} 1 0644 ../etc/passwd\n`, /bad or repeated path/],
      [`${text}file ${sha256Hex('y')} 1 0644 bin/swarm-node.js\n`, /bad or repeated path/],
      [`${text}file ${sha256Hex('y')} 1 0777 other\n`, /mode of 0755 or 0644/],
      [text.replace('version 1.2.3', 'version ../../x'), /version is not usable/],
      [text.replace(/artifact \S+ 10 /, 'artifact abc 10 '), /artifact line/],
    ] as const) {
      expect(() => parseManifest(bad), why.source).toThrow(why);
    }
  });

  it('orders versions as semver does for the core and pre-releases', () => {
    const sorted = ['0.10.0', '0.9.0', '1.0.0', '1.0.0-rc.2', '1.0.0-rc.10', '0.9.1'].sort(compareVersions);
    expect(sorted).toEqual(['0.9.0', '0.9.1', '0.10.0', '1.0.0-rc.2', '1.0.0-rc.10', '1.0.0']);
  });
});
