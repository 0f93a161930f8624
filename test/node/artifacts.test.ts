// A run's artifacts on a real node against the real svc-api, as root, in each way a node runs agents (docs/operations.md
// "Agent isolation"): bubblewrap (a tmpfs of the run's own on the host), none (a plain directory) and systemd (the
// unit's tmpfs, read by agent-exec and sent over the connection; systemd's stand-in as in agent-isolation.test.ts).
// What an agent writes into SWARM_ARTIFACTS_DIR is uploaded after it ended and downloads byte for byte; what a hostile
// agent plants there (links to /etc/shadow and to the node's credential, a FIFO, a directory, names that are no plain
// file names, a file filling the directory) is not uploaded, and the node goes on.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCredentials } from '../../src/node/identity/credentials.js';
import { runAgent, type RunDeps } from '../../src/node/runs/run-agent.js';
import type { ServiceClient } from '../../src/node/service/service-client.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { fundWallet, signInPaid } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { agentSocketStandIn, openDir, removeOpenDirs, sandboxAvailable, testNodeCaller } from './sandbox-support.js';

const AGENT = 'agent_ops_monitor_004'; // 4 cents
const MiB = 1024 * 1024;
/** The artifacts tmpfs of these runs: small, so filling it is quick. */
const ARTIFACTS_BYTES = 4 * MiB;

const service = useSvcApi();
afterAll(() => removeOpenDirs());

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/**
 * Writes what the test's plan asks into SWARM_ARTIFACTS_DIR, then answers what it saw. The plan is a file beside it in
 * its bundle: the service checks a run's input against the catalog agent's schema, which knows nothing of these.
 */
const WRITER = agentProgram(`const fs = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  const dir = process.env.SWARM_ARTIFACTS_DIR;
  const asked = JSON.parse(fs.readFileSync(process.env.SWARM_AGENT_DIR + '/plan.json', 'utf8'));
  const seen = { dir, entries_at_start: fs.readdirSync(dir).length };
  for (const [name, text] of Object.entries(asked.files ?? {})) fs.writeFileSync(dir + '/' + name, text);
  for (const [name, target] of Object.entries(asked.links ?? {})) fs.symlinkSync(target, dir + '/' + name);
  for (const name of asked.fifos ?? []) execFileSync('mkfifo', [dir + '/' + name]);
  for (const name of asked.dirs ?? []) { fs.mkdirSync(dir + '/' + name); fs.writeFileSync(dir + '/' + name + '/inner.txt', 'inner'); }
  if (asked.hard_link) { fs.writeFileSync(dir + '/.original', 'linked'); fs.linkSync(dir + '/.original', dir + '/' + asked.hard_link); }
  if (asked.fill) {
    const chunk = Buffer.alloc(1024 * 1024, 7);
    try { for (let i = 0; i < asked.fill; i += 1) fs.appendFileSync(dir + '/fill.bin', chunk); } catch (error) { seen.fill_error = error.code; }
  }
  if (asked.escape) { try { fs.writeFileSync(dir + '/../escaped.txt', 'out'); seen.escape = 'written'; } catch (error) { seen.escape = error.code; } }
  process.stdout.write(JSON.stringify(seen));`);

