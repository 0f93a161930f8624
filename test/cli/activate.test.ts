// activate in the CLI's own terms: --offer as another name for --tier (login and wizard call it --offer).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/api/server.js';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { payAndConfirm } from '../helpers/funnel.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';

let service: RunningService;
beforeAll(async () => {
  service = await startSvcApi();
});
afterAll(async () => {
  await service.close();
  removeTempDirs();
});

describe('activate --offer', () => {
  it('is accepted for --tier and activates the session', async () => {
    const email = uniqueEmail('offer-alias');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const { env } = nodeEnv(service.baseUrl);
    const result = await swarmNode(['--json', 'activate', '--offer', 'svc_starter_agents', '--email', email, '--payment', payment], { env });
    expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    expect(result.json).toMatchObject({ status: 'active', deploy_token: expect.any(String) });
  });

  it('is one option in the help: --tier, marked with its alias', async () => {
    const help = await swarmNode(['activate', '--help']);
    expect(help.stdout).toMatch(/--tier <tier_id> +the tier paid for \(alias: --offer\)/);
    expect(help.stdout).not.toMatch(/^\s+--offer/m);
  });

  it('with --tier naming another tier: exit 2 naming both, nothing sent', async () => {
    const { env } = nodeEnv(service.baseUrl);
    const result = await swarmNode(
      ['--json', 'activate', '--tier', 'svc_starter_agents', '--offer', 'dev_portal_execution_billing', '--email', uniqueEmail(), '--payment', 'pay_1'],
      { env },
    );
    expect(result.exitCode).toBe(2);
    expect(result.json.error.message).toBe('--tier svc_starter_agents and --offer dev_portal_execution_billing name different tiers');
  });
});
