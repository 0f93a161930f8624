// A node's upload of one artifact of a run it holds (docs/api.md "Run artifacts"): the body is streamed into a
// temporary file while it is hashed and counted (never whole in memory), then stored content-addressed for its user:
// bytes the user stored already are only named again, new ones are written in chunks before a short transaction
// checks the caps once more and names them. Every refusal leaves nothing stored.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { SvcError } from '../../contract/errors.js';
import { saveBounded, StreamTooLarge } from '../../lib/bounded-stream.js';
import type { ServiceContext } from '../context.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import type { RunRow, RunStore } from '../runs/run-store.js';
import type { ArtifactLimits } from './artifact-limits.js';
import type { ArtifactRow, ArtifactStore } from './artifact-store.js';
import { writeBlobChunks } from './blob-chunks.js';

export interface ArtifactPut {
  node: EnrolledNode;
  run: RunRow | undefined;
  runId: string;
  name: string;
  leaseId: string;
  /** Content-Length, when the request has one. */
  declaredBytes: number | undefined;
  body: Readable;
}

export type PutOutcome = { created: boolean; row: ArtifactRow };

/**
 * What is checked before the body is read: the run (404 for another user's, 409 when the node does not hold it), and
 * the caps the declared length already breaks. Throws the refusal; the route reads the body to its end first.
 */
export function checkBeforeBody(put: Omit<ArtifactPut, 'body'>, limits: ArtifactLimits, totals: { files: number; bytes: number }): void {
  heldBy(put);
  if (put.declaredBytes !== undefined) {
    if (put.declaredBytes > limits.maxFileBytes) throw tooLarge(limits);
    runFits(totals, put.declaredBytes, limits);
  }
}

export async function storeArtifact(
  ctx: ServiceContext,
  stores: { artifacts: ArtifactStore; runs: RunStore },
  put: ArtifactPut,
): Promise<PutOutcome> {
  const { artifacts, runs } = stores;
  const { limits, uploadDir } = ctx.artifacts;
  const temp = join(uploadDir, `${randomUUID()}.part`);
  let blobId: string | undefined;
  let named = false;
  try {
    let received;
    try {
      received = await saveBounded(put.body, temp, limits.maxFileBytes);
    } catch (error) {
      if (error instanceof StreamTooLarge) throw tooLarge(limits);
      throw error;
    }
    const userId = put.node.user_id;
    const sameName = await artifacts.find(put.runId, put.name);
    if (sameName !== undefined && sameName.lease_id === put.leaseId) return settleRepeat(sameName, received.sha256, put.name);
    let stored = await artifacts.storedBlob(userId, received.sha256);
    if (stored === undefined) {
      // Before the bytes go into the database: a quota the upload cannot fit refuses it without writing them.
      await userFits(artifacts, userId, received.bytes, limits);
      blobId = await artifacts.newBlob(userId, received.sha256, received.bytes, ctx.clock.now());
      await writeBlobChunks(artifacts, blobId, temp, received.bytes);
    }
    // The user's uploads, the retention sweep and removals of blobs take turns (PostgreSQL; SQLite's transactions do):
    // the caps and the quota are counted and the artifact named under one lock.
    const outcome = await ctx.store.lockedTransaction([`artifacts:${userId}`], async () => {
      heldBy({ ...put, run: await runs.get(put.runId) });
      const again = await artifacts.find(put.runId, put.name);
      if (again !== undefined && again.lease_id === put.leaseId) return settleRepeat(again, received.sha256, put.name);
      // An earlier attempt's artifacts (its node was lost mid-upload) give way to this attempt's.
      const replaced = await artifacts.removeOtherAttempts(put.runId, put.leaseId);
      runFits(await artifacts.runTotals(put.runId, put.name), received.bytes, limits);
      // Stored meanwhile by another upload of the same bytes (or still stored): named, ours dropped below.
      stored = await artifacts.storedBlob(userId, received.sha256);
      let useBlob = stored?.blob_id;
      if (useBlob === undefined) {
        if (blobId === undefined || !(await artifacts.blobExists(blobId))) {
          throw new SvcError(
            'service_unavailable',
            'the stored bytes of this artifact were removed while it was uploaded; nothing was stored',
            { retryAfterSeconds: 1 },
          );
        }
        await userFits(artifacts, userId, received.bytes, limits);
        await artifacts.completeBlob(blobId);
        useBlob = blobId;
      }
      const row: ArtifactRow = {
        run_id: put.runId,
        name: put.name,
        user_id: userId,
        blob_id: useBlob,
        sha256: received.sha256,
        size_bytes: received.bytes,
        lease_id: put.leaseId,
        created_at: ctx.clock.now(),
      };
      await artifacts.insert(row);
      await artifacts.removeUnnamedBlobs(replaced);
      return { created: true, row };
    });
    named = outcome.row.blob_id === blobId;
    return outcome;
  } finally {
    await rm(temp, { force: true });
    // Written but not named (refused, or the same bytes were stored by another upload meanwhile): gone again.
    if (blobId !== undefined && !named) await ctx.store.transaction(() => artifacts.removeUnnamedBlobs([blobId!])).catch(() => undefined);
  }
}

