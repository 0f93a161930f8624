// Removing uploaded versions (docs/api.md "Agent upload", "Quota and retention"), by their user or by the retention
// sweep: the version rows, then each bundle no version of anyone names any more. Never a version a run not yet
// finished is pinned to: a queued run, a running one, and one that will be retried all still need its bundle.
import { sql } from 'kysely';
import type { Store } from '../store/store.js';

export interface VersionKey {
  user_id: string;
  agent_id: string;
  version: string;
  digest: string;
}

/** Whether a run of `userId` not yet finished (queued, running, or about to be retried) executes `digest`. */
export async function unfinishedRunPinned(store: Store, userId: string, digest: string): Promise<boolean> {
  // Each status by the literal of its partial index (SQLite uses one only for the same literal, run-store.ts), so
  // neither look reads the user's whole history: queued runs by user (runs_queued); running runs, the few the
  // service holds at a time, by runs_leased, the user compared here (given a user, SQLite would pick runs_by_user).
  const queued = await store.db
    .selectFrom('runs')
    .select('run_id')
    .where('status', '=', sql.lit('queued' as const))
    .where('user_id', '=', userId)
    .where('bundle_digest', '=', digest)
    .limit(1)
    .executeTakeFirst();
  if (queued !== undefined) return true;
  const running = await store.db.selectFrom('runs').select('user_id').where('status', '=', sql.lit('running' as const)).where('bundle_digest', '=', digest).execute();
  return running.some((run) => run.user_id === userId);
}

/** Deletes the versions, then their bundles no version names any more; call inside a transaction. */
export async function removeVersions(store: Store, keys: readonly VersionKey[]): Promise<void> {
  for (const key of keys) {
    await store.db.deleteFrom('agent_versions').where('user_id', '=', key.user_id).where('agent_id', '=', key.agent_id).where('version', '=', key.version).execute();
  }
  for (const digest of new Set(keys.map((key) => key.digest))) {
    await store.db
      .deleteFrom('agent_bundles')
      .where('digest', '=', digest)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('agent_versions').select('digest').where('digest', '=', digest))))
      .execute();
  }
}
