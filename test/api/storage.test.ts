// The service's storage (docs/api.md "Storage"): a full disk is a 503 with Retry-After that changes nothing, and the
// WAL never keeps a burst's size on disk. The full disk is real to SQLite: the service's own connection is capped at
// its current size (PRAGMA max_page_count), so the first write that needs a new page fails with SQLITE_FULL.
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { openDatabase, WAL_SIZE_LIMIT_BYTES, type SqliteDatabase } from '../../src/lib/sqlite.js';
import { SERVICE_MIGRATIONS } from '../../src/api/store/sqlite-migrations.js';
import { SERVICE_SCHEMA_VERSION } from '../../src/api/store/shared-migrations.js';
import { waitFor } from '../helpers/funnel.js';
import { apiClient, type ApiResponse } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { TEST_RUN_TIMING, execute, ledgerSnapshot, paidUserWithNode } from './execute-fixtures.js';
import { dbSnapshot } from './support/paygate-support.js';

/** Far more writes than the few pages a fresh database has room for: the loop ends on the first 503. */
const MAX_WRITES_UNTIL_FULL = 2000;

/** Caps the database at its current size; returns what lifts the cap again. */
function fillTheDisk(db: SqliteDatabase): () => void {
  const previous = db.pragma('max_page_count', { simple: true }) as number;
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
  return () => db.pragma(`max_page_count = ${previous}`);
}

/**
 * Sends `request` until the service answers something other than `okStatus`; returns that answer with what the
 * database held just before it. Which write is the first to need a new page depends on the free room in the pages
 * it touches, so the test does not guess it.
 */
async function firstRefusal(
  snapshot: () => unknown,
  request: () => Promise<ApiResponse>,
  okStatus: number,
): Promise<{ refused: ApiResponse; before: unknown; succeeded: number }> {
  for (let attempt = 0; attempt < MAX_WRITES_UNTIL_FULL; attempt += 1) {
    const before = snapshot();
    const response = await request();
    if (response.status !== okStatus) return { refused: response, before, succeeded: attempt };
  }
  throw new Error(`${MAX_WRITES_UNTIL_FULL} writes succeeded on a database capped at its size`);
}

function expectStorageFull(response: ApiResponse): void {
  expect(response.status).toBe(503);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.headers.get('retry-after')).toBe('30');
  expect(response.body).toMatchObject({
    status: 503,
    code: 'service_unavailable',
    detail: "the service's storage is full; this request changed nothing",
    remedy: expect.stringContaining('free disk space'),
  });
  expect(response.text).not.toMatch(/SQLITE|disk is full|at \S+:\d+/);
}

describe('a full disk', () => {
  let service: TestService;
  const log: string[] = [];

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        log.push(chunk.toString());
        done();
      },
    });
    service = await startSvcApi({ rateLimitPerMinute: 1_000_000, logger: { level: 'error', stream }, runTiming: TEST_RUN_TIMING });
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it('refuses a new session with 503 and Retry-After, keeps nothing of it, logs an error, and serves again once there is room', async () => {
    const api = apiClient(service.baseUrl);
    const liftCap = fillTheDisk(service.db);
    let result;
    try {
      result = await firstRefusal(
        () => dbSnapshot(service.db),
        () => api.post('/v1/swarm/paygate/session', { tier_id: 'svc_starter_agents', user_id: uniqueEmail('full') }),
        201,
      );
      expectStorageFull(result.refused);
      expect(dbSnapshot(service.db)).toEqual(result.before);
    } finally {
      liftCap();
    }
    const errorLine = log.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'request failed');
    expect(errorLine).toMatchObject({ level: 50, err: { code: 'SQLITE_FULL' } });

    const after = await api.post('/v1/swarm/paygate/session', { tier_id: 'svc_starter_agents', user_id: uniqueEmail('room') });
    expect(after.status).toBe(201);
  });

  it('refuses execute with 503 and charges nothing: the ledger, runs and keys are as before', async () => {
    // A node that takes nothing (capacity 0): it keeps the runs routable, and writes nothing the snapshot holds.
    const user = await paidUserWithNode(service, 100_000, { agents: ['agent_ops_monitor_004'], capacity: 0 });
    const body = { user_id: user.email, agent_id: 'agent_ops_monitor_004' };
    const liftCap = fillTheDisk(service.db);
    try {
      // respond-async: each accepted run answers at once (202), so the refusal comes without waiting on the node.
      const send = () => execute(service, user.token, body, randomUUID(), { prefer: 'respond-async' });
      const { refused, before } = await firstRefusal(() => ledgerSnapshot(service), send, 202);
      expectStorageFull(refused);
      expect(ledgerSnapshot(service)).toEqual(before);
    } finally {
      liftCap();
    }
    const after = await execute(service, user.token, body, randomUUID(), { prefer: 'respond-async' });
    expect(after.status, after.text).toBe(202);
    expect(after.body).toMatchObject({ status: 'queued', charged_cents: 4 });
    await user.node.stop();
  });
});

describe('the WAL on disk', () => {
  afterAll(() => removeTempDirs());

  /** Rows big enough that a few thousand make a WAL of several times the limit. */
  function writeMegabytes(db: SqliteDatabase, megabytes: number): void {
    db.exec('CREATE TABLE IF NOT EXISTS ballast (id INTEGER PRIMARY KEY, data BLOB)');
    const insert = db.prepare('INSERT INTO ballast (data) VALUES (?)');
    const row = Buffer.alloc(4000, 1);
    for (let i = 0; i < megabytes * 256; i += 1) insert.run(row);
  }

  it(`is cut back to ${WAL_SIZE_LIMIT_BYTES / 1024 / 1024} MiB after a checkpoint, whatever a burst made it grow to`, () => {
    const path = join(tempDir('wal-'), 'grow.db');
    const db = openDatabase(path, { migrations: [] });
    // A reader holding an old snapshot keeps every checkpoint from finishing, so the burst piles up in the WAL.
    const reader = openDatabase(path, { migrations: [] });
    try {
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM sqlite_master').get();
      writeMegabytes(db, 6);
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(3 * WAL_SIZE_LIMIT_BYTES);
      reader.exec('COMMIT');

      // The burst is over: a checkpoint can finish, and the next write restarts the log and trims the file.
      db.pragma('wal_checkpoint(PASSIVE)');
      writeMegabytes(db, 0.01);
      expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(WAL_SIZE_LIMIT_BYTES);
    } finally {
      reader.close();
      db.close();
    }
  });

  it('is emptied by svc-api once a minute (here every 50 ms)', async () => {
    const service = await startSvcApi({ walCheckpointIntervalMs: 50 });
    try {
      writeMegabytes(service.db, 1);
      await waitFor(
        async () => (statSync(`${service.db.name}-wal`).size === 0 ? true : undefined),
        'the periodic checkpoint to empty the WAL',
      );
    } finally {
      await service.close();
    }
  });

  it('is emptied by svc-api at close, even while another connection has the file open', async () => {
    const service = await startSvcApi();
    const path = service.db.name;
    // Another connection (a backup, a shell) keeps SQLite's own close from checkpointing and removing the log.
    const other = openDatabase(path, { migrations: SERVICE_MIGRATIONS, latestVersion: SERVICE_SCHEMA_VERSION });
    try {
      writeMegabytes(service.db, 1);
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(0);
      await service.close();
      expect(statSync(`${path}-wal`).size).toBe(0);
    } finally {
      other.close();
      await service.close();
    }
  });
});
