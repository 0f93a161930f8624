// What one user may upload and keep (docs/api.md "Agent upload", "Quota and retention"): a quota of stored bytes and
// of versions (413 upload_quota_exceeded, nothing stored, nothing already stored touched), an hourly upload rate
// (429 before the body is read), removal of a version by its user (the remedy of the 413), and the retention sweep
// of versions nobody uses, which never takes the current one, the one before it, or one an unfinished run needs.
// 40 distinct 5 MiB bundles from one user in 28 s were all kept, for good. Real svc-api over HTTP, both engines.
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { versionReleasedAt } from '../../src/api/store/shared-migrations.js';
import { MAX_BUNDLE_BYTES } from '../../src/contract/agent-bundle.js';
import { archiveOf, manifestOf, sha256 } from '../helpers/agent-archives.js';
import { MovableClock } from '../helpers/clock.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi, type TestService } from '../helpers/svc-api.js';
import { postgresDatabaseFor, testEngine } from '../helpers/test-engine.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';
afterAll(stopServingNodes);

/** A version whose archive is about `padding` bytes more than a bare one (random bytes do not compress). */
const bundle = (version: string, padding = 0, agentId = AGENT) =>
  archiveOf([
    { name: 'agent.json', data: manifestOf(agentId, version) },
    { name: 'main.sh', data: '#!/bin/sh\ncat >/dev/null\necho {}\n', mode: 0o755 },
    ...(padding > 0 ? [{ name: 'data.bin', data: randomBytes(padding) }] : []),
  ]);

function api(service: TestService) {
  return {
    upload: (token: string, archive: Buffer, agentId = AGENT) =>
      httpRequest(`${service.baseUrl}/v1/swarm/agents/${agentId}/versions`, {
        method: 'POST',
        rawBody: archive,
        headers: { 'content-type': 'application/gzip' },
        token,
      }),
    versions: async (token: string) => {
      const listed = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/versions`, { token });
      expect(listed.status, listed.text).toBe(200);
      return (listed.body.versions as Array<{ version: string }>).map((v) => v.version);
    },
    remove: (token: string, version: string) =>
      httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/versions/${version}`, { method: 'DELETE', token }),
    current: (token: string, version: string) =>
      httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'PUT', body: { version }, token }),
    download: (token: string, digest: string) => httpRequest(`${service.baseUrl}/v1/swarm/bundles/${digest}`, { token }),
  };
}

describe('the quota of versions and bytes', () => {
  const service = useSvcApi({ uploadQuota: { maxVersions: 3, maxBytes: 64 * 1024 } });
  const { upload, versions, remove, download } = api(service);

  it('refuses a version over the count with 413 and a remedy that works, keeping every version stored', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('quota-count'));
    const stored = [await bundle('1.0.0'), await bundle('1.1.0'), await bundle('1.2.0')];
    for (const archive of stored) expect((await upload(token, archive)).status).toBe(201);
    const over = await upload(token, await bundle('2.0.0'));
    expect(over.status, over.text).toBe(413);
    expect(over.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(over.body).toMatchObject({ code: 'upload_quota_exceeded', quota: { versions_used: 3, versions_limit: 3 } });
    expect(over.body.remedy).toMatch(/Remove versions you no longer need, then upload again/);
    expect(await versions(token)).toEqual(['1.2.0', '1.1.0', '1.0.0']);
    for (const archive of stored) expect((await download(token, sha256(archive))).status).toBe(200);
    // The same bytes again store nothing new: answered as before, even at the quota.
    expect((await upload(token, stored[2]!)).status).toBe(200);
    // The remedy: remove a version, then the upload fits.
    expect((await remove(token, '1.0.0')).status).toBe(200);
    expect((await download(token, sha256(stored[0]!))).status).toBe(404);
    expect((await upload(token, await bundle('2.0.0'))).status).toBe(201);
  });

  it('refuses a bundle that would bring the stored bytes over the quota, whatever the count', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('quota-bytes'));
    expect((await upload(token, await bundle('1.0.0', 40 * 1024))).status).toBe(201);
    const over = await upload(token, await bundle('1.1.0', 30 * 1024));
    expect(over.status, over.text).toBe(413);
    expect(over.body).toMatchObject({ code: 'upload_quota_exceeded', quota: { versions_used: 1, bytes_limit: 64 * 1024 } });
    expect(over.body.detail).toMatch(/over your quota of 65536/);
    expect(await versions(token)).toEqual(['1.0.0']);
    // Another user's room is their own.
    expect((await upload(await signIn(service.baseUrl, uniqueEmail('quota-other')), await bundle('1.1.0', 30 * 1024))).status).toBe(201);
  });
});