/** The run is the node's user's (404 otherwise, as for any stranger's run), and this node holds it under this lease. */
function heldBy(put: Pick<ArtifactPut, 'node' | 'run' | 'runId' | 'leaseId'>): void {
  const { run, node } = put;
  if (run === undefined || run.user_id !== node.user_id) throw new SvcError('run_not_found', `no run ${put.runId} of this node's user`);
  if (run.status !== 'running' || run.node_id !== node.node_id || run.lease_id !== put.leaseId) {
    throw new SvcError(
      'lease_lost',
      `this node does not hold run ${put.runId} under that lease: its artifacts are taken only while it runs`,
      {
        extensions: { run_id: put.runId, run_status: run.status },
      },
    );
  }
}

/** The same name again under the same lease: the same bytes are a repeat (its answer was lost), others are refused. */
function settleRepeat(row: ArtifactRow, sha256: string, name: string): PutOutcome {
  if (row.sha256 === sha256) return { created: false, row };
  throw new SvcError('artifact_exists', `this run has an artifact ${name} already, with other bytes (sha256 ${row.sha256})`, {
    extensions: { name, sha256: row.sha256 },
  });
}

function runFits(totals: { files: number; bytes: number }, bytes: number, limits: ArtifactLimits): void {
  const over =
    totals.files + 1 > limits.maxRunFiles
      ? `this run has ${totals.files} artifacts, the most a run keeps`
      : totals.bytes + bytes > limits.maxRunBytes
        ? `this artifact's ${bytes} bytes would bring the run's artifacts to ${totals.bytes + bytes} bytes, over ${limits.maxRunBytes}`
        : undefined;
  if (over === undefined) return;
  throw new SvcError('run_artifacts_full', `${over}; nothing was stored`, {
    extensions: {
      run_files: totals.files,
      run_files_limit: limits.maxRunFiles,
      run_bytes: totals.bytes,
      run_bytes_limit: limits.maxRunBytes,
    },
  });
}

function tooLarge(limits: ArtifactLimits): SvcError {
  return new SvcError('artifact_too_large', `an artifact is at most ${limits.maxFileBytes} bytes; nothing was stored`, {
    extensions: { max_bytes: limits.maxFileBytes },
  });
}

/** A new blob of `bytes` fits in the user's quota (each digest counted once), or 413. */
async function userFits(artifacts: ArtifactStore, userId: string, bytes: number, limits: ArtifactLimits): Promise<void> {
  if (limits.maxUserBytes <= 0) return;
  const used = await artifacts.userBytes(userId);
  if (used + bytes <= limits.maxUserBytes) return;
  throw new SvcError(
    'artifact_quota_exceeded',
    `this artifact's ${bytes} bytes would bring your stored artifacts to ${used + bytes} bytes, over your quota of ${limits.maxUserBytes}; nothing was stored`,
    {
      extensions: { quota: { bytes_used: used, bytes_limit: limits.maxUserBytes } },
    },
  );
}
