// swarm-node daemon scheduling (docs/operations.md "Day to day on the host"): the built binary against the real
// svc-api. Runs on the interval, picks up register/unregister without a restart, runs a missed interval once, stops
// at the daily cap, shows itself in status, and exits 0 on SIGTERM.
import { describe, expect, it } from 'vitest';
import { startOfUtcDay } from '../../src/lib/clock.js';
import { useSvcApi } from '../helpers/svc-api.js';
import {
  cli,
  DaemonProcess,
  expectExactlyOnce,
  localRuns,
  nodeDb,
  register,
  RequestLog,
  signedInNode,
  waitForTicksDone,
} from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
const SKILLS = 'agent_svc_skills_005'; // 5 cents
const SALES = 'agent_sales_outreach_008'; // 8 cents

const requests = new RequestLog();
const service = useSvcApi({ logger: { level: 'info', stream: requests } });

describe('swarm-node daemon: scheduling', () => {
  it('runs each agent on its interval, picks up register and unregister live, shows itself in status, exits 0 on SIGTERM', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 1000, label: 'interval' });
    await register(node, OPS, '--every', '1s');
    const daemon = DaemonProcess.start(node);
    await daemon.waitForEvent('daemon_started');
    const runs = await daemon.waitForCount('run_succeeded', 3);
    expect(runs.every((event) => event.agent === OPS && event.charged_cents === '4')).toBe(true);
    // The service knows them as the schedule's (docs/api.md "Triggers"), as runs and runs show say.
    const scheduled = await cli(node, ['--json', 'runs', 'show', runs[0]!.run_id!]);
    expect(scheduled.json).toMatchObject({ run_id: runs[0]!.run_id, trigger: 'schedule' });

    // Registered while the daemon runs: picked up at a tick, no restart. Its runs start from the input stored with
    // it (register --input): the agent answers with the input it was given.
    await register(node, SKILLS, '--every', '1s', '--input', 'question=Which input does a scheduled run get?');
    const skillsRun = await daemon.waitForEvent('run_succeeded', (event) => event.agent === SKILLS);
    const db = nodeDb(node);
    const journaled = db.prepare('SELECT input_json, output_json FROM runs WHERE run_id = ?').get(skillsRun.run_id) as {
      input_json: string;
      output_json: string;
    };
    db.close();
    expect(JSON.parse(journaled.input_json)).toEqual({ question: 'Which input does a scheduled run get?' });
    expect(JSON.parse(journaled.output_json).input).toEqual({ question: 'Which input does a scheduled run get?' });

    const status = await cli(node, ['--json', 'status']);
    expect(status.exitCode, status.stderr).toBe(0);
    expect(status.json.daemon).toMatchObject({
      running: true,
      pid: daemon.pid,
      version: expect.any(String),
      paused: null,
      stopped_at: null,
    });
    expect(Date.now() - Date.parse(status.json.daemon.last_tick_at)).toBeLessThan(5_000);
    expect(status.json.daemon.agents.map((agent: { agent_id: string }) => agent.agent_id)).toEqual([OPS, SKILLS]);
    for (const agent of status.json.daemon.agents) {
      expect(agent).toMatchObject({
        every_seconds: 1,
        paused_reason: null,
        next_run_at: expect.any(String),
        last_run_at: expect.any(String),
      });
    }
    const human = await cli(node, ['status']);
    expect(human.stdout).toMatch(new RegExp(`^daemon\\s+running pid ${daemon.pid}, last tick \\S+, version \\S+$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`^ {2}${OPS}\\s+next run \\S+, last run \\S+$`, 'm'));

    // Unregistered while it runs: no run of it starts after the next tick.
    expect((await cli(node, ['unregister', OPS])).exitCode).toBe(0);
    // Every tick begun from now on reads OPS as unregistered: count once one is done, and again once the ticks have
    // gone past OPS's interval.
    await waitForTicksDone(node, 1);
    const opsRuns = localRuns(node, OPS).length;
    await waitForTicksDone(node, 2, Date.now() + 1_500);
    expect(localRuns(node, OPS)).toHaveLength(opsRuns);
    expect(localRuns(node, SKILLS).length).toBeGreaterThanOrEqual(2);

    // On the interval: consecutive runs of one agent start about a second apart, never closer, never in a burst.
    const started = localRuns(node, OPS).map((run) => run.started_at);
    for (let i = 1; i < started.length; i += 1) expect(started[i]! - started[i - 1]!).toBeGreaterThanOrEqual(950);

    expect(await daemon.stop('SIGTERM')).toBe(0);
    expect(daemon.events('daemon_stopped')).toHaveLength(1);
    expect(daemon.output).not.toMatch(/\u001b/);
    const stopped = await cli(node, ['--json', 'status']);
    expect(stopped.json.daemon).toMatchObject({ running: false, pid: daemon.pid, stopped_at: expect.any(String) });
    expect((await cli(node, ['status'])).stdout).toMatch(/^daemon\s+not running \(stopped \S+\)$/m);
    expectExactlyOnce(service.db, node);
  });

  it("leaves a schedule at the service to the service: the wizard's --every is not run by the daemon on its own", async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'wizard-first' });
    const wizard = await cli(node, ['--json', 'wizard', '--agent', OPS, '--every', '5m', '--yes']);
    expect(wizard.exitCode, wizard.stderr).toBe(0);
    const [first] = localRuns(node);
    expect(first).toMatchObject({ agent_id: OPS, status: 'succeeded', charged_cents: 4 });
    const listed = await cli(node, ['--json', 'list']);
    const scheduleId = listed.json.registrations[0].schedule_id as string;
    expect(scheduleId).toEqual(expect.any(String));
    // Paused at the service, it fires nothing there: whatever ran now would be the daemon's own doing.
    expect((await cli(node, ['schedule', 'pause', scheduleId])).exitCode).toBe(0);

    const daemon = DaemonProcess.start(node, ['--tick-ms', '50', '--backoff-ms', '400']);
    // Once the service is ready the daemon settles (nothing here) and schedules at every tick: many ticks later, it
    // has looked at OPS many times.
    const ready = await daemon.waitForEvent('service_ready');
    await waitForTicksDone(node, 10, Date.parse(ready.ts!));
    expect(await daemon.stop()).toBe(0);

    expect(daemon.events('run_succeeded')).toEqual([]);
    expect(localRuns(node)).toEqual([first]);
    expect(expectExactlyOnce(service.db, node)).toEqual({ runs: 1, cents: 4 });
    expect((await cli(node, ['--json', 'status'])).json.daemon.agents).toEqual([]);
  });

  it('runs an interval missed during downtime once, and plans the next one from now, not from the old plan', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'missed' });
    await register(node, OPS, '--every', '1h');
    const now = Date.now();
    const db = nodeDb(node);
    // Down for five hours: five runs were missed.
    db.prepare('UPDATE schedules SET next_run_at = ?, last_run_at = ? WHERE agent_id = ?').run(
      now - 5 * 3_600_000,
      now - 6 * 3_600_000,
      OPS,
    );
    db.close();
    const executesBefore = requests.executes();

    const daemon = DaemonProcess.start(node);
    await daemon.waitForEvent('run_succeeded');
    // A catch-up burst would start the next run at the next tick: several ticks on, there is still one run.
    await waitForTicksDone(node, 3);
    expect(await daemon.stop()).toBe(0);

    expect(daemon.events('run_succeeded')).toHaveLength(1);
    expect(requests.executes() - executesBefore).toBe(1);
    const [run] = localRuns(node);
    const check = nodeDb(node);
    const schedule = check
      .prepare<[string], { next_run_at: number; last_run_at: number }>('SELECT next_run_at, last_run_at FROM schedules WHERE agent_id = ?')
      .get(OPS)!;
    check.close();
    // Planned at the start of the run (the journal row is written a moment later).
    expect(run!.started_at - schedule.last_run_at).toBeGreaterThanOrEqual(0);
    expect(run!.started_at - schedule.last_run_at).toBeLessThan(1_000);
    expect(schedule.next_run_at).toBe(schedule.last_run_at + 3_600_000);
    expectExactlyOnce(service.db, node);
  });

  it('a plan further out than one interval (the clock was set back) is reset to one interval from now', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'clock' });
    await register(node, OPS, '--every', '2s');
    const db = nodeDb(node);
    db.prepare('UPDATE schedules SET next_run_at = ? WHERE agent_id = ?').run(Date.now() + 3_600_000, OPS);
    db.close();
    const daemon = DaemonProcess.start(node);
    const reset = await daemon.waitForEvent('schedule_reset');
    // One interval from the tick's clock; the log line's own time is read a moment later, so allow that moment.
    const ahead = Date.parse(reset.next_run_at!) - Date.parse(reset.ts!);
    expect(ahead).toBeGreaterThan(1_500);
    expect(ahead).toBeLessThanOrEqual(2_000);
    await daemon.waitForEvent('run_succeeded', () => true, 5_000);
    expect(await daemon.stop()).toBe(0);
    expect(daemon.events('schedule_reset')).toHaveLength(1);
    expectExactlyOnce(service.db, node);
  });

  it('stops at the daily cap (logged once), holds the agent until the next UTC day, and status says so', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 500, label: 'cap' });
    // 8 cents a run under a 20-cent cap: two runs today, not a third.
    await register(node, SALES, '--every', '1s', '--daily-cap', '0.20');
    const daemon = DaemonProcess.start(node);
    const capped = await daemon.waitForEvent('daily_cap_reached', () => true, 8_000);
    // Held: the ticks go past the 1 s interval without a third run or a second cap line.
    await waitForTicksDone(node, 2, Date.now() + 1_500);

    const nextDay = new Date(startOfUtcDay(Date.now()) + 86_400_000).toISOString();
    expect(capped).toMatchObject({ agent: SALES, spent_cents: '16', cap_cents: '20', price_cents: '8', until: nextDay });
    expect(daemon.events('daily_cap_reached')).toHaveLength(1);
    expect(daemon.events('run_succeeded')).toHaveLength(2);
    expect(localRuns(node).map((run) => run.charged_cents)).toEqual([8, 8]);

    const status = await cli(node, ['--json', 'status']);
    expect(status.json.daemon.agents).toEqual([
      expect.objectContaining({ agent_id: SALES, paused_reason: 'daily_cap', paused_until: nextDay }),
    ]);
    expect(status.json.problems).toEqual([]);
    expect((await cli(node, ['status'])).stdout).toMatch(
      new RegExp(`^ {2}${SALES}\\s+paused: daily_cap until ${nextDay.replace(/\./g, '\\.')}`, 'm'),
    );

    // Raising the cap with register resets the schedule: the daemon runs it again without a restart.
    await register(node, SALES, '--daily-cap', '0.30');
    await daemon.waitForCount('run_succeeded', 3);
    expect(await daemon.stop('SIGINT')).toBe(0);
    expect(localRuns(node).map((run) => run.charged_cents)).toEqual([8, 8, 8]);
    expectExactlyOnce(service.db, node);
  });
});