describe('removing a version', () => {
  // A short lease: the run of a node gone is failed (node_lost) within seconds, not 45.
  const service = useSvcApi({ runTiming: { leaseMs: 2_000, sweepMs: 100 } });
  const { upload, versions, remove, current } = api(service);

  it('refuses the current version and one an unfinished run is pinned to (409), an unknown one (404); removes the others', async () => {
    const email = uniqueEmail('remove');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const [v1, v2] = [await bundle('1.0.0'), await bundle('2.0.0')];
    const first = await upload(token, v1);
    expect(first.status, first.text).toBe(201);
    // A run pinned to 1.0.0, queued on a node that never answers it.
    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, email), {
      agents: [AGENT],
      answer: () => new Promise(() => undefined),
    });
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      body: { user_id: email, agent_id: AGENT },
      headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
      token,
    });
    expect(run.status, run.text).toBe(202);
    const second = await upload(token, v2);
    expect(second.status, second.text).toBe(201);

    const inUse = await remove(token, '2.0.0');
    expect([inUse.status, inUse.body.code, inUse.body.detail]).toEqual([
      409,
      'version_in_use',
      `${AGENT} version 2.0.0 cannot be removed: it is current: new runs execute it`,
    ]);
    const pinned = await remove(token, '1.0.0');
    expect([pinned.status, pinned.body.code]).toEqual([409, 'version_in_use']);
    expect(pinned.body.detail).toMatch(/a run not finished yet is pinned to it/);
    expect((await remove(token, '9.9.9')).status).toBe(404);
    expect((await remove(await signIn(service.baseUrl, uniqueEmail('stranger')), '1.0.0')).status).toBe(404);
    expect(await versions(token)).toEqual(['2.0.0', '1.0.0']);

    // Once the run is over (its node gone: failed and refunded), 1.0.0 goes.
    await node.stop();
    await httpRequest(`${service.baseUrl}/v1/swarm/nodes/${node.node_id}`, { method: 'DELETE', token });
    await waitFor(
      async () => ((await remove(token, '1.0.0')).status === 200 ? true : undefined),
      'the run to finish and the version to go',
      20_000,
    );
    expect(await versions(token)).toEqual(['2.0.0']);
    expect((await current(token, '1.0.0')).status).toBe(404);
  });
});

describe('the upload rate', () => {
  const service = useSvcApi({ uploadsPerHour: 3 });
  const { upload, versions } = api(service);

  it('counts every upload of the user, refused ones too, and answers 429 before reading the body', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('rate'));
    expect((await upload(token, await bundle('1.0.0'))).status).toBe(201);
    expect((await upload(token, Buffer.from('not an archive at all'))).status).toBe(422);
    expect((await upload(token, await bundle('1.1.0'))).status).toBe(201);
    // Over 5 MiB: had the body been read, this would be a 413.
    const refused = await upload(token, Buffer.alloc(MAX_BUNDLE_BYTES + 1024, 1));
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body).toMatchObject({ code: 'rate_limited', uploads_per_hour: 3 });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.body.remedy).toMatch(/^Wait \d+ seconds/);
    expect((await upload(token, await bundle('1.2.0'))).status).toBe(429);
    expect(await versions(token)).toEqual(['1.1.0', '1.0.0']);
    expect((await upload(await signIn(service.baseUrl, uniqueEmail('rate-other')), await bundle('1.0.0'))).status).toBe(201);
  });
});

