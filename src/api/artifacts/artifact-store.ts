// The artifacts' tables (docs/api.md "Run artifacts"; store/artifacts-migration.ts): every statement on them. Blobs
// are a user's bytes once per digest, written in 1 MiB chunks; a run's artifact names one of its user's blobs.
import { randomUUID } from 'node:crypto';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';

export type ArtifactRow = Tables['run_artifacts'];

/** One chunk row: large enough that a 64 MiB artifact is 64 rows, small enough to hold one in memory at a time. */
export const CHUNK_BYTES = 1024 * 1024;

export interface ArtifactStore {
  /** A run's artifacts, by name. */
  ofRun(runId: string): Promise<ArtifactRow[]>;
  find(runId: string, name: string): Promise<ArtifactRow | undefined>;
  /** How many artifacts the run has and their bytes together, leaving out the one named `except`. */
  runTotals(runId: string, except: string): Promise<{ files: number; bytes: number }>;
  /** The bytes the user's stored blobs take, each digest once. */
  userBytes(userId: string): Promise<number>;
  /** The user's stored blob of these bytes, when there is one. */
  storedBlob(userId: string, sha256: string): Promise<{ blob_id: string } | undefined>;
  /** A blob to write the chunks of: not complete, so nothing names it and the sweep removes it if left. */
  newBlob(userId: string, sha256: string, sizeBytes: number, now: number): Promise<string>;
  writeChunk(blobId: string, seq: number, content: Buffer): Promise<void>;
  chunk(blobId: string, seq: number): Promise<Buffer | undefined>;
  completeBlob(blobId: string): Promise<void>;
  blobExists(blobId: string): Promise<boolean>;
  insert(row: ArtifactRow): Promise<void>;
  /** Removes the run's artifacts that another attempt (another lease) uploaded; returns their blobs. */
  removeOtherAttempts(runId: string, leaseId: string): Promise<string[]>;
  /** Removes a run's artifacts; returns their blobs. */
  removeRun(runId: string): Promise<string[]>;
  /** Removes those of `blobIds` that no artifact names any more, chunks first. */
  removeUnnamedBlobs(blobIds: readonly string[]): Promise<number>;
  /** Runs with artifacts that ended before `cutoff`, oldest first. */
  expiredRuns(cutoff: number, limit: number): Promise<Array<{ run_id: string; user_id: string }>>;
  /** Blobs left incomplete since before `before` (an upload a crash cut short). */
  abandonedBlobs(before: number, limit: number): Promise<string[]>;
}

export function createArtifactStore(store: Store): ArtifactStore {
  return {
    ofRun: (runId) => store.db.selectFrom('run_artifacts').selectAll().where('run_id', '=', runId).orderBy('name').execute(),
    find: (runId, name) =>
      store.db.selectFrom('run_artifacts').selectAll().where('run_id', '=', runId).where('name', '=', name).executeTakeFirst(),
    async runTotals(runId, except) {
      const row = await store.db
        .selectFrom('run_artifacts')
        .select((eb) => [
          eb.fn.countAll<number | string>().as('files'),
          eb.fn.coalesce(eb.fn.sum<number | string | null>('size_bytes'), eb.lit(0)).as('bytes'),
        ])
        .where('run_id', '=', runId)
        .where('name', '!=', except)
        .executeTakeFirstOrThrow();
      return { files: Number(row.files), bytes: Number(row.bytes) };
    },
    async userBytes(userId) {
      const row = await store.db
        .selectFrom('artifact_blobs')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string | null>('size_bytes'), eb.lit(0)).as('bytes'))
        .where('user_id', '=', userId)
        .where('complete', '=', 1)
        .executeTakeFirstOrThrow();
      return Number(row.bytes);
    },
    storedBlob: (userId, sha256) =>
      store.db
        .selectFrom('artifact_blobs')
        .select('blob_id')
        .where('user_id', '=', userId)
        .where('sha256', '=', sha256)
        .where('complete', '=', 1)
        .executeTakeFirst(),
    async newBlob(userId, sha256, sizeBytes, now) {
      const blobId = randomUUID();
      await store.statement(() =>
        store.db
          .insertInto('artifact_blobs')
          .values({ blob_id: blobId, user_id: userId, sha256, size_bytes: sizeBytes, complete: 0, created_at: now })
          .execute(),
      );
      return blobId;
    },
    async writeChunk(blobId, seq, content) {
      await store.statement(() => store.db.insertInto('artifact_chunks').values({ blob_id: blobId, seq, content }).execute());
    },
    async chunk(blobId, seq) {
      const row = await store.db
        .selectFrom('artifact_chunks')
        .select('content')
        .where('blob_id', '=', blobId)
        .where('seq', '=', seq)
        .executeTakeFirst();
      return row?.content;
    },
    async completeBlob(blobId) {
      await store.db.updateTable('artifact_blobs').set({ complete: 1 }).where('blob_id', '=', blobId).execute();
    },
    async blobExists(blobId) {
      return (await store.db.selectFrom('artifact_blobs').select('blob_id').where('blob_id', '=', blobId).executeTakeFirst()) !== undefined;
    },
    async insert(row) {
      await store.db.insertInto('run_artifacts').values(row).execute();
    },
    async removeOtherAttempts(runId, leaseId) {
      const rows = await store.db
        .deleteFrom('run_artifacts')
        .where('run_id', '=', runId)
        .where('lease_id', '!=', leaseId)
        .returning('blob_id')
        .execute();
      return rows.map((row) => row.blob_id);
    },
    async removeRun(runId) {
      const rows = await store.db.deleteFrom('run_artifacts').where('run_id', '=', runId).returning('blob_id').execute();
      return rows.map((row) => row.blob_id);
    },
    async removeUnnamedBlobs(blobIds) {
      const unique = [...new Set(blobIds)];
      if (unique.length === 0) return 0;
      const unnamed = await store.db
        .selectFrom('artifact_blobs as b')
        .select('b.blob_id')
        .where('b.blob_id', 'in', unique)
        .where((eb) => eb.not(eb.exists(eb.selectFrom('run_artifacts as a').select('a.blob_id').whereRef('a.blob_id', '=', 'b.blob_id'))))
        .execute();
      const ids = unnamed.map((row) => row.blob_id);
      if (ids.length === 0) return 0;
      await store.db.deleteFrom('artifact_chunks').where('blob_id', 'in', ids).execute();
      await store.db.deleteFrom('artifact_blobs').where('blob_id', 'in', ids).execute();
      return ids.length;
    },
    expiredRuns: (cutoff, limit) =>
      store.db
        .selectFrom('run_artifacts as a')
        .innerJoin('runs as r', 'r.run_id', 'a.run_id')
        .select(['a.run_id', 'a.user_id'])
        .distinct()
        .where('r.finished_at', 'is not', null)
        .where('r.finished_at', '<', cutoff)
        .limit(limit)
        .execute(),
    async abandonedBlobs(before, limit) {
      const rows = await store.db
        .selectFrom('artifact_blobs')
        .select('blob_id')
        .where('complete', '=', 0)
        .where('created_at', '<', before)
        .limit(limit)
        .execute();
      return rows.map((row) => row.blob_id);
    },
  };
}
