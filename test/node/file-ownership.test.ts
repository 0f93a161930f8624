// An installed node's files belong to the service user; root running the CLI must not take them over.
import { afterAll, describe, expect, it } from 'vitest';
import { chownSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeCredentials } from '../../src/node/identity/credentials.js';
import { NODE_MIGRATIONS, openNodeStore } from '../../src/node/store/database.js';
import { openDatabase } from '../../src/lib/sqlite.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

const SERVICE_UID = 65534;
const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)('files written by root in a service user home', () => {
  afterAll(removeTempDirs);

  it('a rewritten credentials file keeps the service user as owner, mode 0600', () => {
    const etc = tempDir();
    const path = join(etc, 'credentials.json');
    writeFileSync(path, '{}\n', { mode: 0o600 });
    chownSync(path, SERVICE_UID, SERVICE_UID);
    writeCredentials(path, { node: { node_id: 'n1', user_id: 'a@example.com', tier_id: 'svc_starter_agents', enrolled_at: 'x' } });
    const stat = statSync(path);
    expect([stat.uid, stat.gid, stat.mode & 0o777]).toEqual([SERVICE_UID, SERVICE_UID, 0o600]);
  });

  it('a database root creates in the service user var/ is given to that user', () => {
    const varDir = tempDir();
    chownSync(varDir, SERVICE_UID, SERVICE_UID);
    const db = openNodeStore(join(varDir, 'swarm-node.db'));
    db.close();
    expect(statSync(join(varDir, 'swarm-node.db')).uid).toBe(SERVICE_UID);
  });
});

describe('node store migrations', () => {
  afterAll(removeTempDirs);

  it('snapshot the database with its rows before migrating an older schema', () => {
    expect(NODE_MIGRATIONS.length, 'needs a second migration to migrate to').toBeGreaterThan(1);
    const varDir = tempDir();
    const path = join(varDir, 'swarm-node.db');
    const old = openDatabase(path, { migrations: NODE_MIGRATIONS.slice(0, 1) });
    old
      .prepare('INSERT INTO registrations (agent_id, every_seconds, daily_cap_cents, created_at, updated_at) VALUES (?, NULL, NULL, 1, 1)')
      .run('agent_ops_monitor_004');
    old.close();
    openNodeStore(path).close();
    const backups = readdirSync(join(varDir, 'backups'));
    expect(backups).toHaveLength(1);
    expect(backups[0]).toMatch(/^swarm-node\.db\.schema-v1\./);
    const snapshot = openDatabase(join(varDir, 'backups', backups[0]!), { migrations: NODE_MIGRATIONS.slice(0, 1) });
    expect(snapshot.prepare('SELECT agent_id FROM registrations').all()).toEqual([{ agent_id: 'agent_ops_monitor_004' }]);
    expect(statSync(join(varDir, 'backups', backups[0]!)).mode & 0o777).toBe(0o600);
    snapshot.close();
  });

  it('a fresh database takes no snapshot', () => {
    const varDir = tempDir();
    mkdirSync(varDir, { recursive: true });
    openNodeStore(join(varDir, 'swarm-node.db')).close();
    expect(() => readdirSync(join(varDir, 'backups'))).toThrow();
  });
});