describe('the retention of versions nobody uses', () => {
  const clock = new MovableClock();
  const lines: Array<{ msg: string; version?: string }> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const day = 86_400_000;
  // Leases, the queue and the node outlast the clock's jumps, so the queued run stays unfinished throughout.
  const runTiming = { leaseMs: 40 * day, queueTimeoutMs: 365 * day, sweepMs: 50 };
  const service = useSvcApi(() => ({
    clock,
    versionRetentionMs: 20 * day,
    runTiming,
    staleNodeAfterMs: 0,
    logger: { level: 'debug', stream },
  }));
  const { upload, versions, current } = api(service);
  const rounds = () => lines.filter((line) => line.msg === 'agent version retention round').length;

  it('removes them after the retention time, never the current one, the one before it, or one an unfinished run needs', async () => {
    const email = uniqueEmail('retention');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const archives = new Map<string, Buffer>();
    for (const version of ['1.0.0', '2.0.0', '3.0.0']) {
      archives.set(version, await bundle(version));
      const up = await upload(token, archives.get(version)!);
      expect(up.status, up.text).toBe(201);
    }
    // 1.0.0 is current again for a run that stays queued (its node never takes it), then 3.0.0 once more.
    expect((await current(token, '1.0.0')).status).toBe(200);
    const node = await enrollNode(service.baseUrl, email);
    await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents/${AGENT}`, { method: 'PUT', token: node.credential });
    await httpRequest(`${service.baseUrl}/v1/swarm/nodes/poll`, {
      body: { hostname: 'h', version: 'v', capacity: 0, running: [], wait_seconds: 0 },
      token: node.credential,
    });
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      body: { user_id: email, agent_id: AGENT },
      headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
      token,
    });
    expect([run.status, run.body.status, run.body.bundle_digest]).toEqual([202, 'queued', sha256(archives.get('1.0.0')!)]);
    expect((await current(token, '3.0.0')).status).toBe(200);
    for (const version of ['4.0.0', '5.0.0']) {
      archives.set(version, await bundle(version));
      expect((await upload(token, archives.get(version)!)).status).toBe(201);
    }
    expect((await current(token, '3.0.0')).status).toBe(200);

    // Within the retention time nothing goes.
    const before = rounds();
    clock.advance(19 * day);
    await waitFor(async () => (rounds() > before ? true : undefined), 'a sweep round');
    expect(await versions(token)).toEqual(['5.0.0', '4.0.0', '3.0.0', '2.0.0', '1.0.0']);

    clock.advance(2 * day);
    await waitFor(async () => ((await versions(token)).length === 3 ? true : undefined), 'the sweep to remove the unused versions', 20_000);
    // Current (3.0.0), the one uploaded before it (2.0.0), and 1.0.0, which the queued run executes.
    expect(await versions(token)).toEqual(['3.0.0', '2.0.0', '1.0.0']);
    expect((await api(service).download(token, sha256(archives.get('4.0.0')!))).status).toBe(404);
    expect(
      lines
        .filter((line) => /unused agent version removed/.test(line.msg))
        .map((line) => line.version)
        .sort(),
    ).toEqual(['4.0.0', '5.0.0']);
  });
});

describe('the migration that brings retention', () => {
  it('starts the unused time of every version stored before at the upgrade, so the upgrade itself removes nothing', async () => {
    const db =
      testEngine() === 'sqlite'
        ? new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(':memory:') }) })
        : new Kysely<unknown>({
            dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: await postgresDatabaseFor(tempDir('migration-')) }) }),
          });
    try {
      await sql`CREATE TABLE agent_versions (user_id text, agent_id text, version text, uploaded_at bigint)`.execute(db);
      const longAgo = Date.now() - 400 * 86_400_000;
      await sql`INSERT INTO agent_versions VALUES ('a@b.c', ${AGENT}, '1.0.0', ${longAgo})`.execute(db);
      const before = Date.now();
      await versionReleasedAt(db);
      const { rows } = await sql<{
        uploaded_at: number | string;
        released_at: number | string;
      }>`SELECT uploaded_at, released_at FROM agent_versions`.execute(db);
      expect(rows).toHaveLength(1);
      expect(Number(rows[0]!.uploaded_at)).toBe(longAgo);
      expect(Number(rows[0]!.released_at)).toBeGreaterThanOrEqual(before);
    } finally {
      await db.destroy();
    }
  });
});
