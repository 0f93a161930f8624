// Budgets at the service and the daemon (docs/api.md "Budgets"): an occurrence of a schedule refused for the budget
// pauses it at the service until the budget allows a run again; `swarm-node run` exits 11 with the remedy;
// register --daily-cap is the agent's daily cap at the service.
import { describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/funnel.js';
import { cli, DaemonProcess, register, signedInNode, waitForTicksDone } from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
const DAY_MS = 86_400_000;

describe('budgets and the daemon', () => {
  const service = useSvcApi();

  it("pauses the agent's schedule at the service after budget_exceeded, its runs charged to the cap and no more; run exits 11 with the remedy", async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 1000, label: 'budget' });
    const capped = await cli(node, ['budget', 'set', '--daily', '0.08', '--agent', OPS]);
    expect(capped.exitCode, capped.stderr).toBe(0);
    await register(node, OPS, '--every', '1s');
    const daemon = DaemonProcess.start(node);
    await daemon.waitForCount('run_succeeded', 2, 20_000);
    // The third occurrence is refused for the budget: the schedule pauses (it resumes by itself when the day resets).
    const pause = () =>
      (
        service.db.prepare('SELECT pause_reason FROM schedules WHERE user_id = ?').get(node.email.toLowerCase()) as {
          pause_reason: string | null;
        }
      ).pause_reason;
    await waitFor(async () => (pause() === 'budget_exceeded' ? true : undefined), 'the schedule paused for the budget', 20_000);
    const midnight = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS + DAY_MS).toISOString();
    // Ticks go on; nothing more runs.
    await waitForTicksDone(node, 3, Date.now() + 1_500);
    expect(daemon.events('run_succeeded')).toHaveLength(2);
    expect(pause()).toBe('budget_exceeded');

    const run = await cli(node, ['run', OPS]);
    expect(run.exitCode, run.stderr).toBe(11);
    expect(run.stderr).toContain(`budget of $0.08 would be exceeded: $0.08 spent, a run costs $0.04; it resets at ${midnight}`);
    expect(run.stderr).toContain(`swarm-node budget set --daily 0.12 --agent ${OPS}`);
    const json = await cli(node, ['--json', 'run', OPS]);
    expect(json.exitCode).toBe(11);
    expect(JSON.parse(json.stdout).error).toMatchObject({
      code: 'budget_exceeded',
      cap_cents: 8,
      spent_cents: 8,
      price_cents: 4,
      resets_at: midnight,
    });
    expect(await daemon.stop()).toBe(0);
  });

  it('register --daily-cap sets the agent daily cap at the service, and none removes it', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'dailycap' });
    await register(node, OPS, '--daily-cap', '1.50');
    const budgets = () => httpRequest(`${service.baseUrl}/v1/swarm/budgets`, { token: node.token });
    expect((await budgets()).body.budgets).toEqual([expect.objectContaining({ agent_id: OPS, period: 'day', cap_cents: 150 })]);
    const listed = await cli(node, ['budget', 'list']);
    expect(listed.stdout).toMatch(new RegExp(`${OPS}\\s+day\\s+\\$1\\.50\\s+\\$0\\.00`));
    await register(node, OPS, '--daily-cap', 'none');
    expect((await budgets()).body.budgets).toEqual([]);
  });
});
