// Each user's uploaded versions of the catalog agents (docs/api.md "Agent upload"): bundles stored once by digest,
// versions per user and agent, and the current one that new runs are pinned to. Every statement on those tables.
import { runTermsOf, type AgentManifest } from '../../contract/agent-bundle.js';
import { SvcError } from '../../contract/errors.js';
import type { ReadBundle } from '../../lib/bundle-archive.js';
import { sql } from 'kysely';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';
import { assertWithinQuota, type UploadQuota } from './upload-quota.js';
import { removeVersions, unfinishedRunPinned } from './version-removal.js';

/** A version as listed: its row (store/tables.ts) and its bundle's size. */
export type AgentVersionRow = Tables['agent_versions'] & { size_bytes: number };

export type Uploaded = { created: boolean; row: AgentVersionRow };

export interface AgentVersions {
  /**
   * Stores the bundle and its version, and makes it current; the same bytes again change nothing. A new version
   * over the user's quota is refused (413 upload_quota_exceeded) and nothing is stored.
   */
  upload(userId: string, archive: Buffer, bundle: ReadBundle, now: number, quota?: UploadQuota): Promise<Uploaded>;
  /** Newest first. */
  list(userId: string, agentId: string): Promise<AgentVersionRow[]>;
  current(userId: string, agentId: string): Promise<AgentVersionRow | undefined>;
  /** The input_schema (JSON) of the user's version with this digest; undefined when they have none (any more). */
  schemaOf(userId: string, digest: string): Promise<string | undefined>;
  setCurrent(userId: string, agentId: string, digest: string, now: number): Promise<void>;
  /** No upload current: new runs use the built-in agent again; the versions stay. */
  clearCurrent(userId: string, agentId: string, now: number): Promise<void>;
  /** The archive, when `userId` has a version of it (a bundle is only ever served to its uploader's nodes). */
  archiveFor(userId: string, digest: string): Promise<Buffer | undefined>;
  /** Whether a run the node was handed (leased to it, in any state) executes this bundle: a node fetches only those. */
  handedTo(nodeId: string, digest: string): Promise<boolean>;
  /**
   * Removes one version (its bundle too, once no version of anyone names it). 404 for a version the user does not
   * have; 409 version_in_use for the current one, or one a run not yet finished is pinned to.
   */
  remove(userId: string, agentId: string, version: string): Promise<void>;
}

const VERSION_COLUMNS = ['v.user_id', 'v.agent_id', 'v.version', 'v.digest', 'v.input_schema_json', 'v.files', 'v.unpacked_bytes', 'v.uploaded_at', 'v.released_at', 'v.run_terms_json', 'b.size_bytes'] as const;

