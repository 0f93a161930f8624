// Run artifacts at the real svc-api over HTTP (docs/api.md "Run artifacts"), on both engines: a node holding a run
// uploads files, streamed past the JSON limit, stored once per user and digest in chunks; its user lists and
// downloads them; the caps refuse with their own codes; another user's run is a 404; they expire with their run.
import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequestRaw } from 'node:http';
import { describe, expect, it } from 'vitest';
import { MovableClock } from '../helpers/clock.js';
import { fundWallet, signInPaid, waitFor } from '../helpers/funnel.js';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import { enrollNode, type EnrolledTestNode } from '../helpers/protocol-node.js';
import { useSvcApi, type TestService } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';
const KiB = 1024;
const MiB = 1024 * KiB;

interface HeldRun {
  run_id: string;
  lease_id: string;
  node: EnrolledTestNode;
  token: string;
}

/** A user with a node and a run of the node's own, running on it under its lease, and the user's JWT. */
async function heldRun(service: TestService, user?: { node: EnrolledTestNode; token: string }): Promise<HeldRun> {
  let owner = user;
  if (owner === undefined) {
    const email = uniqueEmail('artifacts');
    const node = await enrollNode(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    owner = { node, token: await signInPaid(service.baseUrl, email) };
  }
  const started = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
    token: owner.node.credential,
    headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
    body: { user_id: owner.node.email, agent_id: AGENT, input: { thresholds: {} } },
  });
  expect(started.status, started.text).toBe(202);
  return { run_id: started.body.run_id, lease_id: started.body.lease.lease_id, node: owner.node, token: owner.token };
}

function put(
  service: TestService,
  run: HeldRun,
  name: string,
  bytes: Buffer,
  options: { lease?: string; credential?: string; type?: string } = {},
): Promise<ApiResponse> {
  return httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/${name}?lease_id=${options.lease ?? run.lease_id}`, {
    method: 'PUT',
    token: options.credential ?? run.node.credential,
    headers: { 'content-type': options.type ?? 'application/octet-stream' },
    rawBody: bytes,
  });
}

async function download(
  service: TestService,
  run: HeldRun,
  name: string,
  token = run.token,
): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/${name}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function finish(service: TestService, run: HeldRun): Promise<void> {
  const done = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/result`, {
    token: run.node.credential,
    body: { lease_id: run.lease_id, status: 'succeeded', output: {} },
  });
  expect(done.status, done.text).toBe(200);
}

const count = (service: TestService, table: string) =>
  Number((service.db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number | string }).n);

