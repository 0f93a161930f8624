// Queries compiled once (src/api/store/compiled-once.ts), on the real store of the test engine (SQLite's file, or a
// PostgreSQL database of its own): each call binds its own values, answers what the same query built at the call
// answers, inside a transaction runs on it, and a query that does not bind its values is refused at its first run.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compiledOnce } from '../../src/api/store/compiled-once.js';
import { openStore } from '../../src/api/store/open-store.js';
import type { Store } from '../../src/api/store/store.js';
import { postgresDatabaseFor, testEngine } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

describe(`queries compiled once (${testEngine()})`, () => {
  let store: Store;
  beforeEach(async () => {
    const dataDir = tempDir('compiled-once-');
    const databaseUrl = testEngine() === 'postgres' ? await postgresDatabaseFor(dataDir) : undefined;
    ({ store } = await openStore({ dataDir, databaseUrl }));
    for (const [eventId, type] of [
      ['e1', 'a'],
      ['e2', 'b'],
      ['e3', 'b'],
    ]) {
      await store.db.insertInto('webhook_events').values({ event_id: eventId!, type: type!, received_at: 0 }).execute();
    }
  });
  afterEach(async () => {
    await store.close();
    removeTempDirs();
  });

  it('builds once, and binds each call its own values, as the query built at the call would', async () => {
    let builds = 0;
    const ofType = compiledOnce((db, at: { type: string; limit: number }) => {
      builds += 1;
      return db.selectFrom('webhook_events').select('event_id').where('type', '=', at.type).orderBy('event_id').limit(at.limit);
    });
    const built = (type: string, limit: number) =>
      store.db.selectFrom('webhook_events').select('event_id').where('type', '=', type).orderBy('event_id').limit(limit).execute();
    for (const [type, limit] of [
      ['b', 10],
      ['a', 10],
      ['b', 1],
      ['none', 10],
    ] as const) {
      expect((await ofType(store.db, { type, limit })).rows).toEqual(await built(type, limit));
    }
    expect((await ofType(store.db, { type: 'b', limit: 10 })).rows).toEqual([{ event_id: 'e2' }, { event_id: 'e3' }]);
    expect(builds).toBe(1);
  });

  it('writes inside the transaction it is given: rolled back with it', async () => {
    const retype = compiledOnce((db, to: { eventId: string; type: string }) =>
      db.updateTable('webhook_events').set({ type: to.type }).where('event_id', '=', to.eventId),
    );
    await expect(
      store.transaction(async () => {
        expect((await retype(store.db, { eventId: 'e1', type: 'changed' })).numAffectedRows).toBe(1n);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await store.db.selectFrom('webhook_events').select('type').where('event_id', '=', 'e1').executeTakeFirstOrThrow()).toEqual({
      type: 'a',
    });
    expect((await retype(store.db, { eventId: 'e1', type: 'changed' })).numAffectedRows).toBe(1n);
    expect((await retype(store.db, { eventId: 'nothing', type: 'changed' })).numAffectedRows).toBe(0n);
  });

  it('refuses a value that is looked at rather than bound, and a call without a value', async () => {
    // The order would be the first call's for every call: refused when built.
    const ordered = compiledOnce((db, at: { newest: boolean }) =>
      db
        .selectFrom('webhook_events')
        .select('event_id')
        .orderBy('event_id', at.newest ? 'desc' : 'asc'),
    );
    await expect(ordered(store.db, { newest: false })).rejects.toThrow(/newest not bound as a parameter/);
    const ofType = compiledOnce((db, at: { type: string }) =>
      db.selectFrom('webhook_events').select('event_id').where('type', '=', at.type),
    );
    await expect(ofType(store.db, {} as { type: string })).rejects.toThrow(/no value for "type"/);
  });
});
