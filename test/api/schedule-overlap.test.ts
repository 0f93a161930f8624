// Schedules' overlap policies (docs/api.md "Schedules"): with a slow agent, skip, buffer_one, allow and
// cancel_running over three occurrences; with the pinned node offline an hour, the service still fires, skip and
// buffer_one leave at most one run waiting for the node, and the other occurrences are one coalesced skip record.
import { afterAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
import { MovableClock } from '../helpers/clock.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/wait.js';
import { mailTo } from '../helpers/mailbox.js';
import { enrollNode, serve } from '../helpers/protocol-node.js';
import { paidUser, paidUserWithNode, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';

const MONITOR = 'agent_ops_monitor_004';
const MINUTE = 60_000;

describe('schedule overlap policies with a slow agent', () => {
  const clock = new MovableClock();
  // Leases of ten minutes: the clock moves by minutes while the slow runs are held.
  const service = useSvcApi({ clock, runTiming: { ...TEST_RUN_TIMING, leaseMs: 600_000, queueTimeoutMs: 3_600_000 } });
  afterAll(stopNodes);
  const setTime = (ms: number) => clock.advance(ms - clock.now());
  const stateOf = (id: string) =>
    (
      service.db.prepare('SELECT state FROM schedule_occurrences WHERE schedule_id = ? ORDER BY fire_at').all(id) as Array<{
        state: string;
      }>
    ).map((o) => o.state);
  const skipsOf = (id: string) =>
    service.db.prepare('SELECT reason, count FROM schedule_skips WHERE schedule_id = ? ORDER BY skip_id').all(id);

  it.each([
    ['skip', ['started', 'skipped', 'skipped'], 1, [{ reason: 'overlap', count: 2 }]],
    ['buffer_one', ['started', 'buffered', 'skipped'], 1, [{ reason: 'overlap', count: 1 }]],
    ['allow', ['started', 'started', 'started'], 3, []],
    ['cancel_running', ['started', 'started', 'started'], 3, []],
  ] as const)('%s: over three occurrences of a run that takes longer', async (overlap, states, handed, skips) => {
    const start = Date.parse('2027-09-01T10:00:30Z') + OVERLAP_ORDER.indexOf(overlap) * 86_400_000;
    setTime(start);
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const user = await paidUserWithNode(service, 1000, {
      agents: [MONITOR],
      capacity: 4,
      answer: async (run) => (await slow, { status: 'succeeded', output: { run_id: run.run_id } }),
    });
    const made = await httpRequest(`${service.baseUrl}/v1/swarm/schedules`, {
      method: 'POST',
      token: user.token,
      body: { agent_id: MONITOR, cron: '* * * * *', overlap },
    });
    expect(made.status, made.text).toBe(201);
    const id = made.body.schedule_id as string;
    for (let minute = 1; minute <= 3; minute += 1) {
      setTime(start - 30_000 + minute * MINUTE + 1000);
      await waitFor(async () => (stateOf(id).length === minute ? true : undefined), `occurrence ${minute}`);
      if (states[minute - 1] === 'started')
        await waitFor(async () => (user.node.received.length >= Math.min(minute, handed) ? true : undefined), `run ${minute} handed`);
    }
    // A run made may have ended already (settled): cancelled, under cancel_running.
    expect(stateOf(id).map((state) => (state === 'settled' ? 'started' : state))).toEqual(states);
    expect(user.node.received).toHaveLength(handed);
    expect(skipsOf(id)).toEqual(skips);
    if (overlap === 'cancel_running') {
      // Each occurrence cancelled the run before it.
      await waitFor(async () => (user.node.cancels.length === 2 ? true : undefined), 'two cancels');
      const ended = service.db.prepare('SELECT COUNT(*) AS n FROM runs WHERE user_id = ? AND cancelled_at IS NOT NULL').get(user.email) as {
        n: number;
      };
      await waitFor(
        async () => {
          const now = service.db
            .prepare('SELECT COUNT(*) AS n FROM runs WHERE user_id = ? AND cancelled_at IS NOT NULL')
            .get(user.email) as { n: number };
          return Number(now.n) === 2 ? true : undefined;
        },
        `two runs cancelled (${Number(ended.n)} so far)`,
      );
    }
    release();
    if (overlap === 'buffer_one') {
      // The buffered occurrence starts once the run before it has ended.
      await waitFor(async () => (user.node.received.length === 2 ? true : undefined), 'the buffered run');
    }
  });
});

const OVERLAP_ORDER = ['skip', 'buffer_one', 'allow', 'cancel_running'];

describe('a pinned schedule whose node is offline an hour', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock, runTiming: { ...TEST_RUN_TIMING, queueTimeoutMs: 7_200_000 } });
  afterAll(stopNodes);
  const setTime = (ms: number) => clock.advance(ms - clock.now());

  it.each([
    ['skip', 1, [{ reason: 'overlap', count: 5 }]],
    ['buffer_one', 1, [{ reason: 'overlap', count: 5 }]],
    ['allow', 6, []],
  ] as const)(
    '%s: the service still fires; %i run waits for the node, the other occurrences one skip record',
    async (overlap, waiting, skips) => {
      const start = Date.parse('2027-11-01T10:00:30Z') + ['skip', 'buffer_one', 'allow'].indexOf(overlap) * 86_400_000;
      setTime(start);
      const user = await paidUser(service, 1000);
      const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [MONITOR] });
      await node.stop();
      const made = await httpRequest(`${service.baseUrl}/v1/swarm/schedules`, {
        method: 'POST',
        token: user.token,
        body: { agent_id: MONITOR, interval_seconds: 600, overlap, node_id: node.node_id },
      });
      const id = made.body.schedule_id as string;
      for (let step = 1; step <= 6; step += 1) {
        setTime(start - 30_000 + step * 600_000 + 1000);
        // Fired, and its run started: an occurrence claimed (pending) gets its run just after the claim commits.
        await waitFor(async () => {
          const row = service.db.prepare('SELECT next_fire_at FROM schedules WHERE schedule_id = ?').get(id) as { next_fire_at: number };
          const claimed = service.db
            .prepare("SELECT COUNT(*) AS n FROM schedule_occurrences WHERE schedule_id = ? AND state = 'pending'")
            .get(id) as { n: number };
          return row.next_fire_at > clock.now() && claimed.n === 0 ? true : undefined;
        }, `step ${step}`);
      }
      const runs = service.db.prepare('SELECT status, pinned_node_id FROM runs WHERE user_id = ?').all(user.email) as Array<{
        status: string;
        pinned_node_id: string;
      }>;
      expect(runs).toHaveLength(waiting);
      expect(runs.every((run) => run.status === 'queued' && run.pinned_node_id === node.node_id)).toBe(true);
      expect(service.db.prepare('SELECT reason, count FROM schedule_skips WHERE schedule_id = ?').all(id)).toEqual(skips);
    },
  );

  it('a schedule pinned to a node that is removed is paused (node_removed), never rerouted to another node', async () => {
    setTime(Date.parse('2027-11-10T10:00:30Z'));
    const user = await paidUserWithNode(service, 1000, { agents: [MONITOR] });
    const hook = await httpRequest(`${service.baseUrl}/v1/swarm/webhooks`, {
      method: 'POST',
      token: user.token,
      body: { url: 'https://hooks.example.com/schedules' },
    });
    expect(hook.status, hook.text).toBe(201);
    const pinned = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [MONITOR] });
    const make = (body: Record<string, unknown>) =>
      httpRequest(`${service.baseUrl}/v1/swarm/schedules`, {
        method: 'POST',
        token: user.token,
        body: { agent_id: MONITOR, interval_seconds: 600, ...body },
      });
    const made = await make({ node_id: pinned.node_id });
    expect(made.status, made.text).toBe(201);
    const removed = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/${pinned.node_id}`, { method: 'DELETE', token: user.token });
    expect(removed.status, removed.text).toBe(200);
    const shown = await httpRequest(`${service.baseUrl}/v1/swarm/schedules/${made.body.schedule_id}`, { token: user.token });
    expect(shown.body).toMatchObject({ paused: true, pause_reason: 'node_removed', next_fire_at: null });
    // The user is told once, by mail and by one webhook event, and a resume is refused: it has nowhere to run.
    const mails = await waitFor(async () => {
      const found = mailTo(user.email).filter((mail) => mail.subject === 'A schedule of your svc account was paused');
      return found.length > 0 ? found : undefined;
    }, 'the pause mail');
    expect(mails).toHaveLength(1);
    expect(mails[0]!.text).toContain('(node_removed)');
    expect(mails[0]!.text).toContain(`swarm-node schedule show ${made.body.schedule_id}`);
    expect(
      service.db
        .prepare('SELECT event_type, schedule_id FROM webhook_deliveries WHERE user_id = ? AND schedule_id IS NOT NULL')
        .all(user.email),
    ).toEqual([{ event_type: 'schedule.paused', schedule_id: made.body.schedule_id }]);
    const resumed = await httpRequest(`${service.baseUrl}/v1/swarm/schedules/${made.body.schedule_id}/resume`, {
      method: 'POST',
      token: user.token,
    });
    expect([resumed.status, resumed.body.code]).toEqual([400, 'invalid_schedule']);
    // An unpinned schedule beside it: its run says the round at 10:10 has passed.
    const beside = await make({});
    setTime(Date.parse('2027-11-10T10:10:01Z'));
    await waitFor(async () => (user.node.received.length === 1 ? true : undefined), 'the unpinned run');
    const occurrences = (id: string) => service.db.prepare('SELECT COUNT(*) AS n FROM schedule_occurrences WHERE schedule_id = ?').get(id);
    expect([occurrences(made.body.schedule_id), occurrences(beside.body.schedule_id)]).toEqual([{ n: 0 }, { n: 1 }]);
    expect(pinned.received).toEqual([]);
  });
});
