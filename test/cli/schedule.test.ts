// swarm-node schedule (docs/api.md "Schedules"): the built binary against the real svc-api. add shows what the
// schedule costs a day and a month from its own fire times, and its next ones; list, show, pause, resume and rm act
// on it; bad input is refused before anything is sent, and a missing schedule exits 5.
import { describe, expect, it } from 'vitest';
import { swarmNode } from '../helpers/cli.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { join } from 'node:path';
import { readCredentials } from '../../src/node/identity/credentials.js';
import { httpRequest } from '../helpers/http.js';
import { signedInNode } from './fixtures.js';

const OPS = 'agent_ops_monitor_004';

describe('swarm-node schedule', () => {
  const service = useSvcApi();

  it('add prices it per day and per month, then list, show, pause, resume and rm act on it', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'schedule-cli', enroll: false });
    const added = await swarmNode(['schedule', 'add', OPS, '--every', '1h', '--daily-cap', '0.50'], { env: node.env });
    expect(added.exitCode, added.stderr).toBe(0);
    // 24 runs of $0.04 a day is $0.96, held to the $0.50 cap; 720 runs a month, held to 30 capped days.
    expect(added.stdout).toContain('Costs up to $0.50 a day (24 runs of $0.04) and $15.00 a month (720 runs), capped at $0.50 a day.');
    expect(added.stdout).toMatch(/^Schedule [0-9a-f-]{36}: agent_ops_monitor_004, every 3600 s in UTC \(tz \S+\); active\./);
    expect(added.stdout).toMatch(/Next: (\d{4}-\d\d-\d\d \d\d:00:00Z, ){4}\d{4}-\d\d-\d\d \d\d:00:00Z/);
    const cron = await swarmNode(['--json', 'schedule', 'add', OPS, '--cron', '30 2 * * 1-5', '--tz', 'Europe/Berlin'], { env: node.env });
    expect(cron.exitCode, cron.stderr).toBe(0);
    expect(cron.json).toMatchObject({ cron: '30 2 * * 1-5', time_zone: 'Europe/Berlin', cost: { runs_per_day: expect.any(Number) } });
    // Weekdays only: about 22 of the next 30 days, counted from the fire times themselves.
    expect((cron.json as { cost: { runs_per_month: number } }).cost.runs_per_month).toBeGreaterThanOrEqual(20);
    expect((cron.json as { cost: { runs_per_month: number } }).cost.runs_per_month).toBeLessThanOrEqual(23);
    const id = (cron.json as { schedule_id: string }).schedule_id;

    const past = { from: new Date(Date.now() - 3 * 86_400_000).toISOString(), to: new Date(Date.now() - 86_400_000).toISOString() };
    const refused = await swarmNode(['schedule', 'backfill', id, '--from', past.from, '--to', past.to], { env: node.env });
    // Weekdays at 02:30 over two days: at most 2 runs, under the bound, so no question; no node serves it here.
    expect(refused.stdout).toMatch(/^Ran [0-2] occurrence\(s\) for up to \$0\.0[0-8]; 0 had a run already\.$/);
    const wide = { from: new Date(Date.now() - 30 * 86_400_000).toISOString(), to: past.to };
    const unasked = await swarmNode(['schedule', 'backfill', id, '--from', wide.from, '--to', wide.to], { env: node.env });
    expect(unasked.exitCode).toBe(2);
    expect(unasked.stderr).toContain('--yes');
    const listed = await swarmNode(['schedule', 'list'], { env: node.env });
    expect(listed.stdout).toMatch(/^ID\s+AGENT\s+WHEN\s+ZONE\s+STATE\s+NEXT\n/);
    expect(listed.stdout).toContain('cron 30 2 * * 1-5');
    const paused = await swarmNode(['--json', 'schedule', 'pause', id], { env: node.env });
    expect(paused.json).toMatchObject({ paused: true, pause_reason: 'user' });
    const shown = await swarmNode(['schedule', 'show', id], { env: node.env });
    expect(shown.stdout).toContain('paused (user)');
    expect((await swarmNode(['schedule', 'resume', id], { env: node.env })).stdout).toMatch(/^Resumed /);
    expect((await swarmNode(['schedule', 'rm', id], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['schedule', 'rm', id, '--yes'], { env: node.env })).stdout).toBe(`Removed ${id}.`);
    const gone = await swarmNode(['schedule', 'show', id], { env: node.env });
    expect(gone.exitCode).toBe(5);
    expect(gone.stderr).toContain('schedule');
    // Signing out revokes the token that made the first schedule: logout says it paused it.
    const listedJson = await swarmNode(['--json', 'schedule', 'list'], { env: node.env });
    const first = (listedJson.json as { schedules: Array<{ schedule_id: string }> }).schedules[0]!.schedule_id;
    const out = await swarmNode(['logout'], { env: node.env });
    expect(out.stdout).toContain(`Paused schedule ${first} (creator_revoked): swarm-node schedule resume ${first} after you sign in.`);
  });

  it('refuses a bad schedule: usage before any call, the service with its code', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'schedule-bad', enroll: false });
    const offline = { ...node.env, SVC_BASE_URL: 'http://127.0.0.1:9' };
    for (const args of [['--every', '30s'], ['--every', '1h', '--cron', '@hourly'], [], ['--every', '1h', '--overlap', 'buffer_all']]) {
      const refused = await swarmNode(['schedule', 'add', OPS, ...args], { env: offline });
      expect(refused.exitCode, `${args.join(' ')}: ${refused.stderr}`).toBe(2);
    }
    const badZone = await swarmNode(['schedule', 'add', OPS, '--cron', '@daily', '--tz', 'Mars/Olympus'], { env: node.env });
    expect(badZone.exitCode).toBe(2);
    expect(badZone.stderr).toContain('IANA');
    const help = await swarmNode(['schedule', 'add', '--help'], { env: node.env });
    expect(help.stdout).toContain('Example:\n  $ swarm-node schedule add agent_ops_monitor_004 --every 1h');
  });

  it("add --here pins it to this host's node; show says an interval under a minute was kept from a node's daemon", async () => {
    const node = await signedInNode(service.baseUrl, { label: 'schedule-here' });
    const own = readCredentials(join(node.home, 'etc', 'credentials.json')).node!;
    const here = await swarmNode(['--json', 'schedule', 'add', OPS, '--every', '1h', '--here'], { env: node.env });
    expect(here.exitCode, here.stderr).toBe(0);
    expect(here.json).toMatchObject({ node_id: own.node_id, interval_seconds: 3600 });
    const both = await swarmNode(['schedule', 'add', OPS, '--every', '1h', '--here', '--node-id', own.node_id], { env: node.env });
    expect(both.exitCode).toBe(2);
    expect((await swarmNode(['register', OPS], { env: node.env })).exitCode).toBe(0);
    const moved = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/schedules`, {
      method: 'POST',
      token: own.credential!,
      body: {
        registrations: [{ agent_id: OPS, every_seconds: 30, daily_cap_cents: null, paused_reason: null, input: null, next_run_at: null }],
      },
    });
    expect(moved.status, moved.text).toBe(200);
    const shown = await swarmNode(['schedule', 'show', moved.body.schedules[0].schedule_id], { env: node.env });
    expect(shown.stdout).toContain("every 30 s (kept from a node's daemon: new schedules are at least 1 min apart) in UTC");
  });
});
