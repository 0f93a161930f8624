// Budgets at the service and the daemon (docs/api.md "Budgets"): a run refused 402 budget_exceeded pauses its agent
// until the cap resets, asking no more (not the insufficient-balance path, which re-checks the wallet and resumes
// at once); `swarm-node run` exits 11 with the remedy; register --daily-cap is the agent's daily cap at the service.
import { describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { cli, DaemonProcess, register, RequestLog, signedInNode, waitForTicksDone } from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
const DAY_MS = 86_400_000;

describe('budgets and the daemon', () => {
  const requests = new RequestLog();
  const service = useSvcApi(() => ({ logger: { level: 'info', stream: requests } }));

  it('pauses the agent until the cap resets after 402 budget_exceeded, asking no more; run exits 11 with the remedy', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 1000, label: 'budget' });
    const capped = await cli(node, ['budget', 'set', '--daily', '0.08', '--agent', OPS]);
    expect(capped.exitCode, capped.stderr).toBe(0);
    await register(node, OPS, '--every', '1s');
    const daemon = DaemonProcess.start(node);
    await daemon.waitForCount('run_succeeded', 2, 20_000);
    const paused = await daemon.waitForEvent('agent_paused', (event) => event.reason === 'budget_exceeded', 20_000);
    const midnight = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS + DAY_MS).toISOString();
    expect(paused).toMatchObject({ agent: OPS, period: 'day', cap_cents: '8', spent_cents: '8', until: midnight });
    // Ticks go on; the paused agent is not asked for again (one refusal in all), and no wallet re-check resumes it.
    await waitForTicksDone(node, 5);
    expect(requests.executes(402)).toBe(1);
    expect(daemon.events('agent_resumed')).toEqual([]);
    expect(daemon.events('run_succeeded')).toHaveLength(2);

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
