// swarm-node daemon and schedules (docs/api.md "Schedules", the node's one-time move): the built binary against
// the real svc-api. At its start the daemon moves the intervals an earlier release kept here to the service, each
// pinned to this node as it was (its interval, even under a minute, its input, its cap); the service fires them and
// the daemon runs what they queue, as any run. A schedule at the service is never run by the daemon on its own.
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import {
  cli,
  DaemonProcess,
  expectChargedForNodeResults,
  expectExactlyOnce,
  localRuns,
  register,
  RequestLog,
  serviceRuns,
  signedInNode,
  waitForTicksDone,
} from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
const SKILLS = 'agent_svc_skills_005'; // 5 cents
const SALES = 'agent_sales_outreach_008'; // 8 cents

const requests = new RequestLog();
const service = useSvcApi({ logger: { level: 'info', stream: requests } });

interface ScheduleAtService {
  schedule_id: string;
  agent_id: string;
  interval_seconds: number;
  time_zone: string;
  overlap: string;
  node_id: string;
  daily_cap_cents: number | null;
  input_json: string | null;
  migrated_from_node: string | null;
}

function schedulesOf(email: string): ScheduleAtService[] {
  return service.db
    .prepare(
      `SELECT schedule_id, agent_id, interval_seconds, time_zone, overlap, node_id, daily_cap_cents, input_json, migrated_from_node
       FROM schedules WHERE user_id = ? ORDER BY agent_id`,
    )
    .all(email.toLowerCase()) as ScheduleAtService[];
}