describe.skipIf(!sandboxAvailable).each(['bubblewrap', 'none', 'systemd'] as const)(
  'the artifacts of a run with isolation %s, as root',
  (isolation) => {
    let home: string;
    let deps: RunDeps;
    let token: string;
    let client: ServiceClient;
    let server: Server | undefined;

    beforeAll(async () => {
      const email = uniqueEmail(`artifacts-${isolation}`);
      const enrolled = await enrollNode(service.baseUrl, email);
      await fundWallet(service.baseUrl, email, 500);
      token = await signInPaid(service.baseUrl, email);
      // A home every user may pass, as a host's /opt is: only the sandbox and the modes stand between agent and node.
      home = openDir(`artifacts-${isolation}-`);
      mkdirSync(join(home, 'etc'), { mode: 0o755 });
      // The node's credential where a link of the agent's points: the node reads it, and must not upload it.
      writeCredentials(join(home, 'etc', 'credentials.json'), {
        node: {
          node_id: enrolled.node_id,
          user_id: email,
          tier_id: 'svc_starter_agents',
          enrolled_at: new Date().toISOString(),
          credential: enrolled.credential,
        },
      } as never);
      const agentSocket = join(home, 'agent.sock');
      if (isolation === 'systemd') server = await agentSocketStandIn(agentSocket, { artifactsBytes: ARTIFACTS_BYTES });
      ({ client, deps } = testNodeCaller(service.baseUrl, home, enrolled, {
        isolation,
        agentSocket,
        limits: { timeoutMs: 60_000, artifactsBytes: ARTIFACTS_BYTES },
      }));
      installTestBundle(home, AGENT, WRITER);
    });
    afterAll(async () => {
      await client?.close();
      await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    });

    const artifactsOf = async (runId: string) => {
      const listed = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}/artifacts`, { token });
      expect(listed.status, listed.text).toBe(200);
      return listed.body.artifacts as Array<{ name: string; size_bytes: number; sha256: string }>;
    };
    const ran = async (plan: unknown) => {
      writeFileSync(join(home, 'agents', AGENT, 'plan.json'), JSON.stringify(plan));
      const outcome = await runAgent(deps, AGENT, {});
      if (outcome.kind !== 'settled') throw new Error(`the run did not settle: ${JSON.stringify(outcome)}`);
      return outcome.result;
    };

    it('an agent writes two files into an empty directory; both are uploaded, listed, and download with their sha256', async () => {
      const drafts = 'name,email,subject\nAda,ada@example.com,Hello Ada\n';
      const sarif = JSON.stringify({ version: '2.1.0', runs: [{ results: [{ ruleId: 'x', locations: [] }] }] });
      const result = await ran({ files: { 'drafts.csv': drafts, 'review.sarif': sarif } });
      expect(result, JSON.stringify(result)).toMatchObject({ status: 'succeeded', charged_cents: 4, output: { entries_at_start: 0 } });
      const artifacts = await artifactsOf(result.run_id);
      expect(artifacts.map(({ name, size_bytes, sha256: digest }) => ({ name, size_bytes, sha256: digest }))).toEqual([
        { name: 'drafts.csv', size_bytes: drafts.length, sha256: sha256(drafts) },
        { name: 'review.sarif', size_bytes: sarif.length, sha256: sha256(sarif) },
      ]);
      const got = await fetch(`${service.baseUrl}/v1/swarm/runs/${result.run_id}/artifacts/review.sarif`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(sha256(Buffer.from(await got.arrayBuffer()))).toBe(sha256(sarif));
      // The run's directory is gone from the host once they are up.
      expect(existsSync(join(home, 'var', 'artifacts')) ? readdirSync(join(home, 'var', 'artifacts')) : []).toEqual([]);
    });

    it("uploads none of what a hostile agent plants: links to /etc/shadow and the node's credential, a FIFO, a directory, a hard link, names that are no file names", async () => {
      const result = await ran({
        files: { 'kept.txt': 'the one real artifact', '.hidden': 'x', 'two words.txt': 'x', '..dots': 'x', 'quote".txt': 'x' },
        links: { 'shadow.txt': '/etc/shadow', 'credentials.json': join(home, 'etc', 'credentials.json'), 'loop.txt': 'loop.txt' },
        fifos: ['fifo.txt'],
        dirs: ['sub'],
        hard_link: 'hard.txt',
        escape: true,
      });
      expect(result.status, JSON.stringify(result)).toBe('succeeded');
      expect((await artifactsOf(result.run_id)).map((artifact) => artifact.name)).toEqual(['kept.txt']);
      // Out of its directory it reached nothing that stays: the sandbox's read-only view, or (none) a file the node
      // removes with the run's leftovers.
      if (isolation !== 'none') expect((result.output as { escape: string }).escape).not.toBe('written');
      // The node goes on, and the next run starts from an empty directory.
      const next = await ran({ files: { 'next.txt': 'next' } });
      expect(next.output).toMatchObject({ entries_at_start: 0 });
      expect((await artifactsOf(next.run_id)).map((artifact) => artifact.name)).toEqual(['next.txt']);
    });

    it.skipIf(isolation === 'none')(
      "a file filling the directory stops at the run's own tmpfs: the run fails disk_quota, is refunded, and the node goes on",
      async () => {
        const result = await ran({ fill: 16 });
        expect(result, JSON.stringify(result)).toMatchObject({
          status: 'failed',
          charged_cents: 0,
          output: { error: 'disk_quota', message: expect.stringContaining('artifacts directory') },
        });
        // A failed run's artifacts are uploaded too (docs/api.md "Run artifacts"): what fitted, no more.
        const [fill] = await artifactsOf(result.run_id);
        expect(fill!.size_bytes).toBeLessThanOrEqual(ARTIFACTS_BYTES);
        expect((await ran({ files: { 'after.txt': 'after' } })).status).toBe('succeeded');
      },
    );
  },
);

describe.skipIf(!sandboxAvailable)('many artifacts, under bubblewrap as root', () => {
  it('the first 100 by name are uploaded, the rest are not sent', async () => {
    const email = uniqueEmail('artifacts-many');
    const enrolled = await enrollNode(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const token = await signInPaid(service.baseUrl, email);
    const home = openDir('artifacts-many-');
    const { deps, client, db } = testNodeCaller(service.baseUrl, home, enrolled, {
      isolation: 'bubblewrap',
      limits: { timeoutMs: 60_000 },
    });
    const files = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`file-${String(i).padStart(3, '0')}.txt`, `file ${i}`]));
    writeFileSync(join(installTestBundle(home, AGENT, WRITER), 'plan.json'), JSON.stringify({ files }));
    const outcome = await runAgent(deps, AGENT, {});
    expect(outcome.kind).toBe('settled');
    const runId = (outcome as { result: { run_id: string } }).result.run_id;
    const listed = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}/artifacts`, { token });
    const names = (listed.body.artifacts as Array<{ name: string }>).map((artifact) => artifact.name);
    expect(names).toEqual(Object.keys(files).slice(0, 100));
    await client.close();
    db.close();
  });
});