describe('run artifacts with the default caps', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock });

  it('two files up, listed and downloaded byte for byte: attachment, nosniff, the sha256 as ETag, the length', async () => {
    const run = await heldRun(service);
    const csv = Buffer.from('name,email\nAda,ada@example.com\n');
    // Three chunks and a part, past the 64 KiB of JSON bodies: streamed, never parsed.
    const big = Buffer.alloc(3 * MiB + 12_345);
    for (let i = 0; i < big.length; i += 1) big[i] = (i * 7 + 3) % 251;
    const first = await put(service, run, 'drafts.csv', csv);
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({
      name: 'drafts.csv',
      size_bytes: csv.length,
      sha256: sha256(csv),
      content_type: 'text/csv',
      created: true,
    });
    expect((await put(service, run, 'findings.bin', big)).status).toBe(201);

    const listed = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts`, { token: run.token });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body).toEqual({
      run_id: run.run_id,
      // Running: it expires once it ended.
      expires_at: null,
      artifacts: [
        {
          name: 'drafts.csv',
          size_bytes: csv.length,
          sha256: sha256(csv),
          content_type: 'text/csv',
          created_at: expect.any(String),
          url: `${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/drafts.csv`,
        },
        {
          name: 'findings.bin',
          size_bytes: big.length,
          sha256: sha256(big),
          content_type: 'application/octet-stream',
          created_at: expect.any(String),
          url: expect.stringMatching(/findings\.bin$/),
        },
      ],
    });
    const got = await download(service, run, 'findings.bin');
    expect(got.status).toBe(200);
    expect(sha256(got.bytes)).toBe(sha256(big));
    expect(got.headers.get('content-length')).toBe(String(big.length));
    expect(got.headers.get('content-disposition')).toBe('attachment; filename="findings.bin"');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
    expect(got.headers.get('etag')).toBe(`"${sha256(big)}"`);
    const text = await download(service, run, 'drafts.csv');
    expect(text.bytes.equals(csv)).toBe(true);
    expect(text.headers.get('content-type')).toMatch(/^text\/csv/);
    const again = await fetch(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/drafts.csv`, {
      headers: { authorization: `Bearer ${run.token}`, 'if-none-match': `"${sha256(csv)}"` },
    });
    expect(again.status).toBe(304);
  });

  it('the same name and bytes again is a repeat (200, nothing new); other bytes under it are 409 artifact_exists', async () => {
    const run = await heldRun(service);
    const bytes = Buffer.from('{"runs": 1}');
    expect((await put(service, run, 'report.json', bytes)).status).toBe(201);
    const blobs = count(service, 'artifact_blobs');
    const repeat = await put(service, run, 'report.json', bytes);
    expect(repeat.status, repeat.text).toBe(200);
    expect(repeat.body).toMatchObject({ name: 'report.json', sha256: sha256(bytes), created: false });
    const other = await put(service, run, 'report.json', Buffer.from('{"runs": 2}'));
    expect(other.status, other.text).toBe(409);
    expect(other.body).toMatchObject({ code: 'artifact_exists', sha256: sha256(bytes) });
    expect(count(service, 'artifact_blobs')).toBe(blobs);
    expect((await download(service, run, 'report.json')).bytes.equals(bytes)).toBe(true);
  });

  it("another user's run is a 404 to its JWT and its node; a node not holding the run (lease, node, ended) is 409 lease_lost", async () => {
    const run = await heldRun(service);
    expect((await put(service, run, 'a.txt', Buffer.from('a'))).status).toBe(201);
    const stranger = await heldRun(service);
    for (const answer of [
      await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts`, { token: stranger.token }),
      await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/a.txt`, { token: stranger.token }),
      await put(service, run, 'b.txt', Buffer.from('b'), { credential: stranger.node.credential }),
      await httpRequest(`${service.baseUrl}/v1/swarm/runs/${randomUUID()}/artifacts`, { token: run.token }),
    ]) {
      expect(answer.status, answer.text).toBe(404);
      expect(answer.body.code).toBe('run_not_found');
    }
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/none.txt`, { token: run.token })).body.code).toBe(
      'not_found',
    );
    // Listing is the user's: a node credential does the node's own work only.
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts`, { token: run.node.credential })).status).toBe(
      401,
    );
    const sameUsersOtherNode = await enrollNode(service.baseUrl, run.node.email);
    for (const refused of [
      await put(service, run, 'b.txt', Buffer.from('b'), { lease: 'f'.repeat(32) }),
      await put(service, run, 'b.txt', Buffer.from('b'), { credential: sameUsersOtherNode.credential }),
    ]) {
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body.code).toBe('lease_lost');
    }
    await finish(service, run);
    const late = await put(service, run, 'b.txt', Buffer.from('b'));
    expect(late.body).toMatchObject({ code: 'lease_lost', run_status: 'succeeded' });
    expect(
      (await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts`, { token: run.token })).body.artifacts.map(
        (a: { name: string }) => a.name,
      ),
    ).toEqual(['a.txt']);
  });

  it('refuses a name that is not a plain file name, and a body that is not application/octet-stream', async () => {
    const run = await heldRun(service);
    for (const name of ['.hidden', '..', '%2E%2E%2Fescape', 'a%20b.txt', 'x'.repeat(129)]) {
      const refused = await put(service, run, name, Buffer.from('x'));
      expect([400, 404], `${name}: ${refused.text}`).toContain(refused.status);
    }
    const json = await put(service, run, 'a.json', Buffer.from('{}'), { type: 'application/json' });
    expect(json.status, json.text).toBe(415);
    expect(json.body.detail).toContain('application/octet-stream');
    expect(count(service, 'run_artifacts WHERE run_id = ' + `'${run.run_id}'`)).toBe(0);
  });

  it('expire RUN_DATA_RETENTION_DAYS after the run ended: listed no more at once, then removed with their blobs', async () => {
    const run = await heldRun(service);
    const kept = await heldRun(service, run);
    const shared = Buffer.from('the same bytes in two runs');
    expect((await put(service, run, 'old.txt', shared)).status).toBe(201);
    expect((await put(service, kept, 'new.txt', shared)).status).toBe(201);
    await finish(service, run);
    const listed = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts`, { token: run.token });
    const finishedAt = Number(service.db.prepare('SELECT finished_at FROM runs WHERE run_id = ?').pluck().get(run.run_id));
    expect(Date.parse(listed.body.expires_at)).toBe(finishedAt + 30 * 86_400_000);
    clock.advance(31 * 86_400_000);
    // A JWT lasts 30 days: the user signs in again.
    run.token = await signInPaid(service.baseUrl, run.node.email);
    const expired = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts`, { token: run.token });
    expect(expired.body.artifacts).toEqual([]);
    expect((await download(service, run, 'old.txt')).status).toBe(404);
    await waitFor(
      async () => (count(service, `run_artifacts WHERE run_id = '${run.run_id}'`) === 0 ? true : undefined),
      'the sweep to remove the expired run',
      15_000,
    );
    // The blob is still named by the other run, which ended only now (its lease ran out with the clock's move): it
    // stays, and downloads.
    expect((await download(service, kept, 'new.txt', run.token)).bytes.equals(shared)).toBe(true);
    await waitFor(
      async () =>
        service.db.prepare('SELECT finished_at FROM runs WHERE run_id = ?').pluck().get(kept.run_id) !== null ? true : undefined,
      'the other run to end',
    );
    clock.advance(31 * 86_400_000);
    const blob = sha256(shared);
    await waitFor(
      async () => (count(service, `artifact_blobs WHERE sha256 = '${blob}'`) === 0 ? true : undefined),
      'the blob to go with its last artifact',
      15_000,
    );
    expect(count(service, `artifact_chunks WHERE blob_id NOT IN (SELECT blob_id FROM artifact_blobs)`)).toBe(0);
  });
});

describe('run artifacts with small caps', () => {
  const limits = {
    maxFileBytes: 4 * KiB,
    maxRunBytes: 8 * KiB,
    maxRunFiles: 3,
    maxUserBytes: 10 * KiB,
    bodyTimeout: { idleMs: 1_000, minBytesPerSecond: 0 },
  };
  const service = useSvcApi({ artifactLimits: limits });

  it('413 per file (declared or streamed), per run (count, bytes), per user; the same bytes count once for a user', async () => {
    const run = await heldRun(service);
    const tooLarge = await put(service, run, 'big.bin', Buffer.alloc(4 * KiB + 1));
    expect(tooLarge.status, tooLarge.text).toBe(413);
    expect(tooLarge.body).toMatchObject({ code: 'artifact_too_large', max_bytes: 4 * KiB });
    // Without a Content-Length, the stream itself is cut at the cap.
    const chunked = await chunkedPut(service, run, 'stream.bin', [Buffer.alloc(3 * KiB), Buffer.alloc(3 * KiB)]);
    expect(chunked.status, chunked.text).toBe(413);
    expect(JSON.parse(chunked.text).code).toBe('artifact_too_large');

    for (const name of ['1.bin', '2.bin']) expect((await put(service, run, name, Buffer.alloc(3 * KiB, name))).status).toBe(201);
    const overBytes = await put(service, run, '3.bin', Buffer.alloc(3 * KiB, 3));
    expect(overBytes.status, overBytes.text).toBe(413);
    expect(overBytes.body).toMatchObject({ code: 'run_artifacts_full', run_bytes: 6 * KiB, run_bytes_limit: 8 * KiB });
    expect((await put(service, run, '3.bin', Buffer.alloc(KiB, 3))).status).toBe(201);
    const overCount = await put(service, run, '4.bin', Buffer.alloc(1, 4));
    expect(overCount.body).toMatchObject({ code: 'run_artifacts_full', run_files: 3, run_files_limit: 3 });

    // The user stores 7 KiB now. Another run of theirs: the same bytes again take no room, new ones must fit in 3 KiB.
    const next = await heldRun(service, run);
    const same = await put(service, next, 'same.bin', Buffer.alloc(3 * KiB, '1.bin'));
    expect(same.status, same.text).toBe(201);
    const overQuota = await put(service, next, 'new.bin', Buffer.alloc(3 * KiB + 1, 9));
    expect(overQuota.status, overQuota.text).toBe(413);
    expect(overQuota.body).toMatchObject({ code: 'artifact_quota_exceeded', quota: { bytes_used: 7 * KiB, bytes_limit: 10 * KiB } });
    expect((await put(service, next, 'fits.bin', Buffer.alloc(3 * KiB, 9))).status).toBe(201);
    // Nothing of the refused uploads stayed: one blob per distinct content of this user, every blob complete.
    const blobs = service.db.prepare('SELECT size_bytes, complete FROM artifact_blobs WHERE user_id = ?').all(run.node.email) as Array<{
      size_bytes: number;
      complete: number;
    }>;
    expect(blobs.map((blob) => Number(blob.size_bytes)).sort((a, b) => a - b)).toEqual([KiB, 3 * KiB, 3 * KiB, 3 * KiB]);
    expect(blobs.every((blob) => Number(blob.complete) === 1)).toBe(true);
  });

  it('the same bytes of two users are stored twice: nothing is shared across users', async () => {
    const bytes = Buffer.from('one content, two users');
    const [a, b] = [await heldRun(service), await heldRun(service)];
    for (const run of [a, b]) expect((await put(service, run, 'same.txt', bytes)).status).toBe(201);
    expect(count(service, `artifact_blobs WHERE sha256 = '${sha256(bytes)}'`)).toBe(2);
  });

  it('a stalled upload is cut off (408) and nothing is stored', async () => {
    const run = await heldRun(service);
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const url = new URL(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/stalled.bin?lease_id=${run.lease_id}`);
      const outgoing = httpRequestRaw(url, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${run.node.credential}`,
          'content-type': 'application/octet-stream',
          'content-length': String(2 * KiB),
        },
      });
      outgoing.on('response', (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      });
      outgoing.on('error', reject);
      // Half the body, then nothing: the service's rule for this route (1 s idle here) cuts it.
      outgoing.write(Buffer.alloc(KiB));
    });
    expect(answer.status, answer.text).toBe(408);
    expect(count(service, `run_artifacts WHERE run_id = '${run.run_id}'`)).toBe(0);
    expect(count(service, 'artifact_blobs WHERE complete = 0')).toBe(0);
  });
});

/** A PUT whose body goes chunked (no Content-Length), as a client that does not know the size sends it. */
function chunkedPut(service: TestService, run: HeldRun, name: string, parts: Buffer[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/${name}?lease_id=${run.lease_id}`);
    const outgoing = httpRequestRaw(url, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${run.node.credential}`,
        'content-type': 'application/octet-stream',
        'transfer-encoding': 'chunked',
      },
    });
    outgoing.on('response', (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    // The service may answer and close before the last part: that is the answer, not a failure.
    outgoing.on('error', (error) => (outgoing.writableEnded ? undefined : reject(error)));
    for (const part of parts) outgoing.write(part);
    outgoing.end();
  });
}
