// What one user may keep uploaded (docs/api.md "Agent upload", "Quota and retention"): bytes of bundles and a count
// of versions, across their agents. Checked in the upload's transaction, so a new version over it is refused (413
// upload_quota_exceeded) before anything is stored, and what is stored already is never touched to make room.
import { SvcError } from '../../contract/errors.js';
import type { Store } from '../store/store.js';

export interface UploadQuota {
  /** Bytes of the user's bundles (each digest once, as uploaded); 0: no limit. */
  maxBytes: number;
  /** The user's versions, all agents together; 0: no limit. */
  maxVersions: number;
}

/** 256 MiB: fifty bundles at the 5 MiB cap, thousands of the usual few kilobytes. */
export const DEFAULT_UPLOAD_QUOTA: UploadQuota = { maxBytes: 256 * 1024 * 1024, maxVersions: 500 };

export interface QuotaUsage {
  bytes: number;
  versions: number;
}

export async function quotaUsage(store: Store, userId: string): Promise<QuotaUsage> {
  const versions = await store.db.selectFrom('agent_versions').select((eb) => eb.fn.countAll<number | string>().as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow();
  const bytes = await store.db
    .selectFrom('agent_bundles')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string | null>('size_bytes'), eb.lit(0)).as('n'))
    .where('digest', 'in', (eb) => eb.selectFrom('agent_versions').select('digest').where('user_id', '=', userId))
    .executeTakeFirstOrThrow();
  return { bytes: Number(bytes.n), versions: Number(versions.n) };
}

/** 413 upload_quota_exceeded when one more version, of `sizeBytes` at `digest`, would not fit. */
export async function assertWithinQuota(store: Store, userId: string, digest: string, sizeBytes: number, quota: UploadQuota): Promise<void> {
  if (quota.maxBytes <= 0 && quota.maxVersions <= 0) return;
  const used = await quotaUsage(store, userId);
  // Bytes the user stores already (another agent's version of the same bundle) are not counted twice.
  const known = await store.db.selectFrom('agent_versions').select('digest').where('user_id', '=', userId).where('digest', '=', digest).executeTakeFirst();
  const after = { bytes: used.bytes + (known === undefined ? sizeBytes : 0), versions: used.versions + 1 };
  const over =
    quota.maxVersions > 0 && after.versions > quota.maxVersions
      ? `you have ${used.versions} versions stored, the most your quota holds`
      : quota.maxBytes > 0 && after.bytes > quota.maxBytes
        ? `this bundle's ${sizeBytes} bytes would bring your stored bundles to ${after.bytes} bytes, over your quota of ${quota.maxBytes}`
        : undefined;
  if (over === undefined) return;
  throw new SvcError('upload_quota_exceeded', `${over}; nothing was stored`, {
    extensions: { quota: { bytes_used: used.bytes, bytes_limit: quota.maxBytes, versions_used: used.versions, versions_limit: quota.maxVersions } },
  });
}