describe('an upload longer than the lease', () => {
  const short = useSvcApi({ runTiming: { leaseMs: 2_000, pollHoldMs: 500, sweepMs: 100 } });

  it('keeps the run: its lease is renewed while its artifacts go up, and the run succeeds with all of them', async () => {
    const email = uniqueEmail('artifacts-slow');
    const enrolled = await enrollNode(short.baseUrl, email);
    await fundWallet(short.baseUrl, email, 100);
    const token = await signInPaid(short.baseUrl, email);
    // 192 KiB up at 32 KiB a second: at least 6 s of upload, three leases.
    const throttle = await throttledProxy(new URL(short.baseUrl), 32 * 1024);
    const home = openDir('artifacts-slow-');
    const { deps, client, db } = testNodeCaller(`http://127.0.0.1:${throttle.port}`, home, enrolled, {
      isolation: 'none',
      limits: { timeoutMs: 60_000 },
    });
    const files = Object.fromEntries(['a.bin', 'b.bin', 'c.bin'].map((name) => [name, 'x'.repeat(64 * 1024)]));
    writeFileSync(join(installTestBundle(home, AGENT, WRITER), 'plan.json'), JSON.stringify({ files }));
    const outcome = await runAgent(deps, AGENT, {});
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ kind: 'settled', result: { status: 'succeeded', charged_cents: 4 } });
    const listed = await httpRequest(
      `${short.baseUrl}/v1/swarm/runs/${(outcome as { result: { run_id: string } }).result.run_id}/artifacts`,
      { token },
    );
    expect(listed.body.artifacts.map((artifact: { name: string }) => artifact.name)).toEqual(['a.bin', 'b.bin', 'c.bin']);
    await client.close();
    db.close();
    await throttle.close();
  }, 60_000);
});

/** A loopback proxy to `target` that passes what the client sends at `bytesPerSecond` at most (answers at once). */
async function throttledProxy(target: URL, bytesPerSecond: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    upstream.pipe(client);
    client.on('data', (chunk: Buffer) => {
      client.pause();
      setTimeout(
        () => {
          upstream.write(chunk);
          client.resume();
        },
        (chunk.length / bytesPerSecond) * 1000,
      );
    });
    client.on('end', () => upstream.end());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
