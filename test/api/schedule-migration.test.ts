// A node's one-time move of its daemon's schedules to the service (docs/api.md "Schedules"): with its own credential,
// each pinned to it, for agents it serves, as the daemon kept them (an interval under a minute, UTC, buffer_one,
// the cap with today's charges counted, the default input, the next planned time); a repeat makes nothing more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
import { MovableClock } from '../helpers/clock.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/wait.js';
import { enrollNode, serve } from '../helpers/protocol-node.js';
import { paidUserWithNode, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';

const MONITOR = 'agent_ops_monitor_004';
const PRICE = 4;

describe("a node's daemon's schedules moved to the service", () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock, runTiming: TEST_RUN_TIMING });
  afterAll(stopNodes);
  const setTime = (ms: number) => clock.advance(ms - clock.now());
  beforeAll(() => setTime(Date.parse('2027-08-02T10:00:00Z')));

  const migrate = (credential: string, registrations: unknown[]) =>
    httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/schedules`, { method: 'POST', token: credential, body: { registrations } });
  const runsOf = (email: string) =>
    service.db.prepare('SELECT status, charged_cents, trigger FROM runs WHERE user_id = ? ORDER BY run_id').all(email) as Array<{
      status: string;
      charged_cents: number;
      trigger: string;
    }>;

  it('makes each registration a schedule pinned to the node, once, with the cap counting what the daemon charged today', async () => {
    const user = await paidUserWithNode(service, 1000, { agents: [MONITOR] });
    // The daemon's schedule ran twice today, before the move: its own runs, with the node's credential.
    for (const key of ['daemon-run-1', 'daemon-run-2']) {
      const ran = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
        method: 'POST',
        token: user.node.credential,
        headers: { 'idempotency-key': key, 'svc-run-trigger': 'schedule' },
        body: { user_id: user.email, agent_id: MONITOR },
      });
      // A node's own run is leased to it, which runs it and reports, as the daemon does.
      expect(ran.body.status, ran.text).toBe('running');
      const reported = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${ran.body.run_id}/result`, {
        method: 'POST',
        token: user.node.credential,
        body: { lease_id: ran.body.lease.lease_id, status: 'succeeded', output: { summary: 'ok' } },
      });
      expect(reported.status, reported.text).toBe(200);
    }
    const planned = Date.parse('2027-08-02T10:00:20Z');
    const registration = {
      agent_id: MONITOR,
      every_seconds: 30,
      daily_cap_cents: 3 * PRICE,
      paused_reason: null,
      input: { thresholds: { disk_warning_percent: 70 } },
      next_run_at: new Date(planned).toISOString(),
    };
    const moved = await migrate(user.node.credential, [registration]);
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body).toEqual({
      migrated_at: expect.stringMatching(/^2027-08-02T10:00:/),
      schedules: [{ agent_id: MONITOR, schedule_id: expect.any(String) }],
    });
    const id = moved.body.schedules[0].schedule_id as string;
    const shown = await httpRequest(`${service.baseUrl}/v1/swarm/schedules/${id}`, { token: user.token });
    expect(shown.body).toMatchObject({
      interval_seconds: 30,
      cron: null,
      time_zone: 'UTC',
      overlap: 'buffer_one',
      node_id: user.node.node_id,
      daily_cap_cents: 3 * PRICE,
      input: registration.input,
      paused: false,
      next_fire_at: new Date(planned).toISOString(),
    });
    // A repeat (an answer lost on the way, or a node taken over) moves nothing more.
    expect((await migrate(user.node.credential, [{ ...registration, agent_id: 'agent_dev_review_012' }])).body).toEqual(moved.body);
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM schedules WHERE user_id = ?').get(user.email)).toEqual({ n: 1 });
    const audit = service.db
      .prepare("SELECT detail_json FROM audit_events WHERE user_id = ? AND kind = 'schedule_changed'")
      .all(user.email) as Array<{ detail_json: string }>;
    expect(audit.map((row) => JSON.parse(row.detail_json))).toEqual([
      expect.objectContaining({ schedule_id: id, change: 'migrated', credential: 'node', node_id: user.node.node_id }),
    ]);

    // Two runs charged today and a cap of three: the planned run goes, the next is over the cap.
    setTime(planned + 500);
    await waitFor(async () => (runsOf(user.email).length === 3 ? true : undefined), 'the planned run');
    setTime(planned + 30_500);
    await waitFor(
      async () =>
        (
          service.db.prepare("SELECT COUNT(*) AS n FROM schedule_skips WHERE schedule_id = ? AND reason = 'daily_cap'").get(id) as {
            n: number;
          }
        ).n === 1 || undefined,
      'the occurrence over the cap skipped',
    );
    expect(runsOf(user.email).map((run) => [run.trigger, run.charged_cents])).toEqual([
      ['schedule', PRICE],
      ['schedule', PRICE],
      ['schedule', PRICE],
    ]);
  });

  it('moves only agents the node serves, only with a node credential, and never pins to another node', async () => {
    const user = await paidUserWithNode(service, 100, { agents: [MONITOR] });
    const other = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: ['agent_dev_review_012'] });
    const registration = {
      agent_id: MONITOR,
      every_seconds: 60,
      daily_cap_cents: null,
      paused_reason: 'insufficient_balance',
      input: null,
      next_run_at: null,
    };
    const foreign = await migrate(other.credential, [registration]);
    expect([foreign.status, foreign.body.code]).toEqual([403, 'forbidden']);
    expect((await migrate(user.token, [registration])).status).toBe(401);
    const pinnedElsewhere = await migrate(user.node.credential, [{ ...registration, node_id: other.node_id }]);
    expect([pinnedElsewhere.status, pinnedElsewhere.body.code]).toEqual([400, 'invalid_request']);
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM schedules WHERE user_id = ?').get(user.email)).toEqual({ n: 0 });
    // A pause for money is kept, and looked at again at the next round.
    const moved = await migrate(user.node.credential, [registration]);
    expect(moved.status, moved.text).toBe(200);
    const shown = await httpRequest(`${service.baseUrl}/v1/swarm/schedules/${moved.body.schedules[0].schedule_id}`, { token: user.token });
    expect(shown.body).toMatchObject({ node_id: user.node.node_id, interval_seconds: 60 });
    expect(shown.body.pause_reason === 'insufficient_balance' || shown.body.paused === false).toBe(true);
  });
});
