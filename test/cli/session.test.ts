// activate, login, whoami, logout: the built binary against the real svc-api, spec §7 errors end to end.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeCredentials } from '../../src/node/identity/credentials.js';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { confirmPayment, createPayment, payAndConfirm, signIn } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { signedInNode } from './fixtures.js';

function forge(token: string): string {
  const [header, payload, signature] = token.split('.');
  // Same claims, signature of other bytes: the shape of a real token, not its key.
  return `${header}.${payload}.${signature!.slice(0, -4)}AAAA`;
}

describe('swarm-node activate', () => {
  const service = useSvcApi();

  it('activates a confirmed payment and prints the deploy token, its expiry, install_path, deploy_mode and the next step', async () => {
    const email = uniqueEmail('activate');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const { env } = nodeEnv(service.baseUrl);
    const json = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', payment], { env });
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.json).toMatchObject({
      status: 'active',
      install_path: '/opt/svc/swarm-node',
      deploy_mode: 'bare_metal',
      deploy_token: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
      next_step: 'sudo swarm-node install --deploy-token-file <file>',
    });
    const expiresIn = Date.parse(json.json.deploy_token_expires_at) - Date.now();
    expect(expiresIn).toBeGreaterThan(14 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(15 * 60_000);
    expect(json.stderr).toMatch(/warning: the deploy token is a secret/);

    // Activating again with the same payment issues a fresh token (DECISIONS.md); the human view lists the fields.
    const human = await swarmNode(['activate', '--session', json.json.session_id, '--payment', payment], { env });
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^deploy_token\s+\S{40,}$/m);
    expect(human.stdout).toMatch(/^install_path\s+\/opt\/svc\/swarm-node$/m);
    expect(human.stdout).toMatch(/^deploy_mode\s+bare_metal$/m);
    expect(human.stdout).toMatch(/^expires_at\s+\d{4}-\d\d-\d\dT/m);
    expect(human.stderr).toContain('Next:');
    expect(human.stderr).toContain('swarm-node install --deploy-token-file');
  });

  it('writes the deploy token to --deploy-token-file with mode 0600 instead of printing it', async () => {
    const email = uniqueEmail('activate-file');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const { env } = nodeEnv(service.baseUrl);
    const file = join(tempDir(), 'deploy-token');
    const result = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', payment, '--deploy-token-file', file], { env });
    expect(result.exitCode, result.stderr).toBe(0);
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(result.json.deploy_token).toBeUndefined();
    expect(result.json.deploy_token_file).toBe(file);
    expect(result.stdout + result.stderr).not.toContain(token);
    expect(result.json.next_step).toBe(`sudo swarm-node install --deploy-token-file ${file}`);
  });

  it('exits 7 with the spec remedy when the payment is not confirmed (--wait 0 tries once; --wait 1 waits about a second)', async () => {
    const email = uniqueEmail('pending');
    const payment = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const { env } = nodeEnv(service.baseUrl);
    const once = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', payment, '--wait', '0'], { env });
    expect(once.exitCode).toBe(7);
    expect(once.json.error).toMatchObject({ code: 'payment_not_confirmed', payment_id: payment, session_id: expect.any(String) });
    expect(once.json.error.remedy).toMatch(/^Wait for the payment provider to confirm the payment, then retry activation/);
    expect(once.json.error.remedy).toContain(`--session ${once.json.error.session_id}`);

    const started = Date.now();
    const waited = await swarmNode(['activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', payment, '--wait', '1'], { env });
    const elapsed = Date.now() - started;
    expect(waited.exitCode).toBe(7);
    expect(waited.stderr).toContain('is not confirmed yet after waiting 1s');
    expect(elapsed).toBeGreaterThanOrEqual(1000);
    expect(elapsed).toBeLessThan(10_000);

    // The remedy works: once confirmed, resuming the same session activates it.
    await confirmPayment(service.baseUrl, payment);
    const resumed = await swarmNode(['--json', 'activate', '--session', once.json.error.session_id, '--payment', payment, '--wait', '0'], { env });
    expect(resumed.exitCode, resumed.stdout).toBe(0);
    expect(resumed.json.session_id).toBe(once.json.error.session_id);
  });

  it('exits 5 on spec §7 session not found: another e-mail than the checkout one, or an unknown session', async () => {
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', uniqueEmail('payer'));
    const { env } = nodeEnv(service.baseUrl);
    const other = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--email', uniqueEmail('someone-else'), '--payment', payment], { env });
    expect(other.exitCode).toBe(5);
    expect(other.json.error.code).toBe('session_not_found');
    // spec §7's remedy, in the CLI's terms (test/cli/activate.test.ts).
    expect(other.json.error.remedy).toMatch(/^Run activate again with --email set to the checkout e-mail/);
    const unknown = await swarmNode(['activate', '--session', '00000000-0000-4000-8000-000000000000', '--payment', payment], { env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.stderr).toMatch(/error: .*session/i);
  });

  it('exits 5 for an unknown payment and 2 for usage errors, before anything is written', async () => {
    const { env, home } = nodeEnv(service.baseUrl);
    const unknown = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--email', uniqueEmail(), '--payment', 'pay_nosuchpayment'], { env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.json.error.code).toBe('payment_not_found');
    for (const args of [
      ['activate', '--tier', 'svc_starter_agents', '--email', 'a@example.com'],
      ['activate', '--tier', 'gold', '--email', 'a@example.com', '--payment', 'p'],
      ['activate', '--email', 'a@example.com', '--payment', 'p'],
      ['activate', '--tier', 'svc_starter_agents', '--email', 'a@example.com', '--payment', 'p', '--wait', '-1'],
      ['activate', '--tier', 'svc_starter_agents', '--email', 'a@example.com', '--payment', 'p', '--wait', 'soon'],
      ['activate', '--tier', 'svc_starter_agents', '--email', 'not-an-email', '--payment', 'p'],
    ]) {
      const result = await swarmNode(args, { env });
      expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect(existsSync(join(home, 'etc'))).toBe(false);
  });
});

describe('swarm-node login, whoami, logout', () => {
  const service = useSvcApi();

  it('login --email --offer issues the JWT, keeps it 0600, verifies it and shows tier and sections, never printing it', async () => {
    const email = uniqueEmail('login');
    const payment = await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
    const { env, home } = nodeEnv(service.baseUrl);
    const result = await swarmNode(['--json', 'login', '--email', email, '--offer', 'dev_portal_execution_billing', '--payment', payment], { env });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.json).toMatchObject({
      sub: email,
      tier: 'dev_portal_execution_billing',
      days_left: 30,
      docs_sections: ['dev-portal', 'execution-billing', 'agent-upload'],
      payment_rail: 'svc_pay_wallet:1202',
      chainId: 1202,
      nodeAccess: 'isolated_svc_server',
    });
    const file = join(home, 'etc', 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8')).jwt;
    expect(stored).toMatchObject({ sub: email, tier: 'dev_portal_execution_billing', exp: expect.any(Number), stored_at: expect.any(String) });
    expect(stored.token.split('.')).toHaveLength(3);
    expect(result.stdout + result.stderr).not.toContain(stored.token);

    // --tier is an alias of --offer (activate's name for the same value).
    const human = await swarmNode(['login', '--email', email, '--tier', 'dev_portal_execution_billing', '--payment', payment, '--merchant', 'merchant_local'], { env });
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^tier\s+dev_portal_execution_billing$/m);
    expect(human.stdout).toMatch(/^docs sections\s+dev-portal, execution-billing, agent-upload$/m);
  });

  it('login exits 7 while the payment is not confirmed, and 1 for another merchant or offer; nothing is stored', async () => {
    const email = uniqueEmail('unpaid');
    const payment = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const { env, home } = nodeEnv(service.baseUrl);
    const login = ['--json', 'login', '--email', email, '--offer', 'svc_starter_agents', '--payment', payment];
    const pending = await swarmNode(login, { env });
    expect(pending.exitCode).toBe(7);
    expect(pending.json.error.code).toBe('payment_not_confirmed');
    expect(pending.json.error.remedy).toContain(`swarm-node login --email ${email} --offer svc_starter_agents --payment <payment_id> again`);
    await confirmPayment(service.baseUrl, payment);
    const otherMerchant = await swarmNode([...login, '--merchant', 'merchant_other'], { env });
    expect(otherMerchant.exitCode).toBe(1);
    expect(otherMerchant.json.error.code).toBe('payment_mismatch');
    const otherOffer = await swarmNode(['--json', 'login', '--email', email, '--offer', 'dev_portal_execution_billing', '--payment', payment], { env });
    expect(otherOffer.exitCode).toBe(1);
    expect(otherOffer.json.error).toMatchObject({ code: 'payment_mismatch', remedy: expect.stringContaining('the offer svc_starter_agents') });
    expect(existsSync(join(home, 'etc', 'credentials.json'))).toBe(false);
  });

  it('login with a mistyped e-mail or payment id exits 5 (not found) with the remedy to use the checkout ones, never 7', async () => {
    const email = uniqueEmail('typo');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const { env, home } = nodeEnv(service.baseUrl);
    for (const [who, id] of [[email.replace('@', 'x@'), payment], [email, 'pay_mistyped']] as const) {
      const result = await swarmNode(['--json', 'login', '--email', who, '--offer', 'svc_starter_agents', '--payment', id], { env });
      expect(result.exitCode, result.stdout).toBe(5);
      expect(result.json.error.code).toBe('payment_not_found');
      expect(result.json.error.remedy).toMatch(/^Use the e-mail you paid with and the payment id from checkout: swarm-node login --email/);
    }
    expect(existsSync(join(home, 'etc', 'credentials.json'))).toBe(false);
  });

  it('stores a JWT from --token-file, --token-stdin or SVC_JWT once the service accepts it', async () => {
    const email = uniqueEmail('import');
    const token = await signIn(service.baseUrl, email);
    const file = join(tempDir(), 'jwt');
    writeFileSync(file, `  ${token}\n`, { mode: 0o600 });
    for (const [args, extra] of [
      [['login', '--token-file', file], {}],
      [['login', '--token-stdin'], { input: token }],
      [['login'], { env: { SVC_JWT: token } }],
    ] as const) {
      const node = nodeEnv(service.baseUrl);
      const result = await swarmNode(['--json', ...args], { ...extra, env: { ...node.env, ...('env' in extra ? extra.env : {}) } });
      expect(result.exitCode, `${args.join(' ')}: ${result.stdout}${result.stderr}`).toBe(0);
      expect(result.json).toMatchObject({ sub: email, tier: 'svc_starter_agents' });
      expect(JSON.parse(readFileSync(join(node.home, 'etc', 'credentials.json'), 'utf8')).jwt.token).toBe(token);
    }
  });

  it('refuses a forged token (exit 4) and a non-token (exit 2) without storing either; bad flag combinations are usage errors', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('forged'));
    const { env, home } = nodeEnv(service.baseUrl);
    const forged = await swarmNode(['--json', 'login', '--token-stdin'], { env, input: forge(token) });
    expect(forged.exitCode).toBe(4);
    expect(forged.json.error.code).toBe('unauthorized');
    expect(forged.stdout).not.toContain(forge(token));
    const garbage = await swarmNode(['login', '--token-stdin'], { env, input: 'hello world' });
    expect(garbage.exitCode).toBe(2);
    const empty = await swarmNode(['login', '--token-stdin'], { env, input: '' });
    expect(empty.exitCode).toBe(2);
    const huge = await swarmNode(['login', '--token-stdin'], { env, input: 'a'.repeat(20_000) });
    expect(huge.exitCode).toBe(2);
    for (const args of [
      ['login'],
      ['login', '--email', 'a@example.com'],
      ['login', '--offer', 'svc_starter_agents'],
      ['login', '--offer', 'platinum', '--email', 'a@example.com'],
      ['login', '--email', 'a@example.com', '--offer', 'svc_starter_agents', '--token-stdin'],
      // No proof of payment, and this home is not an enrolled node.
      ['login', '--email', 'a@example.com', '--offer', 'svc_starter_agents'],
      ['login', '--email', 'a@example.com', '--offer', 'svc_starter_agents', '--tier', 'dev_portal_execution_billing', '--payment', 'pay_1'],
      ['login', '--token-file', join(home, 'missing')],
    ]) {
      const result = await swarmNode(args, { env });
      expect(result.exitCode, `${args.join(' ')}: ${result.stderr}`).toBe(2);
    }
    expect(existsSync(join(home, 'etc', 'credentials.json'))).toBe(false);
  });

  it('whoami shows e-mail, tier, claims and days left; exits 4 when not signed in, forged or expired', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'whoami' });
    const who = await swarmNode(['--json', 'whoami'], { env: node.env });
    expect(who.exitCode, who.stderr).toBe(0);
    expect(who.json).toMatchObject({
      sub: node.email,
      tier: 'svc_starter_agents',
      chainId: 1202,
      nodeAccess: 'isolated_svc_server',
      days_left: 30,
      docs_sections: ['starter-agents', 'node-install', 'agent-upload'],
    });
    const human = await swarmNode(['whoami'], { env: node.env });
    expect(human.stdout).toMatch(new RegExp(`^email\\s+${node.email.replace('.', '\\.')}$`, 'm'));
    expect(human.stdout).toMatch(/^days left\s+30$/m);
    expect(human.stdout + human.stderr).not.toContain(node.token);

    const fresh = nodeEnv(service.baseUrl);
    const none = await swarmNode(['--json', 'whoami'], { env: fresh.env });
    expect(none.exitCode).toBe(4);
    expect(none.json.error).toMatchObject({ code: 'not_signed_in', remedy: expect.stringContaining('swarm-node login') });

    const credentialsFile = join(fresh.home, 'etc', 'credentials.json');
    const exp = Math.floor(Date.now() / 1000) + 3600;
    writeCredentials(credentialsFile, { jwt: { token: forge(node.token), sub: node.email, tier: 'svc_starter_agents', exp, stored_at: new Date().toISOString() } });
    const forged = await swarmNode(['--json', 'whoami'], { env: fresh.env });
    expect(forged.exitCode).toBe(4);
    expect(forged.json.error.code).toBe('unauthorized');
    expect(forged.json.error.message).toMatch(/does not accept the token/);

    writeCredentials(credentialsFile, { jwt: { token: node.token, sub: node.email, tier: 'svc_starter_agents', exp: 1_000_000, stored_at: new Date().toISOString() } });
    const expired = await swarmNode(['whoami'], { env: fresh.env });
    expect(expired.exitCode).toBe(4);
    expect(expired.stderr).toMatch(/error: the stored access token expired on 1970-01-12/);
  });

  it('logout forgets the JWT but keeps the node enrollment; a second logout is a no-op', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'logout' });
    const file = join(node.home, 'etc', 'credentials.json');
    const enrollment = { node_id: 'node_1', user_id: node.email, tier_id: 'svc_starter_agents', enrolled_at: new Date().toISOString() };
    writeCredentials(file, { ...JSON.parse(readFileSync(file, 'utf8')), node: enrollment });
    const out = await swarmNode(['--json', 'logout'], { env: node.env });
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.json).toEqual({ signed_out: true, sub: node.email });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ node: enrollment });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await swarmNode(['whoami'], { env: node.env })).exitCode).toBe(4);
    const again = await swarmNode(['logout'], { env: node.env });
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain('Not signed in');
  });
});
