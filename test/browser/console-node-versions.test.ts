// The nodes page sets each node's version against the newest release the service publishes (svc-api --releases-dir,
// docs/api.md "Releases", "Console"), in headless Chromium against the real svc-api: a node behind is told the
// update and the command, a node on the newest says so. Screenshot kept in test-output/, axe-core's rules passed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { releaseFileNames, renderManifest, sha256Hex } from '../../src/lib/release-manifest.js';
import { accessibilityProblems, browserUnavailable, useChromium, screenshot } from '../helpers/chromium.js';
import { signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';

const releasesDir = join(tempDir('node-versions-'), 'published');

/** A release as `npm run release` lays it out: the four files, the manifest readable (nothing checks the signature). */
function publish(version: string, platform = 'linux-x64'): void {
  mkdirSync(releasesDir, { recursive: true });
  const names = releaseFileNames(version, platform);
  const manifest = {
    version,
    platform,
    runtime: 'v20.20.2',
    artifact: { name: names.artifact, sha256: sha256Hex(version), size: 10 },
    files: [{ path: 'bin/swarm-node.js', sha256: sha256Hex('x'), size: 1, executable: true }],
  };
  writeFileSync(join(releasesDir, names.manifest), renderManifest(manifest));
  writeFileSync(join(releasesDir, names.artifact), 'x'.repeat(10));
  writeFileSync(join(releasesDir, names.sha256), `${manifest.artifact.sha256}  ${names.artifact}\n`);
  writeFileSync(join(releasesDir, names.signature), Buffer.alloc(64));
}

describe.skipIf(browserUnavailable !== undefined)('console: node versions against the newest release', () => {
  const service = useSvcApi(() => ({ releasesDir }));
  const chromium = useChromium();

  it('tells a node behind the newest release the update, and a node on it that it is the newest', { timeout: 60_000 }, async () => {
    publish('0.1.0');
    publish('0.3.0-rc.1');
    publish('0.2.0', 'linux-arm64');
    const email = uniqueEmail('versions');
    const token = await signIn(service.baseUrl, email);
    const nodes: Record<string, string> = {};
    for (const version of ['0.1.0', '0.2.0']) {
      const node = await enrollNode(service.baseUrl, email);
      const poll = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/poll`, {
        token: node.credential,
        body: { hostname: `host-${version}`, version, capacity: 0, running: [], wait_seconds: 0 },
      });
      expect(poll.status, poll.text).toBe(200);
      nodes[version] = node.node_id;
    }
    await chromium().page.goto(walletLoginUrl(service.walletUrl, token));
    await chromium().page.goto(`${service.walletUrl}/nodes`);
    await screenshot(chromium().page, 'console-nodes-versions');
    expect(await accessibilityProblems(chromium().page)).toEqual([]);
    const version = async (nodeId: string) =>
      (await chromium().page.getByRole('row').filter({ hasText: nodeId }).locator('td[data-label="Version"]').textContent())?.trim();
    // The pre-release is left out, as for GET /v1/swarm/releases/latest; the newest of any platform counts.
    expect(await version(nodes['0.1.0']!)).toBe('0.1.0update: 0.2.0 (swarm-node upgrade)');
    expect(await version(nodes['0.2.0']!)).toBe('0.2.0newest');
  });
});
