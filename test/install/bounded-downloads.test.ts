// What a node downloads is streamed to disk with a cap decided before the first byte, hashed as it streams, and
// refused past the cap (docs/operations.md "Bounded downloads"): a service (or a man in the middle of an http://
// base URL) that sends a manifest without end, a tarball longer than its signed size, or an agent bundle past the
// upload cap is cut off there. Before, each was buffered whole (a 1.5 GB manifest took upgrade to 6.2 GB RSS). The
// interposer counts what the node took before it hung up; nothing is installed, nothing is charged.
import { copyFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BUNDLE_BYTES } from '../../src/contract/agent-bundle.js';
import { MAX_MANIFEST_BYTES } from '../../src/lib/release-manifest.js';
import { swarmNode as cli } from '../helpers/cli.js';
import { scaffoldDir } from '../helpers/agent-archives.js';
import { activatedSession } from '../helpers/funnel.js';
import { claimLatest, sendEndlessBody, startInterposer, type Interposer } from '../helpers/interposer.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { signedInNode, walletBalance } from '../cli/fixtures.js';
import { buildRelease, installWithScript, publish, signingKey, type BuiltRelease } from './release-support.js';
import { filesUnder, homeOf, run, writeTokenFile } from './support.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
/** What a hostile sender offers: far past every cap, small enough that buffering it whole (the old way) ends. */
const ENDLESS = 200 * 1024 * 1024;
/** Socket buffers on loopback hold a few MiB between the sender and the reader that stopped. */
const IN_FLIGHT_SLACK = 16 * 1024 * 1024;

describe('release downloads', { timeout: 120_000 }, () => {
  let v010: BuiltRelease;
  let root: string;
  let mitm: Interposer;
  /** What the interposer sends for a file of 9.9.9: set by each test. */
  let hostileFile: RegExp;
  let taken: Promise<{ sent: number; hungUp: boolean }> | undefined;
  const swarmNode = (args: string[]) => run(join(homeOf(root), 'current', 'bin', 'swarm-node'), args, { timeoutMs: 120_000 });

  beforeAll(async () => {
    const key = signingKey('bounded');
    v010 = await buildRelease(key, { version: '0.1.0' });
    publish(v010, releasesDir);
    root = tempDir('bounded-root-');
    await installWithScript(service.baseUrl, v010, key, root, ['--no-autoupdate']);
    // Claims 9.9.9 is the newest, and sends the file of it a test names without end; the rest goes to the service.
    mitm = await startInterposer(service.baseUrl, async (req, res) => {
      if (await claimLatest(service.baseUrl, req, res, '9.9.9')) return true;
      const url = new URL(req.url ?? '/', 'http://x');
      if (!url.pathname.startsWith('/v1/swarm/releases/9.9.9/') || !hostileFile.test(url.pathname)) return false;
      taken = sendEndlessBody(res, ENDLESS);
      return true;
    });
  }, 180_000);
  afterAll(() => mitm.close());

  it('a manifest without end: cut off past 1 MiB, refused, nothing installed', async () => {
    hostileFile = /\.manifest$/;
    const result = await swarmNode(['upgrade', '--base-url', mitm.url]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      `swarm-node-9.9.9-linux-${process.arch}.manifest is larger than a manifest may be (${MAX_MANIFEST_BYTES} bytes); the rest was not read; nothing was installed`,
    );
    const { sent, hungUp } = await taken!;
    expect(hungUp).toBe(true);
    expect(sent).toBeLessThan(MAX_MANIFEST_BYTES + IN_FLIGHT_SLACK);
    expect(readlinkSync(join(homeOf(root), 'current'))).toBe('releases/0.1.0');
  });

  it('install.sh: a manifest without end is cut off past 1 MiB too, and nothing is installed', async () => {
    hostileFile = /\.manifest$/;
    const fresh = tempDir('bounded-fresh-');
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('bounded-sh'));
    // A copy of the script, as piped from the service: nothing beside it.
    const installSh = join(tempDir('bounded-sh-'), 'install.sh');
    copyFileSync(new URL('../../scripts/install.sh', import.meta.url).pathname, installSh);
    const result = await run('sh', [installSh, '--base-url', mitm.url, '--root', fresh, '--token-file', writeTokenFile(deploy_token)]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      `swarm-node-9.9.9-linux-${process.arch}.manifest is larger than a manifest may be (${MAX_MANIFEST_BYTES} bytes); nothing was installed`,
    );
    const { sent, hungUp } = await taken!;
    expect(hungUp).toBe(true);
    expect(sent).toBeLessThan(MAX_MANIFEST_BYTES + IN_FLIGHT_SLACK);
    expect(filesUnder(fresh)).toEqual([]);
  });

  it('a tarball longer than its signed size: cut off there, refused', async () => {
    // A release signed as 9.9.9 by a trusted key, whose tarball the interposer replaces with one that does not end.
    const key = signingKey('bounded-9');
    const v999 = await buildRelease(key, { version: '9.9.9' });
    publish(v999, releasesDir);
    hostileFile = /\.tar\.gz$/;
    const result = await swarmNode(['upgrade', '--base-url', mitm.url, '--trust-key', key.publicFile]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `swarm-node-9\\.9\\.9-linux-${process.arch}\\.tar\\.gz is larger than its signed size \\(${v999.artifact.bytes} bytes\\).*nothing was installed`,
      ),
    );
    const { sent, hungUp } = await taken!;
    expect(hungUp).toBe(true);
    expect(sent).toBeLessThan(v999.artifact.bytes + IN_FLIGHT_SLACK);
    expect(readlinkSync(join(homeOf(root), 'current'))).toBe('releases/0.1.0');
  });
});

describe('agent bundle downloads', { timeout: 120_000 }, () => {
  it('a bundle past the upload cap: cut off at 5 MiB, the run refused and not charged, nothing left in var/agents', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'bounded-bundle' });
    const upload = await cli(['--json', 'agent', 'upload', scaffoldDir('agent_ops_monitor_004', '1.0.0')], { env: node.env });
    expect(upload.exitCode, upload.stderr).toBe(0);
    let taken: Promise<{ sent: number; hungUp: boolean }> | undefined;
    const mitm = await startInterposer(service.baseUrl, async (req, res) => {
      if (!(req.url ?? '').startsWith('/v1/swarm/bundles/')) return false;
      taken = sendEndlessBody(res, ENDLESS, 'application/gzip');
      return true;
    });
    try {
      const before = await walletBalance(service.baseUrl, node.token);
      const result = await cli(['run', 'agent_ops_monitor_004'], { env: { ...node.env, SVC_BASE_URL: mitm.url } });
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `cannot fetch bundle [0-9a-f]{64} of agent_ops_monitor_004: .* with more than ${MAX_BUNDLE_BYTES} bytes; the rest was not read`,
        ),
      );
      const { sent, hungUp } = await taken!;
      expect(hungUp).toBe(true);
      expect(sent).toBeLessThan(MAX_BUNDLE_BYTES + IN_FLIGHT_SLACK);
      expect(await walletBalance(service.baseUrl, node.token)).toBe(before);
      expect(readdirSync(join(node.home, 'var', 'agents', 'agent_ops_monitor_004'))).toEqual([]);
    } finally {
      await mitm.close();
    }
  });
});
