// A run's artifacts as its user reads them (docs/api.md "Run artifacts"): GET /v1/swarm/runs/{run_id}/artifacts and
// the download beside it, and the console's run page. Another user's run is the same 404 as none; from 30 days
// after the run ended the listing is empty and a download 404, before the sweep removes the rows.
import { SvcError } from '../../contract/errors.js';
import type { ArtifactView } from '../../contract/jobs.js';
import { isoTime } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import type { RunRow, RunStore } from '../runs/run-store.js';
import type { ArtifactRow, ArtifactStore } from './artifact-store.js';
import { artifactContentType } from './content-types.js';

export interface RunArtifacts {
  /** The user's run, or 404 run_not_found. */
  usersRun(runId: string, userId: string): Promise<RunRow>;
  /** When its artifacts expire: null while it has not ended. */
  expiryOf(run: RunRow): number | null;
  /** The artifacts still kept, by name. */
  listed(run: RunRow): Promise<ArtifactRow[]>;
  /** One kept artifact of the run, or 404 not_found naming why. */
  found(run: RunRow, name: string): Promise<ArtifactRow>;
  viewOf(row: ArtifactRow, run: RunRow): ArtifactView;
}

export function createRunArtifacts(ctx: ServiceContext, artifacts: ArtifactStore, runs: RunStore): RunArtifacts {
  const expiryOf = (run: RunRow): number | null => (run.finished_at === null ? null : run.finished_at + ctx.artifacts.limits.retentionMs);
  const expired = (run: RunRow): boolean => {
    const expiresAt = expiryOf(run);
    return expiresAt !== null && expiresAt <= ctx.clock.now();
  };
  return {
    expiryOf,

    async usersRun(runId, userId) {
      const run = await runs.get(runId);
      if (run === undefined || run.user_id !== userId) throw new SvcError('run_not_found', `no run ${runId} of yours`);
      return run;
    },

    async listed(run) {
      return expired(run) ? [] : artifacts.ofRun(run.run_id);
    },

    async found(run, name) {
      const row = expired(run) ? undefined : await artifacts.find(run.run_id, name);
      if (row !== undefined) return row;
      throw new SvcError(
        'not_found',
        `run ${run.run_id} has no artifact ${name}${expired(run) ? `: its artifacts expired at ${isoTime(expiryOf(run)!)}` : ''}`,
        {
          remedy: `List the run's artifacts: swarm-node artifacts ${run.run_id}`,
        },
      );
    },

    viewOf(row, run) {
      return {
        name: row.name,
        size_bytes: row.size_bytes,
        sha256: row.sha256,
        content_type: artifactContentType(row.name),
        created_at: isoTime(row.created_at),
        url: `${ctx.urls.publicUrl}/v1/swarm/runs/${encodeURIComponent(run.run_id)}/artifacts/${row.name}`,
      };
    },
  };
}
