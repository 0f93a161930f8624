// Group commit on SQLite (src/api/store/group-commit.ts): the transactions of one event-loop turn share one
// database transaction and one commit, each atomic under its own savepoint. Checked on the real store and file,
// with a second connection as the outside reader.
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openSqliteStore, type SqliteStore } from '../../src/api/store/open-sqlite.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

describe('group commit on SQLite', () => {
  let store: SqliteStore;
  let outside: Database.Database;
  beforeEach(async () => {
    const path = join(tempDir('group-commit-'), 'svc-api.db');
    store = await openSqliteStore(path);
    outside = new Database(path, { readonly: true });
  });
  afterEach(async () => {
    outside.close();
    await store.close();
    removeTempDirs();
  });

  const committed = (): string[] =>
    (outside.prepare('SELECT event_id FROM webhook_events ORDER BY event_id').all() as { event_id: string }[]).map((row) => row.event_id);
  const record = (eventId: string) =>
    store.db.insertInto('webhook_events').values({ event_id: eventId, type: 'test', received_at: 0 }).execute();

  it('runs the transactions of one turn in one commit: each sees the ones before it, nobody outside sees any until all are done', async () => {
    const seen: { inside: number; outside: number }[] = [];
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        store.transaction(async () => {
          await record(`e${index}`);
          const inside = await store.db
            .selectFrom('webhook_events')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow();
          seen.push({ inside: Number(inside.n), outside: committed().length });
          return index;
        }),
      ),
    );
    expect(results).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Ten transactions one after another in one batch: the tenth sees all ten, the outside none before the commit.
    expect(seen.map((each) => each.inside)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(seen.every((each) => each.outside === 0)).toBe(true);
    expect(committed()).toHaveLength(10);
  });

  it('rolls back a failing transaction alone; the others of its batch commit, and a nested call joins its caller', async () => {
    const outcomes = await Promise.allSettled(
      ['a', 'b', 'c'].map((name) =>
        store.transaction(async () => {
          await record(name);
          await store.transaction(() => record(`${name}-nested`));
          if (name === 'b') throw new Error('b refuses');
        }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(committed()).toEqual(['a', 'a-nested', 'c', 'c-nested']);
    // A constraint broken by the SQL itself (a duplicate key) is the same: that transaction alone is undone.
    const again = await Promise.allSettled([store.transaction(() => record('a')), store.transaction(() => record('d'))]);
    expect(again.map((outcome) => outcome.status)).toEqual(['rejected', 'fulfilled']);
    expect(committed()).toEqual(['a', 'a-nested', 'c', 'c-nested', 'd']);
  });
});
