// Wake-ups between instances (src/api/store/postgres-notifications.ts): what one instance publishes reaches every
// other through LISTEN/NOTIFY on the real server, never itself, and a listener whose connection the server ends
// (a restart, an administrator) listens again by itself.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunEvents } from '../../src/api/runs/run-events.js';
import { createPostgresNotifications, type Notifications } from '../../src/api/store/postgres-notifications.js';
import { waitFor } from '../helpers/funnel.js';
import { postgresDatabaseFor } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

describe('notifications between instances on one PostgreSQL database', () => {
  let pools: pg.Pool[];
  let a: Notifications;
  let b: Notifications;
  const heardByA: string[] = [];
  const heardByB: string[] = [];
  const errors: Error[] = [];

  beforeAll(async () => {
    const url = await postgresDatabaseFor(tempDir('svc-pg-notify-'));
    pools = [new pg.Pool({ connectionString: url }), new pg.Pool({ connectionString: url })];
    a = createPostgresNotifications(url, pools[0]!, (error) => errors.push(error));
    b = createPostgresNotifications(url, pools[1]!, (error) => errors.push(error));
    await a.listen((topic) => heardByA.push(topic));
    await b.listen((topic) => heardByB.push(topic));
    // Each sends only once it knows the other listens (at its next look, every second): until both do, one topic
    // each, again and again (the tests leave those out of what they compare).
    await waitFor(async () => {
      a.publish('ready:a');
      b.publish('ready:b');
      return heardByB.includes('ready:a') && heardByA.includes('ready:b') ? true : undefined;
    }, 'both instances listening to each other');
  });
  /** What an instance heard, without the topics of the start. */
  const topicsOf = (heard: string[]): string[] => heard.filter((topic) => !topic.startsWith('ready:'));
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all((pools ?? []).map((pool) => pool.end()));
    removeTempDirs();
  });

  it('tells the other instance, never the one that published', async () => {
    a.publish('user:ada@example.com');
    b.publish('run:7d0e6c5e-0b1f-4c4a-9f0e-3f1a2b3c4d5e');
    await waitFor(async () => (topicsOf(heardByB).length > 0 && topicsOf(heardByA).length > 0 ? true : undefined), 'both notifications');
    expect(topicsOf(heardByB)).toEqual(['user:ada@example.com']);
    expect(topicsOf(heardByA)).toEqual(['run:7d0e6c5e-0b1f-4c4a-9f0e-3f1a2b3c4d5e']);
  });

  it('sends the topics of one turn of the event loop together, as few notifications as fit, and the other hears each', async () => {
    const raw = new pg.Client({ connectionString: (pools[0]!.options as { connectionString: string }).connectionString });
    await raw.connect();
    const payloads: string[] = [];
    raw.on('notification', (message) => payloads.push(message.payload ?? ''));
    await raw.query('LISTEN svc_run_events');
    try {
      heardByB.length = 0;
      // 300 topics of some 45 bytes: 13.5 KB, more than one notification carries (PostgreSQL's limit is 8000 bytes).
      const topics = Array.from({ length: 300 }, (_, index) => `run:${String(index).padStart(4, '0')}0e6c5e-0b1f-4c4a-9f0e-3f1a2b3c`);
      for (const topic of topics) a.publish(topic);
      await waitFor(async () => (topicsOf(heardByB).length >= topics.length ? true : undefined), 'all 300 topics');
      expect(topicsOf(heardByB)).toEqual(topics);
      const sent = payloads.filter((payload) => !/^\S+ ready:[ab]$/.test(payload));
      expect(sent).toHaveLength(2);
      for (const payload of sent) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
    } finally {
      await raw.end();
    }
  });

  it('listens again after the server ends its connection', async () => {
    heardByB.length = 0;
    // Every listening backend of this database is ended, as a restart would: both instances lose theirs.
    const ended = await pools[0]!.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN svc_run_events'`,
    );
    expect(ended.rowCount).toBe(2);
    // Published until one arrives: notifications sent while B reconnects are lost, as documented; B hears again.
    await waitFor(
      async () => {
        a.publish('user:after-restart@example.com');
        return heardByB.includes('user:after-restart@example.com') ? true : undefined;
      },
      'B listening again',
      20_000,
    );
    expect(errors.length).toBeGreaterThan(0);
  });

  it("a run finished on one instance hands the other's waiting execute its final answer, which it then need not read", async () => {
    const never = 10 * 60_000;
    const [onA, onB] = [createRunEvents(never, a), createRunEvents(never, b)];
    const reads: string[] = [];
    const answer = JSON.stringify({ run_id: 'r-answered', status: 'succeeded', output: { text: 'two words' } });
    const waited = onB.waitFor(
      { run: 'r-answered' },
      async (wake) => wake.hint ?? (reads.push(wake.reason), undefined),
      never,
      new AbortController().signal,
    );
    onA.finished('r-answered', answer);
    expect(await waited).toBe(answer);
    expect(reads).toEqual(['first']);
  });

  it('an instance alone on its database sends nothing, and tells one that starts listening', async () => {
    const url = await postgresDatabaseFor(tempDir('svc-pg-notify-alone-'));
    const pool = new pg.Pool({ connectionString: url });
    const raw = new pg.Client({ connectionString: url });
    await raw.connect();
    const payloads: string[] = [];
    raw.on('notification', (message) => payloads.push(message.payload ?? ''));
    // A listener that is no instance (an operator's psql): it does not make the instance send.
    await raw.query('LISTEN svc_run_events');
    const alone = createPostgresNotifications(url, pool, (error) => errors.push(error));
    let other: Notifications | undefined;
    try {
      await alone.listen(() => undefined);
      alone.publish('run:sent-to-nobody');
      const heard: string[] = [];
      other = createPostgresNotifications(url, pool, (error) => errors.push(error));
      await other.listen((topic) => heard.push(topic));
      // Published until one arrives: the lone instance learns of the other at its next look (every second).
      await waitFor(
        async () => {
          alone.publish('run:sent-to-the-other');
          return heard.includes('run:sent-to-the-other') ? true : undefined;
        },
        'the other instance told',
        20_000,
      );
      // Notifications arrive in the order they were committed: one sent before would have come first.
      await waitFor(
        async () => (payloads.some((payload) => payload.endsWith('run:sent-to-the-other')) ? true : undefined),
        'the raw listener told',
      );
      expect(payloads.some((payload) => payload.includes('run:sent-to-nobody'))).toBe(false);
    } finally {
      await Promise.all([alone.close(), other?.close()]);
      await raw.end();
      await pool.end();
    }
  });
});
