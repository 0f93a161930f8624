// Schedules at the service (docs/api.md "Schedules"): made, shown, changed, paused, resumed and removed over HTTP with
// strict validation and the recent sign-in where the money is; fired by the scheduler inside svc-api by the service's
// clock, which the tests move instead of waiting: the 2027 changeover days in Europe/Berlin, catch-up 0 and 3600 s
// over an hour the service did not see, an empty wallet pausing once with nothing charged, a daily cap that the
// runs still queued count against, and one run per occurrence however often it is fired.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
import { MovableClock } from '../helpers/clock.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/wait.js';
import { mailTo } from '../helpers/mailbox.js';
import { consoleCookie, consoleGet } from '../helpers/console.js';
import { enrollNode, serve } from '../helpers/protocol-node.js';
import { credit, paidUser, paidUserWithNode, stopNodes, TEST_RUN_TIMING, type PaidUser } from './execute-fixtures.js';
import { mintToken } from '../helpers/tokens.js';
import { createScheduler } from '../../src/api/schedules/scheduler.js';

const MONITOR = 'agent_ops_monitor_004';
const PRICE = 4;
const INPUT = { thresholds: { disk_warning_percent: 70 } };
const MINUTE = 60_000;
const SIXTEEN_MINUTES = 16 * MINUTE;

