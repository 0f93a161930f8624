// activate in the CLI's own terms: --offer as another name for --tier (login and wizard call it --offer), and the
// service's errors naming the flags the person typed instead of the body fields they filled.
import { describe, expect, it } from 'vitest';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { payAndConfirm } from '../helpers/funnel.js';
import { loginByMail } from './fixtures.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const service = useSvcApi();

/** A body field named as such; `<tier_id>` in a usage line is a placeholder, as in --help. */
const BODY_FIELDS = /(?<!<)\b(user_id|tier_id|session_id|payment_id)\b(?!>)/;

/** A payer signed in on a fresh home (activation needs the session user's recent sign-in). */
async function signedInPayer(label: string): Promise<{ email: string; env: Record<string, string>; payment: string }> {
  const email = uniqueEmail(label);
  const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
  const { env } = nodeEnv(service.baseUrl);
  expect((await loginByMail(env, email)).exitCode).toBe(0);
  return { email, env, payment };
}

describe('activate --offer', () => {
  it('is accepted for --tier and activates the session', async () => {
    const { email, env, payment } = await signedInPayer('offer-alias');
    const result = await swarmNode(['--json', 'activate', '--offer', 'svc_starter_agents', '--email', email, '--payment', payment], {
      env,
    });
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
      [
        '--json',
        'activate',
        '--tier',
        'svc_starter_agents',
        '--offer',
        'dev_portal_execution_billing',
        '--email',
        uniqueEmail(),
        '--payment',
        'pay_1',
      ],
      { env },
    );
    expect(result.exitCode).toBe(2);
    expect(result.json.error.message).toBe('--tier svc_starter_agents and --offer dev_portal_execution_billing name different tiers');
  });
});

describe("activate's errors name its flags, not the service's body fields", () => {
  it('session not found (the checkout e-mail differs): the remedy says --email and gives the command, which works as printed', async () => {
    const { email, env, payment } = await signedInPayer('payer');
    const args = ['activate', '--tier', 'svc_starter_agents', '--email', uniqueEmail('someone-else'), '--payment', payment];
    const human = await swarmNode(args, { env });
    expect(human.exitCode).toBe(5);
    expect(human.stderr).toContain(
      `Run activate again with --email set to the checkout e-mail the payment was made with, the address you signed in with (${email})`,
    );
    const command = `swarm-node activate --tier svc_starter_agents --payment ${payment}`;
    expect(human.stderr).toContain(command);
    expect(human.stderr).not.toMatch(BODY_FIELDS);
    const json = await swarmNode(['--json', ...args], { env });
    expect(json.json.error.code).toBe('session_not_found');
    expect(json.json.error.remedy).not.toMatch(BODY_FIELDS);
    const asPrinted = await swarmNode(command.split(' ').slice(1), { env });
    expect(asPrinted.exitCode, asPrinted.stderr).toBe(0);
  });

  it('a value refused, here or by the service, is named by its flag', async () => {
    const { env } = await signedInPayer('refused');
    const email = await swarmNode(
      ['activate', '--tier', 'svc_starter_agents', '--email', 'not-an-address', '--payment', 'pay_1', '--wait', '0'],
      { env },
    );
    expect(email.exitCode).toBe(2);
    expect(email.stderr).toMatch(/error: --email "not-an-address" is not an e-mail address/);
    expect(email.stderr).not.toMatch(BODY_FIELDS);
    const session = await swarmNode(['activate', '--session', 'sess_nope', '--payment', 'pay_1', '--wait', '0'], { env });
    expect(session.exitCode).toBe(2);
    expect(session.stderr).toMatch(/error: --session: must match/);
    expect(session.stderr).not.toMatch(BODY_FIELDS);
  });
});