export function createAgentVersions(store: Store): AgentVersions {
  // Every execute pins the current version: compiled once (compiled-once.ts).
  const currentVersion = compiledOnce((db, of: { userId: string; agentId: string }) =>
    db
      .selectFrom('agent_current as c')
      .innerJoin('agent_versions as v', (join) => join.onRef('v.user_id', '=', 'c.user_id').onRef('v.agent_id', '=', 'c.agent_id').onRef('v.digest', '=', 'c.digest'))
      .innerJoin('agent_bundles as b', 'b.digest', 'v.digest')
      .select(VERSION_COLUMNS)
      .where('c.user_id', '=', of.userId)
      .where('c.agent_id', '=', of.agentId),
  );
  const versions = (userId: string, agentId: string) =>
    store.db
      .selectFrom('agent_versions as v')
      .innerJoin('agent_bundles as b', 'b.digest', 'v.digest')
      .select(VERSION_COLUMNS)
      .where('v.user_id', '=', userId)
      .where('v.agent_id', '=', agentId);
  /** Marks the version current now as released (its unused time starts) when another takes its place. */
  const releaseCurrent = async (userId: string, agentId: string, next: string | undefined, now: number): Promise<void> => {
    const was = await store.db.selectFrom('agent_current').select('digest').where('user_id', '=', userId).where('agent_id', '=', agentId).executeTakeFirst();
    if (was === undefined || was.digest === next) return;
    await store.db.updateTable('agent_versions').set({ released_at: now }).where('user_id', '=', userId).where('agent_id', '=', agentId).where('digest', '=', was.digest).execute();
  };
  const setCurrent = (userId: string, agentId: string, digest: string, now: number): Promise<void> =>
    store.transaction(async () => {
      // The retention sweep removes versions under the same lock: the version is still there when it becomes current.
      await store.lock(`agent-version:${userId}:${agentId}`);
      const exists = await store.db.selectFrom('agent_versions').select('version').where('user_id', '=', userId).where('agent_id', '=', agentId).where('digest', '=', digest).executeTakeFirst();
      if (exists === undefined) throw new SvcError('not_found', `you have no version ${digest} of ${agentId}`, { remedy: `List yours: swarm-node agent versions ${agentId}.` });
      await releaseCurrent(userId, agentId, digest, now);
      await store.db
        .insertInto('agent_current')
        .values({ user_id: userId, agent_id: agentId, digest, updated_at: now })
        .onConflict((conflict) =>
          conflict.columns(['user_id', 'agent_id']).doUpdateSet((eb) => ({ digest: eb.ref('excluded.digest'), updated_at: eb.ref('excluded.updated_at') })),
        )
        .execute();
    });

  const upload = (userId: string, bytes: Buffer, bundle: ReadBundle, now: number, quota?: UploadQuota): Promise<Uploaded> =>
    // The quota is the user's across agents: two uploads of two agents at once must not both fit in the last room.
    // Two uploads of one agent at once on two instances: the second waits for the first, then sees its version.
    store.lockedTransaction([`agent-quota:${userId}`, `agent-version:${userId}:${bundle.manifest.agent_id}`], async () => {
      const manifest: AgentManifest = bundle.manifest;
      const same = await versions(userId, manifest.agent_id).where('v.digest', '=', bundle.digest).executeTakeFirst();
      // The same bytes again (a retried upload, a second run of a script): the version it already is, nothing moves.
      if (same !== undefined) return { created: false, row: same };
      const taken = await versions(userId, manifest.agent_id).where('v.version', '=', manifest.version).executeTakeFirst();
      if (taken !== undefined) {
        throw new SvcError('version_exists', `you uploaded ${manifest.agent_id} version ${manifest.version} already, with other contents (digest ${taken.digest})`, {
          extensions: { agent_id: manifest.agent_id, version: manifest.version, digest: taken.digest },
        });
      }
      if (quota !== undefined) await assertWithinQuota(store, userId, bundle.digest, bytes.length, quota);
      await store.db
        .insertInto('agent_bundles')
        .values({ digest: bundle.digest, content: bytes, size_bytes: bytes.length, created_at: now })
        .onConflict((conflict) => conflict.column('digest').doNothing())
        .execute();
      await store.db
        .insertInto('agent_versions')
        .values({
          user_id: userId,
          agent_id: manifest.agent_id,
          version: manifest.version,
          digest: bundle.digest,
          input_schema_json: JSON.stringify(manifest.input_schema),
          files: bundle.files.size,
          unpacked_bytes: bundle.unpackedBytes,
          uploaded_at: now,
          run_terms_json: JSON.stringify(runTermsOf(manifest)),
        })
        .execute();
      await setCurrent(userId, manifest.agent_id, bundle.digest, now);
      return { created: true, row: (await versions(userId, manifest.agent_id).where('v.digest', '=', bundle.digest).executeTakeFirst())! };
    });

  return {
    upload,
    list: (userId, agentId) =>
      versions(userId, agentId)
        .orderBy('v.uploaded_at', 'desc')
        // Uploads in the same millisecond: the later first (SQLite's rowid is the insertion order; PostgreSQL has
        // no rowid, and there the version label breaks the tie).
        .$if(store.engine === 'sqlite', (query) => query.orderBy(sql`v.rowid`, 'desc'))
        .$if(store.engine !== 'sqlite', (query) => query.orderBy('v.version', 'desc'))
        .execute(),
    current: async (userId, agentId) => (await currentVersion(store.db, { userId, agentId })).rows[0],
    schemaOf: async (userId, digest) =>
      (await store.db.selectFrom('agent_versions').select('input_schema_json').where('user_id', '=', userId).where('digest', '=', digest).executeTakeFirst())?.input_schema_json,
    setCurrent,
    clearCurrent: (userId, agentId, now) =>
      store.transaction(async () => {
        await store.lock(`agent-version:${userId}:${agentId}`);
        await releaseCurrent(userId, agentId, undefined, now);
        await store.db.deleteFrom('agent_current').where('user_id', '=', userId).where('agent_id', '=', agentId).execute();
      }),
    remove: (userId, agentId, version) =>
      store.transaction(async () => {
        await store.lock(`agent-version:${userId}:${agentId}`);
        const row = await versions(userId, agentId).where('v.version', '=', version).executeTakeFirst();
        if (row === undefined) throw new SvcError('not_found', `you have no version ${version} of ${agentId}`, { remedy: `List yours: swarm-node agent versions ${agentId}.` });
        const current = await store.db.selectFrom('agent_current').select('digest').where('user_id', '=', userId).where('agent_id', '=', agentId).executeTakeFirst();
        const inUse =
          current?.digest === row.digest
            ? 'it is current: new runs execute it'
            : (await unfinishedRunPinned(store, userId, row.digest))
              ? 'a run not finished yet is pinned to it'
              : undefined;
        if (inUse !== undefined) {
          throw new SvcError('version_in_use', `${agentId} version ${version} cannot be removed: ${inUse}`, {
            remedy: `Make another version current first (swarm-node agent rollback ${agentId}), or wait for the runs pinned to it to finish, then remove it.`,
            extensions: { agent_id: agentId, version, digest: row.digest },
          });
        }
        await removeVersions(store, [{ user_id: userId, agent_id: agentId, version, digest: row.digest }]);
      }),
    async archiveFor(userId, digest) {
      const row = await store.db
        .selectFrom('agent_bundles as b')
        .select('b.content')
        .where('b.digest', '=', digest)
        .where((eb) => eb.exists(eb.selectFrom('agent_versions as v').select(eb.lit(1).as('one')).whereRef('v.digest', '=', 'b.digest').where('v.user_id', '=', userId)))
        .executeTakeFirst();
      return row?.content;
    },
    async handedTo(nodeId, digest) {
      const row = await store.db.selectFrom('runs').select('run_id').where('node_id', '=', nodeId).where('bundle_digest', '=', digest).limit(1).executeTakeFirst();
      return row !== undefined;
    },
  };
}