describe('swarm-node daemon: schedules', () => {
  it("moves the daemon's own intervals to the service at its start, pinned here as they were, and runs what they fire; unregister ends one; status; exit 0 on SIGTERM", async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 1000, label: 'interval' });
    await register(node, OPS, '--every', '1s');
    await register(node, SKILLS, '--every', '1s', '--input', 'question=Which input does a scheduled run get?');
    expect((await cli(node, ['status'])).stdout).toMatch(new RegExp(`^ {2}${OPS}\\s+not moved to the service yet`, 'm'));
    const daemon = DaemonProcess.start(node);
    const moved = await daemon.waitForCount('schedule_moved', 2);
    const nodeId = (await cli(node, ['--json', 'status'])).json.node.node_id as string;
    const made = schedulesOf(node.email);
    expect(made).toEqual([
      expect.objectContaining({
        agent_id: OPS,
        interval_seconds: 1,
        time_zone: 'UTC',
        overlap: 'buffer_one',
        node_id: nodeId,
        input_json: null,
      }),
      expect.objectContaining({
        agent_id: SKILLS,
        interval_seconds: 1,
        node_id: nodeId,
        input_json: JSON.stringify({ question: 'Which input does a scheduled run get?' }),
        migrated_from_node: nodeId,
      }),
    ]);
    expect(moved.map((event) => event.schedule_id).sort()).toEqual(made.map((row) => row.schedule_id).sort());

    // The service fires them and queues their runs here: the daemon runs them, a second apart.
    const runs = await daemon.waitForCount('run_succeeded', 4, 20_000);
    expect(runs.every((event) => event.source === 'service')).toBe(true);
    const opsRun = runs.find((event) => event.agent === OPS)!;
    const shown = await cli(node, ['--json', 'runs', 'show', opsRun.run_id!]);
    expect(shown.json).toMatchObject({ run_id: opsRun.run_id, trigger: 'schedule', node_id: nodeId, charged_cents: 4 });
    const skillsRun = await daemon.waitForEvent('run_succeeded', (event) => event.agent === SKILLS, 20_000);
    const skillsShown = await cli(node, ['--json', 'runs', 'show', skillsRun.run_id!]);
    expect(skillsShown.json.output.input).toEqual({ question: 'Which input does a scheduled run get?' });

    const status = await cli(node, ['--json', 'status']);
    expect(status.exitCode, status.stderr).toBe(0);
    expect(status.json.daemon).toMatchObject({ running: true, pid: daemon.pid, paused: null, stopped_at: null, agents: [] });
    const listed = await cli(node, ['--json', 'list']);
    expect(listed.json.registrations.map((row: { schedule_id: string }) => row.schedule_id).sort()).toEqual(
      made.map((row) => row.schedule_id).sort(),
    );

    // Unregistered while it runs: its schedule goes with it, and no run of it is fired after.
    expect((await cli(node, ['unregister', OPS])).exitCode).toBe(0);
    expect(schedulesOf(node.email).map((row) => row.agent_id)).toEqual([SKILLS]);
    const opsRuns = () => serviceRuns(service.db, node.email).filter((run) => run.agent_id === OPS).length;
    const opsAtRemoval = opsRuns();
    await waitForTicksDone(node, 2, Date.now() + 2_000);
    expect(opsRuns()).toBe(opsAtRemoval);
    // --every none ends the other's schedule, the agent stays registered; what it had queued still runs here.
    expect((await cli(node, ['register', SKILLS, '--every', 'none'])).exitCode).toBe(0);
    expect(schedulesOf(node.email)).toEqual([]);
    await waitFor(
      async () =>
        serviceRuns(service.db, node.email).every((run) => run.status !== 'queued' && run.status !== 'running') ? true : undefined,
      'the runs of the schedules done',
      20_000,
    );

    expect(await daemon.stop('SIGTERM')).toBe(0);
    expectChargedForNodeResults(service.db, node.email);
    expect(daemon.events('daemon_stopped')).toHaveLength(1);
    expect(daemon.output).not.toMatch(/\u001b/);
    // A second start moves nothing again: an interval registered after the move (by an earlier release) is named,
    // with the register that makes its schedule, which works as printed.
    await register(node, SALES, '--every', '30s');
    const again = DaemonProcess.start(node);
    const left = await again.waitForEvent('schedule_not_moved');
    expect(left).toMatchObject({ agent: SALES, remedy: `swarm-node register ${SALES} --every 1m` });
    expect(await again.stop()).toBe(0);
    expect(again.events('schedule_moved')).toEqual([]);
    expect(schedulesOf(node.email)).toEqual([]);
    const fixed = await cli(node, ['register', SALES, '--every', '1m']);
    expect(fixed.exitCode, fixed.stderr).toBe(0);
    expect(schedulesOf(node.email).map((row) => [row.agent_id, row.interval_seconds])).toEqual([[SALES, 60]]);
    expect((await cli(node, ['register', SALES, '--every', 'none'])).exitCode).toBe(0);
    expect(schedulesOf(node.email)).toEqual([]);
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

  it('a capped interval moved: its cap holds at the service, two runs of 8 cents under 20 and then none, nothing lost or doubled', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 500, label: 'cap' });
    await register(node, SALES, '--every', '1s', '--daily-cap', '0.20');
    const daemon = DaemonProcess.start(node);
    await daemon.waitForEvent('schedule_moved');
    const [schedule] = schedulesOf(node.email);
    expect(schedule).toMatchObject({ agent_id: SALES, interval_seconds: 1, daily_cap_cents: 20 });
    await waitFor(
      async () =>
        service.db.prepare("SELECT 1 FROM schedule_skips WHERE schedule_id = ? AND reason = 'daily_cap'").get(schedule!.schedule_id)
          ? true
          : undefined,
      'an occurrence skipped for the cap',
      20_000,
    );
    // Held: the ticks go past the 1 s interval without a third run.
    await waitForTicksDone(node, 2, Date.now() + 1_500);
    expect(await daemon.stop('SIGINT')).toBe(0);
    const runs = serviceRuns(service.db, node.email);
    expect(runs.map((run) => [run.agent_id, run.status, run.charged_cents])).toEqual([
      [SALES, 'succeeded', 8],
      [SALES, 'succeeded', 8],
    ]);
    expect(expectChargedForNodeResults(service.db, node.email)).toMatchObject({ succeeded: 2, cents: 16 });
    // list tells what the cap counted: the service's spend on the agent today, not only the node's journal.
    const listed = await cli(node, ['--json', 'list']);
    expect(listed.json.registrations).toEqual([
      expect.objectContaining({ agent_id: SALES, daily_cap_cents: 20, spent_today_cents: 16, spent_today_from: 'service' }),
    ]);
  });
});
