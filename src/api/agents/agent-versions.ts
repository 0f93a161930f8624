// Each user's uploaded versions of the catalog agents (docs/api.md "Agent upload"): bundles stored once by digest,
// versions per user and agent, and the current one that new runs are pinned to. Every statement on those tables.
import type { AgentManifest } from '../../contract/agent-bundle.js';
import { SvcError } from '../../contract/errors.js';
import type { ReadBundle } from '../../lib/bundle-archive.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';

export interface AgentVersionRow {
  user_id: string;
  agent_id: string;
  version: string;
  digest: string;
  input_schema_json: string;
  files: number;
  unpacked_bytes: number;
  uploaded_at: number;
  size_bytes: number;
}

export type Uploaded = { created: boolean; row: AgentVersionRow };

export interface AgentVersions {
  /** Stores the bundle and its version, and makes it current; the same bytes again change nothing. */
  upload(userId: string, archive: Buffer, bundle: ReadBundle, now: number): Uploaded;
  /** Newest first. */
  list(userId: string, agentId: string): AgentVersionRow[];
  current(userId: string, agentId: string): AgentVersionRow | undefined;
  setCurrent(userId: string, agentId: string, digest: string, now: number): void;
  /** No upload current: new runs use the built-in agent again; the versions stay. */
  clearCurrent(userId: string, agentId: string): void;
  /** The archive, when `userId` has a version of it (a bundle is only ever served to its uploader's nodes). */
  archiveFor(userId: string, digest: string): Buffer | undefined;
}

const VERSION_COLUMNS = 'v.user_id, v.agent_id, v.version, v.digest, v.input_schema_json, v.files, v.unpacked_bytes, v.uploaded_at, b.size_bytes';

export function createAgentVersions(db: SqliteDatabase): AgentVersions {
  const byDigest = db.prepare(`SELECT ${VERSION_COLUMNS} FROM agent_versions v JOIN agent_bundles b USING (digest) WHERE v.user_id = ? AND v.agent_id = ? AND v.digest = ?`);
  const byVersion = db.prepare(`SELECT ${VERSION_COLUMNS} FROM agent_versions v JOIN agent_bundles b USING (digest) WHERE v.user_id = ? AND v.agent_id = ? AND v.version = ?`);
  const list = db.prepare(
    `SELECT ${VERSION_COLUMNS} FROM agent_versions v JOIN agent_bundles b USING (digest) WHERE v.user_id = ? AND v.agent_id = ? ORDER BY v.uploaded_at DESC, v.rowid DESC`,
  );
  const current = db.prepare(
    `SELECT ${VERSION_COLUMNS} FROM agent_current c JOIN agent_versions v ON v.user_id = c.user_id AND v.agent_id = c.agent_id AND v.digest = c.digest
     JOIN agent_bundles b ON b.digest = v.digest WHERE c.user_id = ? AND c.agent_id = ?`,
  );
  const insertBundle = db.prepare('INSERT OR IGNORE INTO agent_bundles (digest, content, size_bytes, created_at) VALUES (?, ?, ?, ?)');
  const insertVersion = db.prepare(
    `INSERT INTO agent_versions (user_id, agent_id, version, digest, input_schema_json, files, unpacked_bytes, uploaded_at)
     VALUES (@user_id, @agent_id, @version, @digest, @input_schema_json, @files, @unpacked_bytes, @uploaded_at)`,
  );
  const setCurrent = db.prepare(
    `INSERT INTO agent_current (user_id, agent_id, digest, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (user_id, agent_id) DO UPDATE SET digest = excluded.digest, updated_at = excluded.updated_at`,
  );
  const clearCurrent = db.prepare('DELETE FROM agent_current WHERE user_id = ? AND agent_id = ?');
  const archive = db.prepare('SELECT b.content FROM agent_bundles b WHERE b.digest = ? AND EXISTS (SELECT 1 FROM agent_versions v WHERE v.digest = b.digest AND v.user_id = ?)');

  const upload = db.transaction((userId: string, bytes: Buffer, bundle: ReadBundle, now: number): Uploaded => {
    const manifest: AgentManifest = bundle.manifest;
    const same = byDigest.get(userId, manifest.agent_id, bundle.digest) as AgentVersionRow | undefined;
    // The same bytes again (a retried upload, a second run of a script): the version it already is, nothing moves.
    if (same !== undefined) return { created: false, row: same };
    const taken = byVersion.get(userId, manifest.agent_id, manifest.version) as AgentVersionRow | undefined;
    if (taken !== undefined) {
      throw new SvcError('version_exists', `you uploaded ${manifest.agent_id} version ${manifest.version} already, with other contents (digest ${taken.digest})`, {
        extensions: { agent_id: manifest.agent_id, version: manifest.version, digest: taken.digest },
      });
    }
    insertBundle.run(bundle.digest, bytes, bytes.length, now);
    insertVersion.run({
      user_id: userId,
      agent_id: manifest.agent_id,
      version: manifest.version,
      digest: bundle.digest,
      input_schema_json: JSON.stringify(manifest.input_schema),
      files: bundle.files.size,
      unpacked_bytes: bundle.unpackedBytes,
      uploaded_at: now,
    });
    setCurrent.run(userId, manifest.agent_id, bundle.digest, now);
    return { created: true, row: byDigest.get(userId, manifest.agent_id, bundle.digest) as AgentVersionRow };
  }).immediate;

  return {
    upload,
    list: (userId, agentId) => list.all(userId, agentId) as AgentVersionRow[],
    current: (userId, agentId) => current.get(userId, agentId) as AgentVersionRow | undefined,
    setCurrent: (userId, agentId, digest, now) => void setCurrent.run(userId, agentId, digest, now),
    clearCurrent: (userId, agentId) => void clearCurrent.run(userId, agentId),
    archiveFor: (userId, digest) => (archive.get(digest, userId) as { content: Buffer } | undefined)?.content,
  };
}