describe('schedules', () => {
  const clock = new MovableClock();
  // Runs wait an hour in the queue: the clock moves by minutes while a node is away.
  const service = useSvcApi({ clock, runTiming: { ...TEST_RUN_TIMING, queueTimeoutMs: 3_600_000 } });
  afterAll(stopNodes);
  /** Moves the service's clock to `ms`. */
  const setTime = (ms: number) => clock.advance(ms - clock.now());
  beforeAll(() => setTime(Date.parse('2027-03-20T12:00:00Z')));

  const call = (path: string, token: string, init: { method?: string; body?: unknown } = {}) =>
    httpRequest(`${service.baseUrl}${path}`, { ...init, token });
  const create = (user: PaidUser, body: Record<string, unknown>) =>
    call('/v1/swarm/schedules', user.token, { method: 'POST', body: { agent_id: MONITOR, ...body } });
  const staleToken = async (email: string): Promise<string> => {
    clock.advance(-SIXTEEN_MINUTES);
    try {
      return (await mintToken(service, email)).token;
    } finally {
      clock.advance(SIXTEEN_MINUTES);
    }
  };
  const occurrencesOf = (scheduleId: string) =>
    service.db
      .prepare('SELECT fire_at, state, run_id FROM schedule_occurrences WHERE schedule_id = ? ORDER BY fire_at')
      .all(scheduleId) as Array<{
      fire_at: number;
      state: string;
      run_id: string | null;
    }>;
  const skipsOf = (scheduleId: string) =>
    service.db
      .prepare('SELECT reason, count, first_at, last_at FROM schedule_skips WHERE schedule_id = ? ORDER BY skip_id')
      .all(scheduleId) as Array<{
      reason: string;
      count: number;
      first_at: number;
      last_at: number;
    }>;
  /** An endpoint taking every event; nothing receives its deliveries, which the outbox keeps all the same. */
  const hook = async (user: PaidUser): Promise<string> => {
    const made = await call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'https://hooks.example.com/schedules' } });
    expect(made.status, made.text).toBe(201);
    return made.body.endpoint_id as string;
  };
  const scheduleEventsOf = (email: string) =>
    (
      service.db
        .prepare(
          'SELECT event_type, schedule_id, payload_json FROM webhook_deliveries WHERE user_id = ? AND schedule_id IS NOT NULL ORDER BY event_id',
        )
        .all(email) as Array<{ event_type: string; schedule_id: string; payload_json: string }>
    ).map((row) => {
      const payload = JSON.parse(row.payload_json) as {
        type: string;
        data: { schedule: { pause_reason: string | null }; skip: { reason: string } | null };
      };
      expect(payload.type).toBe(row.event_type);
      return [row.event_type, row.schedule_id, payload.data.schedule.pause_reason ?? payload.data.skip?.reason ?? null];
    });
  const runsOf = (email: string) =>
    service.db.prepare('SELECT run_id, status, charged_cents FROM runs WHERE user_id = ? ORDER BY run_id').all(email) as Array<{
      run_id: string;
      status: string;
      charged_cents: number;
    }>;

  it('refuses what is not a schedule with 400 and a typed code, and makes none', async () => {
    const user = await paidUser(service, 100);
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ cron: '* * * * * *' }, 'invalid_schedule'],
      [{ cron: '61 * * * *' }, 'invalid_schedule'],
      [{ cron: '@fortnightly' }, 'invalid_schedule'],
      [{}, 'invalid_schedule'],
      [{ cron: '@hourly', interval_seconds: 3600 }, 'invalid_schedule'],
      [{ interval_seconds: 59 }, 'invalid_request'],
      [{ cron: '@hourly', time_zone: 'Mars/Olympus_Mons' }, 'invalid_schedule'],
      [{ cron: '@hourly', overlap: 'buffer_all' }, 'invalid_request'],
      [{ cron: '@hourly', catch_up_seconds: -1 }, 'invalid_request'],
      [{ cron: '@hourly', daily_cap_cents: 1.5 }, 'invalid_request'],
      [{ cron: '@hourly', pause_after_failures: 0 }, 'invalid_request'],
      [{ cron: '@hourly', node_id: '00000000-0000-4000-8000-000000000000' }, 'invalid_schedule'],
      [{ cron: '@hourly', surprise: true }, 'invalid_request'],
    ];
    for (const [body, code] of refusals) {
      const refused = await create(user, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(refused.body.code, JSON.stringify(body)).toBe(code);
    }
    expect((await create(user, { cron: '@hourly', agent_id: 'agent_none_000' })).body.code).toBe('agent_not_found');
    // The input is checked against the agent's input_schema now, not at each occurrence.
    const badInput = await create(user, { cron: '@hourly', input: { target: 'db' } });
    expect([badInput.status, badInput.body.code]).toEqual([422, 'input_invalid']);
    expect((await call('/v1/swarm/schedules', user.token)).body.schedules).toEqual([]);
  });

  it('shows the next five fire times across both 2027 changeover days in Europe/Berlin, and the tz database version', async () => {
    setTime(Date.parse('2027-03-26T12:00:00Z'));
    const user = await paidUser(service, 100);
    const made = await create(user, { cron: '30 2 * * *', time_zone: 'Europe/Berlin', input: INPUT });
    expect(made.status, made.text).toBe(201);
    // 02:30 does not exist on 28 March: 03:00 CEST, the first instant after the gap.
    expect(made.body.next_fire_times).toEqual([
      '2027-03-27T01:30:00.000Z',
      '2027-03-28T01:00:00.000Z',
      '2027-03-29T00:30:00.000Z',
      '2027-03-30T00:30:00.000Z',
      '2027-03-31T00:30:00.000Z',
    ]);
    expect(made.body).toMatchObject({
      tz_version: process.versions.tz,
      overlap: 'skip',
      catch_up_seconds: 0,
      paused: false,
      price_cents: PRICE,
    });
    setTime(Date.parse('2027-10-29T12:00:00Z'));
    // Months later: a token of that day.
    const { token } = await mintToken(service, user.email);
    const autumn = await call(`/v1/swarm/schedules/${made.body.schedule_id}`, token);
    // 02:30 comes twice on 31 October: once, at the first (CEST).
    expect(autumn.body.next_fire_times.slice(0, 4)).toEqual([
      '2027-10-30T00:30:00.000Z',
      '2027-10-31T00:30:00.000Z',
      '2027-11-01T01:30:00.000Z',
      '2027-11-02T01:30:00.000Z',
    ]);
    expect((await call(`/v1/swarm/schedules/${made.body.schedule_id}`, (await paidUser(service, 0)).token)).body.code).toBe(
      'schedule_not_found',
    );
  });

  it('fires the spring changeover day at 03:00 CEST and the autumn one once, each a run of its input', async () => {
    setTime(Date.parse('2027-03-28T00:59:00Z'));
    const user = await paidUserWithNode(service, 100, { agents: [MONITOR] });
    const made = await create(user, { cron: '30 2 * * *', time_zone: 'Europe/Berlin', input: INPUT });
    expect(made.body.next_fire_at).toBe('2027-03-28T01:00:00.000Z');
    setTime(Date.parse('2027-03-28T01:00:01Z'));
    const [spring] = await waitFor(
      async () => (occurrencesOf(made.body.schedule_id)[0]?.run_id ? occurrencesOf(made.body.schedule_id) : undefined),
      'the spring run',
    );
    expect(spring!.fire_at).toBe(Date.parse('2027-03-28T01:00:00Z'));
    await waitFor(async () => (runsOf(user.email)[0]?.status === 'succeeded' ? true : undefined), 'the run done');
    expect(user.node.received.map((run) => run.input)).toEqual([INPUT]);

    setTime(Date.parse('2027-10-31T00:29:00Z'));
    const user2 = await paidUserWithNode(service, 100, { agents: [MONITOR] });
    const autumn = await create(user2, { cron: '30 2 * * *', time_zone: 'Europe/Berlin' });
    for (const at of ['2027-10-31T00:30:01Z', '2027-10-31T01:30:01Z']) {
      setTime(Date.parse(at));
      // The round after this time has been seen: the schedule's next fire time moved past it.
      await waitFor(async () => {
        const row = service.db.prepare('SELECT next_fire_at FROM schedules WHERE schedule_id = ?').get(autumn.body.schedule_id) as {
          next_fire_at: number;
        };
        return row.next_fire_at > Date.parse(at) ? true : undefined;
      }, `the round after ${at}`);
    }
    expect(occurrencesOf(autumn.body.schedule_id).map((o) => o.fire_at)).toEqual([Date.parse('2027-10-31T00:30:00Z')]);
  });

  it('with the service away an hour over an every-10-min schedule, catch-up 0 makes no run and catch-up 3600 s exactly one', async () => {
    setTime(Date.parse('2027-04-01T10:00:00Z'));
    const user = await paidUserWithNode(service, 1000, { agents: [MONITOR] });
    const none = (await create(user, { interval_seconds: 600, catch_up_seconds: 0 })).body.schedule_id as string;
    const one = (await create(user, { interval_seconds: 600, catch_up_seconds: 3600 })).body.schedule_id as string;
    // The scheduler sees nothing of 10:00 to 11:05: one jump, as a service stopped and started again.
    setTime(Date.parse('2027-04-01T11:05:00Z'));
    await waitFor(async () => (skipsOf(none).length > 0 && occurrencesOf(one).length > 0 ? true : undefined), 'both rounds');
    expect(occurrencesOf(none)).toEqual([]);
    expect(skipsOf(none)).toEqual([
      { reason: 'missed', count: 6, first_at: Date.parse('2027-04-01T10:10:00Z'), last_at: Date.parse('2027-04-01T11:00:00Z') },
    ]);
    expect(occurrencesOf(one).map((o) => o.fire_at)).toEqual([Date.parse('2027-04-01T11:00:00Z')]);
    expect(skipsOf(one)).toEqual([expect.objectContaining({ reason: 'missed', count: 5 })]);
    await waitFor(
      async () => (runsOf(user.email).length === 1 && runsOf(user.email)[0]!.status === 'succeeded' ? true : undefined),
      'one run',
    );
  });

  it('an empty wallet pauses the schedule at the first refusal, once, charging nothing; funded, it resumes by itself', async () => {
    setTime(Date.parse('2027-05-01T10:00:30Z'));
    const user = await paidUserWithNode(service, 0, { agents: [MONITOR] });
    const endpoint = await hook(user);
    const id = (await create(user, { cron: '* * * * *' })).body.schedule_id as string;
    const schedule = () =>
      service.db.prepare('SELECT paused, pause_reason, recheck_at FROM schedules WHERE schedule_id = ?').get(id) as {
        paused: number;
        pause_reason: string | null;
        recheck_at: number | null;
      };
    setTime(Date.parse('2027-05-01T10:01:01Z'));
    await waitFor(async () => (schedule().paused === 1 ? true : undefined), 'the pause');
    expect(schedule().pause_reason).toBe('insufficient_balance');
    // An hour later, looked at again every five minutes of it: still the one pause, and one skip.
    for (let minute = 5; minute <= 60; minute += 5) {
      const before = schedule().recheck_at!;
      setTime(Date.parse('2027-05-01T10:01:01Z') + minute * MINUTE);
      await waitFor(async () => (schedule().recheck_at! > before ? true : undefined), `recheck ${minute}`);
    }
    expect(skipsOf(id)).toEqual([expect.objectContaining({ reason: 'insufficient_balance', count: 1 })]);
    // One mail for the one pause.
    const paused = await waitFor(async () => {
      const mails = mailTo(user.email).filter((mail) => mail.subject === 'A schedule of your svc account was paused');
      return mails.length > 0 ? mails : undefined;
    }, 'the pause mail');
    expect(paused).toHaveLength(1);
    expect(paused[0]!.text).toContain(`${id}: swarm-node schedule show ${id}`);
    expect(runsOf(user.email)).toEqual([]);
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM ledger_entries WHERE user_id = ?').get(user.email)).toEqual({ n: 0 });
    const shown = await call(`/v1/swarm/schedules/${id}`, user.token);
    expect(shown.body).toMatchObject({ paused: true, pause_reason: 'insufficient_balance', next_fire_at: null });
    // One webhook event for the one pause, its delivery named by the schedule.
    expect(scheduleEventsOf(user.email)).toEqual([['schedule.paused', id, 'insufficient_balance']]);
    const deliveries = await call(`/v1/swarm/webhooks/${endpoint}/deliveries`, user.token);
    expect(deliveries.body.deliveries).toEqual([expect.objectContaining({ event_type: 'schedule.paused', run_id: null, schedule_id: id })]);

    await credit(service, user.email, 100);
    setTime(schedule().recheck_at! + 1000);
    await waitFor(async () => (schedule().paused === 0 ? true : undefined), 'the resume');
    expect(scheduleEventsOf(user.email)).toEqual([
      ['schedule.paused', id, 'insufficient_balance'],
      ['schedule.resumed', id, null],
    ]);
    setTime(clock.now() + MINUTE);
    await waitFor(async () => (runsOf(user.email)[0]?.status === 'succeeded' ? true : undefined), 'a run once funded');
  });

  it('holds the daily cap, in the zone, with runs still queued counted against it; other skips coalesce into one record', async () => {
    setTime(Date.parse('2027-06-01T10:00:30Z'));
    const user = await paidUser(service, 1000);
    await hook(user);
    // A node that serves the agent and is gone: the runs wait for it in the queue, charged.
    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [MONITOR] });
    await node.stop();
    const id = (
      await create(user, {
        cron: '* * * * *',
        overlap: 'allow',
        daily_cap_cents: 2 * PRICE,
        time_zone: 'Asia/Tokyo',
        node_id: node.node_id,
      })
    ).body.schedule_id as string;
    for (let minute = 1; minute <= 4; minute += 1) {
      const at = Date.parse('2027-06-01T10:00:01Z') + minute * MINUTE;
      setTime(at);
      await waitFor(async () => (occurrencesOf(id).length === minute ? true : undefined), `occurrence ${minute}`);
    }
    expect(runsOf(user.email).map((r) => [r.status, r.charged_cents])).toEqual([
      ['queued', PRICE],
      ['queued', PRICE],
    ]);
    expect(occurrencesOf(id).map((o) => o.state)).toEqual(['started', 'started', 'skipped', 'skipped']);
    expect(skipsOf(id)).toEqual([expect.objectContaining({ reason: 'daily_cap', count: 2 })]);
    // One event for the one record of skips.
    expect(scheduleEventsOf(user.email)).toEqual([['schedule.skipping', id, 'daily_cap']]);
    // Lowering the cap needs no recent sign-in; raising it does.
    const stale = await staleToken(user.email);
    const lowered = await call(`/v1/swarm/schedules/${id}`, stale, { method: 'PATCH', body: { daily_cap_cents: PRICE } });
    expect(lowered.status, lowered.text).toBe(200);
    const raised = await call(`/v1/swarm/schedules/${id}`, stale, { method: 'PATCH', body: { daily_cap_cents: 10 * PRICE } });
    expect(raised.status).toBe(401);
    expect(raised.body.code).toBe('step_up_required');
    // The day in Tokyo begins at 15:00 UTC: the cap counts from 0 again.
    setTime(Date.parse('2027-06-01T15:00:01Z'));
    await waitFor(async () => (runsOf(user.email).length === 3 ? true : undefined), 'a run of the new day');
  });

  it('needs the recent sign-in to make, change or resume one, never to pause or remove it; audits each with its JWT', async () => {
    const user = await paidUser(service, 100);
    const stale = await staleToken(user.email);
    const refused = await call('/v1/swarm/schedules', stale, { method: 'POST', body: { agent_id: MONITOR, cron: '@hourly' } });
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ code: 'step_up_required', max_age: 900 });
    const node = await enrollNode(service.baseUrl, user.email);
    const byNode = await call('/v1/swarm/schedules', node.credential, { method: 'POST', body: { agent_id: MONITOR, cron: '@hourly' } });
    expect(byNode.status).toBe(401);
    expect((await call('/v1/swarm/schedules', stale)).body.schedules).toEqual([]);

    const id = (await create(user, { cron: '@hourly' })).body.schedule_id as string;
    const changed = await call(`/v1/swarm/schedules/${id}`, stale, { method: 'PATCH', body: { cron: '@daily' } });
    expect(changed.body.code).toBe('step_up_required');
    const paused = await call(`/v1/swarm/schedules/${id}/pause`, stale, { method: 'POST' });
    expect(paused.body).toMatchObject({ paused: true, pause_reason: 'user', next_fire_at: null });
    expect((await call(`/v1/swarm/schedules/${id}/resume`, stale, { method: 'POST' })).body.code).toBe('step_up_required');
    const resumed = await call(`/v1/swarm/schedules/${id}/resume`, user.token, { method: 'POST' });
    expect(resumed.body).toMatchObject({ paused: false, pause_reason: null });
    expect((await call(`/v1/swarm/schedules/${id}`, stale, { method: 'DELETE' })).body).toEqual({ schedule_id: id, removed: true });
    expect((await call(`/v1/swarm/schedules/${id}`, user.token)).status).toBe(404);
    const audit = await call('/v1/audit', user.token);
    const changes = (audit.body.events as Array<{ kind: string; detail: Record<string, unknown> }>).filter(
      (e) => e.kind === 'schedule_changed',
    );
    expect(changes.map((e) => e.detail.change)).toEqual(['removed', 'resumed', 'paused', 'created']);
    expect(changes.every((e) => e.detail.credential === 'jwt' && typeof e.detail.jti === 'string')).toBe(true);
  });

  it('makes one run of an occurrence fired again and again, in parallel and after a retry', async () => {
    setTime(Date.parse('2027-07-01T10:00:30Z'));
    const user = await paidUserWithNode(service, 1000, { agents: [MONITOR] });
    const id = (await create(user, { cron: '* * * * *', overlap: 'allow' })).body.schedule_id as string;
    const scheduler = createScheduler(service.ctx);
    const at = Date.parse('2027-07-01T10:01:00Z');
    setTime(at + 500);
    await Promise.all([0, 1, 2, 3].map(() => scheduler.round(at + 500)));
    await waitFor(async () => (occurrencesOf(id)[0]?.run_id ? true : undefined), 'the run');
    // A retried start of the same occurrence (its instance stopped after the claim) finds its run.
    const row = service.db.prepare('SELECT * FROM schedules WHERE schedule_id = ?').get(id) as never;
    await scheduler.startRun(row, { fire_at: at });
    await scheduler.startRun(row, { fire_at: at });
    expect(runsOf(user.email)).toHaveLength(1);
    expect(occurrencesOf(id)).toEqual([
      { fire_at: at, state: expect.stringMatching(/started|settled/), run_id: runsOf(user.email)[0]!.run_id },
    ]);
  });

  it('a revocation pauses the schedules the revoked token made or resumed (creator_revoked); a fresh resume takes it up', async () => {
    const user = await paidUser(service, 100);
    await hook(user);
    const stolen = (await mintToken(service, user.email)).token;
    const other = (await mintToken(service, user.email)).token;
    const thief = (await create({ email: user.email, token: stolen }, { cron: '@hourly' })).body.schedule_id as string;
    const own = (await create({ email: user.email, token: other }, { cron: '@daily' })).body.schedule_id as string;
    // Signing one token out pauses only what that token made.
    const one = await call('/v1/auth/logout', other, { method: 'POST', body: {} });
    expect(one.body).toEqual({ revoked: 1, everywhere: false, schedules_paused: [own] });
    // Everywhere: the stolen token's schedule too, at once.
    const everywhere = await call('/v1/auth/logout', user.token, { method: 'POST', body: { everywhere: true } });
    expect(everywhere.body).toMatchObject({ everywhere: true, schedules_paused: [thief] });
    const fresh = (await mintToken(service, user.email)).token;
    const shown = await call(`/v1/swarm/schedules/${thief}`, fresh);
    expect(shown.body).toMatchObject({ paused: true, pause_reason: 'creator_revoked', next_fire_at: null });
    expect(scheduleEventsOf(user.email)).toEqual([
      ['schedule.paused', own, 'creator_revoked'],
      ['schedule.paused', thief, 'creator_revoked'],
    ]);
    const resumed = await call(`/v1/swarm/schedules/${thief}/resume`, fresh, { method: 'POST' });
    expect(resumed.body).toMatchObject({ paused: false, pause_reason: null });
    // Now under the fresh sign-in: signing out the stolen token again would pause nothing.
    const row = service.db.prepare('SELECT authorized_jti FROM schedules WHERE schedule_id = ?').get(thief) as { authorized_jti: string };
    expect(row.authorized_jti).toBe(JSON.parse(Buffer.from(fresh.split('.')[1]!, 'base64url').toString()).jti);
  });

  it('backfills a range older than 24 h: states its runs and cost first, re-runs no occurrence, needs confirm_runs over 10', async () => {
    setTime(Date.parse('2027-12-01T10:00:30Z'));
    const user = await paidUserWithNode(service, 1000, { agents: [MONITOR] });
    const id = (await create(user, { interval_seconds: 3600, overlap: 'allow' })).body.schedule_id as string;
    for (const at of ['2027-12-01T11:00:01Z', '2027-12-01T12:00:01Z']) {
      setTime(Date.parse(at));
      await waitFor(
        async () =>
          occurrencesOf(id).filter((o) => o.run_id !== null).length === occurrencesOf(id).length &&
          occurrencesOf(id).length > 0 &&
          occurrencesOf(id).at(-1)!.fire_at === Date.parse(at) - 1000
            ? true
            : undefined,
        `the run of ${at}`,
      );
    }
    // Three days the service did not see.
    setTime(Date.parse('2027-12-04T12:30:00Z'));
    const token = (await mintToken(service, user.email)).token;
    const backfill = (body: Record<string, unknown>, bearer = token) =>
      call(`/v1/swarm/schedules/${id}/backfill`, bearer, { method: 'POST', body });
    const range = { from: '2027-12-01T10:30:00Z', to: '2027-12-01T15:00:00Z' };
    expect((await backfill(range, await staleToken(user.email))).body.code).toBe('step_up_required');
    expect((await backfill({ ...range, dry_run: true })).body).toMatchObject({
      runs: 3,
      cost_cents: 3 * PRICE,
      already_run: 2,
      dry_run: true,
      occurrences: [],
    });
    expect(runsOf(user.email)).toHaveLength(2);
    const done = await backfill(range);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ runs: 3, already_run: 2, dry_run: false });
    expect(done.body.occurrences.map((o: { fire_at: string }) => o.fire_at)).toEqual([
      '2027-12-01T13:00:00.000Z',
      '2027-12-01T14:00:00.000Z',
      '2027-12-01T15:00:00.000Z',
    ]);
    expect(runsOf(user.email)).toHaveLength(5);
    // The same range again: every occurrence has its run.
    expect((await backfill(range)).body).toMatchObject({ runs: 0, already_run: 5 });
    expect(runsOf(user.email)).toHaveLength(5);
    // Over 10 runs: refused until confirm_runs names their count.
    const wide = { from: '2027-12-01T10:30:00Z', to: '2027-12-04T12:00:00Z' };
    const unconfirmed = await backfill(wide);
    expect(unconfirmed.status).toBe(409);
    expect(unconfirmed.body).toMatchObject({ code: 'backfill_unconfirmed', runs: 69, cost_cents: 69 * PRICE });
    expect((await backfill({ ...wide, confirm_runs: 68 })).body.code).toBe('backfill_unconfirmed');
    expect((await backfill({ from: '2027-12-05T00:00:00Z', to: '2027-12-06T00:00:00Z' })).body.code).toBe('invalid_schedule');
    expect(runsOf(user.email)).toHaveLength(5);
  });

  it("the console lists schedules with their next runs in the schedule's zone and the browser's, the pause reason and the skips", async () => {
    setTime(Date.parse('2027-03-27T12:00:00Z'));
    const user = await paidUserWithNode(service, 0, { agents: [MONITOR] });
    const id = (await create(user, { cron: '30 2 * * *', time_zone: 'Europe/Berlin' })).body.schedule_id as string;
    const cookie = await consoleCookie(service.walletUrl, user.token);
    const page = await consoleGet(service.walletUrl, 'schedules', cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('agent_ops_monitor_004: cron 30 2 * * * in Europe/Berlin');
    // 03:00 CEST on the spring changeover day, and the same instant for the browser to show in its own zone.
    expect(page.text).toContain('<td>2027-03-28 03:00 CEST</td><td><time datetime="2027-03-28T01:00:00.000Z">');
    // Fired with an empty wallet: paused for the balance, and the skip shown.
    setTime(Date.parse('2027-03-28T01:00:01Z'));
    await waitFor(async () => (skipsOf(id).length === 1 ? true : undefined), 'the refusal');
    // Thirteen hours on: a console session of now.
    const { token } = await mintToken(service, user.email);
    const paused = await consoleGet(service.walletUrl, 'schedules', await consoleCookie(service.walletUrl, token));
    expect(paused.text).toContain('Paused (insufficient_balance)');
    expect(paused.text).toMatch(/Skipped 1× \(insufficient_balance\) from <time datetime="2027-03-28T01:00:00.000Z">/);
  });
});
