// Uploaded versions nobody uses do not pile up (docs/api.md "Agent upload", "Quota and retention"): a version unused
// for `svc-api --version-retention` (default 90 days) since it was uploaded or last stopped being current is
// removed, its bundle with it once no version names it. Never the current version, the one uploaded before it (what
// `agent rollback` goes back to; the newest when none is current), nor one a run not yet finished is pinned to.
import { repeatByServiceClock, type ServiceContext } from '../context.js';
import type { Store } from '../store/store.js';
import { createAgentVersions, type AgentVersionRow } from './agent-versions.js';
import { removeVersions, unfinishedRunPinned, type VersionKey } from './version-removal.js';

/** GitHub's default retention of workflow artifacts: long enough that a version rolled back to is rarely gone. */
export const DEFAULT_VERSION_RETENTION_MS = 90 * 86_400_000;
/** How often versions past their time are looked for, by the service's clock. */
export const RETENTION_SWEEP_EVERY_MS = 3_600_000;
/** Users' agents looked at in one round; more wait for the next, which then comes at the next run sweep. */
const BATCH = 100;

interface SweepLog {
  debug(details: object, message: string): void;
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** `retentionMs` 0: versions are kept until their user removes them. */
export function scheduleVersionRetention(ctx: ServiceContext, retentionMs: number, log: SweepLog): void {
  if (retentionMs <= 0) return;
  const round = async (now: number): Promise<boolean> => {
    const { removed, full } = await removeUnused(ctx.store, now - retentionMs);
    for (const version of removed) {
      log.info({ agent_id: version.agent_id, version: version.version, digest: version.digest }, 'unused agent version removed: older than --version-retention');
    }
    log.debug({ removed: removed.length }, 'agent version retention round');
    return full;
  };
  repeatByServiceClock(ctx, RETENTION_SWEEP_EVERY_MS, round, 'agent version retention sweep', log);
}

/** Removes the versions unused since before `cutoff`; `full`: the batch was full, more may be due. */
export async function removeUnused(store: Store, cutoff: number): Promise<{ removed: VersionKey[]; full: boolean }> {
  // Candidates: user and agent pairs with a version past its time that is not current. The rules are applied again
  // to each pair under its lock, where an upload or a rollback cannot move things meanwhile.
  const pairs = await store.db
    .selectFrom('agent_versions as v')
    .select(['v.user_id', 'v.agent_id'])
    .distinct()
    .where((eb) => eb(eb.fn.coalesce('v.released_at', 'v.uploaded_at'), '<', cutoff))
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('agent_current as c').select('c.digest').whereRef('c.user_id', '=', 'v.user_id').whereRef('c.agent_id', '=', 'v.agent_id').whereRef('c.digest', '=', 'v.digest'))),
    )
    .limit(BATCH)
    .execute();
  const versions = createAgentVersions(store);
  const removed: VersionKey[] = [];
  for (const pair of pairs) {
    removed.push(
      ...(await store.transaction(async () => {
        await store.lock(`agent-version:${pair.user_id}:${pair.agent_id}`);
        const listed = await versions.list(pair.user_id, pair.agent_id);
        const current = await versions.current(pair.user_id, pair.agent_id);
        const kept = protectedDigests(listed, current?.digest);
        const due: VersionKey[] = [];
        for (const row of listed) {
          if (kept.has(row.digest) || (row.released_at ?? row.uploaded_at) >= cutoff) continue;
          if (await unfinishedRunPinned(store, row.user_id, row.digest)) continue;
          due.push({ user_id: row.user_id, agent_id: row.agent_id, version: row.version, digest: row.digest });
        }
        await removeVersions(store, due);
        return due;
      })),
    );
  }
  return { removed, full: pairs.length === BATCH };
}

/** The current version and the one uploaded before it (`listed` is newest first); with none current, the newest. */
function protectedDigests(listed: readonly AgentVersionRow[], current: string | undefined): Set<string> {
  if (current === undefined) return new Set(listed.slice(0, 1).map((row) => row.digest));
  const index = listed.findIndex((row) => row.digest === current);
  if (index === -1) return new Set([current]);
  return new Set(listed.slice(index, index + 2).map((row) => row.digest));
}
