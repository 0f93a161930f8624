// Artifacts expire (docs/api.md "Run artifacts"): RUN_DATA_RETENTION_DAYS after their run ended they are removed,
// and with them the blobs no artifact names any more; a blob an upload left half-written (the service stopped
// mid-upload) goes an hour later. Looked for with the run sweeps, done once an hour by the service's clock, a
// bounded batch of runs a round, each run's removal under its user's lock as the uploads take it.
import { repeatByServiceClock, type ServiceContext } from '../context.js';
import type { Store } from '../store/store.js';
import type { ArtifactStore } from './artifact-store.js';
import { createArtifactStore } from './artifact-store.js';

export const ARTIFACT_SWEEP_EVERY_MS = 3_600_000;
/** A blob still incomplete this long after it was begun was abandoned: no upload takes an hour to write its chunks. */
const ABANDONED_AFTER_MS = 3_600_000;
const BATCH = 100;

interface SweepLog {
  debug(details: object, message: string): void;
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

export function scheduleArtifactRetention(ctx: ServiceContext, log: SweepLog): void {
  const artifacts = createArtifactStore(ctx.store);
  const round = async (now: number): Promise<boolean> => {
    const removed = await removeExpiredArtifacts(ctx.store, artifacts, now, ctx.artifacts.limits.retentionMs);
    if (removed.runs > 0 || removed.blobs > 0) log.info({ runs: removed.runs, blobs: removed.blobs }, 'expired artifacts removed');
    return removed.full;
  };
  repeatByServiceClock(ctx, ARTIFACT_SWEEP_EVERY_MS, round, 'artifact retention sweep', log);
}

/** One round: `full` when a batch was full and more may be due. */
export async function removeExpiredArtifacts(
  store: Store,
  artifacts: ArtifactStore,
  now: number,
  retentionMs: number,
): Promise<{ runs: number; blobs: number; full: boolean }> {
  const expired = await artifacts.expiredRuns(now - retentionMs, BATCH);
  let blobs = 0;
  for (const run of expired) {
    blobs += await store.transaction(async () => {
      await store.lock(`artifacts:${run.user_id}`);
      return artifacts.removeUnnamedBlobs(await artifacts.removeRun(run.run_id));
    });
  }
  const abandoned = await artifacts.abandonedBlobs(now - ABANDONED_AFTER_MS, BATCH);
  if (abandoned.length > 0) blobs += await store.transaction(() => artifacts.removeUnnamedBlobs(abandoned));
  return { runs: expired.length, blobs, full: expired.length === BATCH || abandoned.length === BATCH };
}
