// activate, login, whoami, logout: the built binary against the real svc-api, spec §7 errors end to end.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeCredentials } from '../../src/node/identity/credentials.js';
import { asPrinted, nodeEnv, swarmNode } from '../helpers/cli.js';
import { confirmPayment, createPayment, payAndConfirm, signIn, signInPaid } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { SWARM_NODE_BIN, useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { loginByMail, signedInNode } from './fixtures.js';
import { printedCommands } from './remedy-runner.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';

function forge(token: string): string {
  const [header, payload, signature] = token.split('.');
  // Same claims, signature of other bytes: the shape of a real token, not its key.
  return `${header}.${payload}.${signature!.slice(0, -4)}AAAA`;
}

describe('swarm-node activate', () => {
  const service = useSvcApi();

  /** A payer signed in on a fresh home by mail (activation needs the recent sign-in of the session's user). */
  async function signedInPayer(
    label: string,
    tier = 'svc_starter_agents',
  ): Promise<{ email: string; env: Record<string, string>; home: string }> {
    const email = uniqueEmail(label);
    await payAndConfirm(service.baseUrl, tier, email);
    const node = nodeEnv(service.baseUrl);
    const login = await loginByMail(node.env, email);
    expect(login.exitCode, login.stderr).toBe(0);
    return { email, ...node };
  }

  it('activates a confirmed payment as the signed-in user and prints the deploy token, its expiry, install_path, deploy_mode and the next step; once', async () => {
    const { email, env } = await signedInPayer('activate');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const json = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--payment', payment], { env });
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.json).toMatchObject({
      status: 'active',
      install_path: '/opt/svc/swarm-node',
      deploy_mode: 'bare_metal',
      deploy_token: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
    });
    const expiresIn = Date.parse(json.json.deploy_token_expires_at) - Date.now();
    expect(expiresIn).toBeGreaterThan(14 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(15 * 60_000);
    expect(json.stderr).toMatch(/warning: the deploy token is a secret/);

    // The session gave its token: activating it again mints none (docs/api.md "activate").
    const again = await swarmNode(['activate', '--session', json.json.session_id, '--payment', payment], { env });
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toMatch(/session is active already/);
    expect(again.stderr).toContain('swarm-node enroll');
    expect(again.stdout).toBe('');

    const human = await swarmNode(
      ['activate', '--tier', 'svc_starter_agents', '--payment', await payAndConfirm(service.baseUrl, 'svc_starter_agents', email)],
      { env },
    );
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^deploy_token\s+\S{40,}$/m);
    expect(human.stdout).toMatch(/^install_path\s+\/opt\/svc\/swarm-node$/m);
    expect(human.stdout).toMatch(/^deploy_mode\s+bare_metal$/m);
    expect(human.stdout).toMatch(/^expires_at\s+\d{4}-\d\d-\d\dT/m);
    expect(human.stderr).toContain('Next:');
    expect(human.stderr).toContain('install --deploy-token-file');
  });

  it('writes the deploy token to --deploy-token-file with mode 0600 instead of printing it', async () => {
    const { email, env } = await signedInPayer('activate-file');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const file = join(tempDir(), 'deploy-token');
    const result = await swarmNode(
      ['--json', 'activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', payment, '--deploy-token-file', file],
      { env },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(result.json.deploy_token).toBeUndefined();
    expect(result.json.deploy_token_file).toBe(file);
    expect(result.stdout + result.stderr).not.toContain(token);
    expect(result.json.next_step).toContain(`install --deploy-token-file ${file}`);
    // sudo does not look where this program is (it is on no PATH before install): the step names it as run here.
    const [install] = printedCommands(result.json.next_step);
    expect(install).toMatchObject({ sudo: 'sudo ', args: expect.arrayContaining(['install']) });
    expect(resolve(process.cwd(), install!.program)).toBe(SWARM_NODE_BIN);
  });

  it('exits 7 with the spec remedy when the payment is not confirmed (--wait 0 tries once; --wait 1 waits about a second)', async () => {
    // Signed in with a top-up of theirs, the user buys a node and activates before the provider confirms.
    const { email, env } = await signedInPayer('pending', 'svc_pay_wallet_fund');
    const payment = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const once = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--payment', payment, '--wait', '0'], { env });
    expect(once.exitCode).toBe(7);
    expect(once.json.error).toMatchObject({ code: 'payment_not_confirmed', payment_id: payment, session_id: expect.any(String) });
    expect(once.json.error.remedy).toMatch(/^Wait for the payment provider to confirm the payment, then retry activation/);
    expect(once.json.error.remedy).toContain(`--session ${once.json.error.session_id}`);

    const waited = await swarmNode(['activate', '--tier', 'svc_starter_agents', '--payment', payment, '--wait', '1'], { env });
    expect(waited.exitCode).toBe(7);
    expect(waited.stderr).toContain('is not confirmed yet after waiting 1s');

    // The remedy works: once confirmed, resuming the same session activates it.
    await confirmPayment(service.baseUrl, payment);
    const resumed = await swarmNode(['--json', 'activate', '--session', once.json.error.session_id, '--payment', payment, '--wait', '0'], {
      env,
    });
    expect(resumed.exitCode, resumed.stdout).toBe(0);
    expect(resumed.json.session_id).toBe(once.json.error.session_id);
  });

  it('exits 5 on spec §7 session not found: another e-mail than the checkout one, or an unknown session', async () => {
    const { email, env } = await signedInPayer('payer');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const other = await swarmNode(
      ['--json', 'activate', '--tier', 'svc_starter_agents', '--email', uniqueEmail('someone-else'), '--payment', payment],
      { env },
    );
    expect(other.exitCode).toBe(5);
    expect(other.json.error.code).toBe('session_not_found');
    // spec §7's remedy, in the CLI's terms (test/cli/activate.test.ts).
    expect(other.json.error.remedy).toMatch(/^Run activate again with --email set to the checkout e-mail/);
    const unknown = await swarmNode(['activate', '--session', '00000000-0000-4000-8000-000000000000', '--payment', payment], { env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.stderr).toMatch(/error: .*session/i);
  });

  it('exits 4 when not signed in, 5 for an unknown payment and 2 for usage errors, before anything is written', async () => {
    const bare = nodeEnv(service.baseUrl);
    const unsigned = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--payment', 'pay_x'], { env: bare.env });
    expect(unsigned.exitCode).toBe(4);
    expect(unsigned.json.error).toMatchObject({ code: 'not_signed_in', remedy: `Sign in first: ${asPrinted(bare, 'swarm-node login')}` });
    const { env, home } = await signedInPayer('usage');
    const unknown = await swarmNode(['--json', 'activate', '--tier', 'svc_starter_agents', '--payment', 'pay_nosuchpayment'], { env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.json.error.code).toBe('payment_not_found');
    const credentials = readFileSync(join(home, 'etc', 'credentials.json'), 'utf8');
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
    expect(readFileSync(join(home, 'etc', 'credentials.json'), 'utf8')).toBe(credentials);
    expect(existsSync(join(bare.home, 'etc'))).toBe(false);
  });
});

describe('swarm-node login, whoami, logout', () => {
  const service = useSvcApi();

  it('login --email mails a code, takes it, keeps the JWT 0600, verifies it and shows tier and sections, never printing it', async () => {
    const email = uniqueEmail('login');
    await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
    const { env, home } = nodeEnv(service.baseUrl);
    // No --offer: the offer the address paid for is found once the code proved the inbox.
    const result = await loginByMail(env, email, ['--json']);
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
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored.jwt).toMatchObject({
      sub: email,
      tier: 'dev_portal_execution_billing',
      exp: expect.any(Number),
      stored_at: expect.any(String),
    });
    expect(stored.pending_sign_in).toBeUndefined();
    expect(stored.jwt.token.split('.')).toHaveLength(3);
    expect(result.stdout + result.stderr).not.toContain(stored.jwt.token);

    // --tier is an alias of --offer (activate's name for the same value); the code comes from --code-file here.
    const sent = await swarmNode(['--json', 'login', '--email', email, '--send-code'], { env });
    const mail = await nextMailTo(email, {
      match: (each) => each.text.includes(`reference ${String(sent.json.challenge_id).slice(0, 8)}`),
    });
    const codeFile = join(tempDir(), 'code');
    writeFileSync(codeFile, `${signInCodeOf(mail)}\n`);
    const human = await swarmNode(
      ['login', '--email', email, '--tier', 'dev_portal_execution_billing', '--code-file', codeFile, '--merchant', 'merchant_local'],
      { env },
    );
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stderr).toContain(
      `Using the sign-in code sent to ${email} earlier (reference ${String(sent.json.challenge_id).slice(0, 8)}`,
    );
    expect(human.stdout).toMatch(/^tier\s+dev_portal_execution_billing$/m);
    expect(human.stdout).toMatch(/^docs sections\s+dev-portal, execution-billing, agent-upload$/m);
  });

  it('refuses a wrong code (exit 4) and an address that paid for nothing (exit 5), each with a login that works as printed; nothing is stored', async () => {
    const email = uniqueEmail('unpaid');
    const { env, home } = nodeEnv(service.baseUrl);
    const nothing = await loginByMail(env, email, ['--json']);
    expect(nothing.exitCode).toBe(5);
    expect(nothing.json.error).toMatchObject({
      code: 'payment_not_found',
      remedy: expect.stringContaining(`swarm-node login --email ${email}`),
    });
    await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const sent = await swarmNode(['--json', 'login', '--email', email, '--send-code'], { env });
    expect(sent.exitCode).toBe(0);
    const wrong = await swarmNode(['--json', 'login', '--email', email], { env, input: '0000-0001\n' });
    expect(wrong.exitCode).toBe(4);
    expect(wrong.json.error).toMatchObject({
      code: 'email_code_invalid',
      remedy: expect.stringContaining(`swarm-node login --email ${email}`),
    });
    const another = await swarmNode(['--json', 'login', '--email', email, '--offer', 'dev_portal_execution_billing'], {
      env,
      input: '0000-0002\n',
    });
    expect(another.exitCode).toBe(4);
    const credentials = JSON.parse(readFileSync(join(home, 'etc', 'credentials.json'), 'utf8'));
    expect(credentials.jwt).toBeUndefined();
    // The remedy, run as printed (its code on stdin), signs in.
    expect((await loginByMail(env, email)).exitCode).toBe(0);
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

  it('refuses a forged token and a non-token (exit 4: not a valid token) without storing either; bad flag combinations are usage errors', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('forged'));
    const { env, home } = nodeEnv(service.baseUrl);
    const forged = await swarmNode(['--json', 'login', '--token-stdin'], { env, input: forge(token) });
    expect(forged.exitCode).toBe(4);
    expect(forged.json.error.code).toBe('unauthorized');
    expect(forged.stdout).not.toContain(forge(token));
    const garbage = await swarmNode(['login', '--token-stdin'], { env, input: 'hello world' });
    expect([garbage.exitCode, garbage.stderr]).toEqual([
      4,
      expect.stringContaining('that is not a JWT (three base64url parts separated by dots)'),
    ]);
    const notJson = await swarmNode(['--json', 'login', '--token-stdin'], { env, input: 'aGVsbG8.d29ybGQ.c2ln' });
    expect([notJson.exitCode, notJson.json.error]).toEqual([
      4,
      expect.objectContaining({ code: 'unauthorized', message: 'that is not a JWT: its payload is not JSON' }),
    ]);
    const empty = await swarmNode(['login', '--token-stdin'], { env, input: '' });
    expect(empty.exitCode).toBe(2);
    const huge = await swarmNode(['login', '--token-stdin'], { env, input: 'a'.repeat(20_000) });
    expect(huge.exitCode).toBe(2);
    for (const args of [
      // No terminal to ask the address on, and this home knows none.
      ['login'],
      ['login', '--offer', 'svc_starter_agents'],
      ['login', '--offer', 'platinum', '--email', 'a@example.com'],
      ['login', '--email', 'not-an-address'],
      ['login', '--email', 'a@example.com', '--offer', 'svc_starter_agents', '--token-stdin'],
      ['login', '--email', 'a@example.com', '--send-code', '--code-file', join(home, 'code')],
      ['login', '--email', 'a@example.com', '--offer', 'svc_starter_agents', '--tier', 'dev_portal_execution_billing'],
      ['login', '--email', 'a@example.com', '--payment', 'pay_1'],
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
    writeCredentials(credentialsFile, {
      jwt: { token: forge(node.token), sub: node.email, tier: 'svc_starter_agents', exp, stored_at: new Date().toISOString() },
    });
    const forged = await swarmNode(['--json', 'whoami'], { env: fresh.env });
    expect(forged.exitCode).toBe(4);
    expect(forged.json.error.code).toBe('unauthorized');
    expect(forged.json.error.message).toMatch(/does not accept the token/);

    writeCredentials(credentialsFile, {
      jwt: { token: node.token, sub: node.email, tier: 'svc_starter_agents', exp: 1_000_000, stored_at: new Date().toISOString() },
    });
    const expired = await swarmNode(['whoami'], { env: fresh.env });
    expect(expired.exitCode).toBe(4);
    expect(expired.stderr).toMatch(/error: the stored access token expired on 1970-01-12/);
  });

  it('logout revokes the JWT at the service and forgets it, keeping the node enrollment; a second logout is a no-op', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'logout' });
    const file = join(node.home, 'etc', 'credentials.json');
    const enrollment = { node_id: 'node_1', user_id: node.email, tier_id: 'svc_starter_agents', enrolled_at: new Date().toISOString() };
    writeCredentials(file, { ...JSON.parse(readFileSync(file, 'utf8')), node: enrollment });
    const out = await swarmNode(['--json', 'logout'], { env: node.env });
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.json).toEqual({ signed_out: true, sub: node.email, revoked: 1, everywhere: false, local_only: false });
    // A copy of it taken from this disk before is refused by the service now.
    expect((await apiClient(service.baseUrl).post('/v1/auth/verify', { token: node.token })).body).toEqual({
      valid: false,
      reason: 'revoked',
    });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ node: enrollment });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await swarmNode(['whoami'], { env: node.env })).exitCode).toBe(4);
    const again = await swarmNode(['logout'], { env: node.env });
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain('Not signed in');
  });

  it('logout --everywhere revokes every token of the user; with the service out of reach it forgets nothing (exit 6) unless --local', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'everywhere', enroll: false });
    const elsewhere = await signInPaid(service.baseUrl, node.email);
    const unreachable = await swarmNode(['--json', 'logout', '--everywhere'], { env: { ...node.env, SVC_BASE_URL: 'http://127.0.0.1:9' } });
    expect(unreachable.exitCode).toBe(6);
    expect(JSON.parse(readFileSync(join(node.home, 'etc', 'credentials.json'), 'utf8')).jwt).toBeDefined();
    const out = await swarmNode(['logout', '--everywhere'], { env: node.env });
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.stdout).toContain(`Signed out ${node.email} everywhere: 2 token(s) revoked.`);
    expect((await apiClient(service.baseUrl).post('/v1/auth/verify', { token: elsewhere })).body).toEqual({
      valid: false,
      reason: 'revoked',
    });
    const second = await signedInNode(service.baseUrl, { label: 'local', enroll: false });
    const local = await swarmNode(['logout', '--local'], { env: { ...second.env, SVC_BASE_URL: 'http://127.0.0.1:9' } });
    expect(local.exitCode).toBe(0);
    expect(local.stdout).toMatch(/the service was not told/);
    expect((await apiClient(service.baseUrl).post('/v1/auth/verify', { token: second.token })).body.valid).toBe(true);
  });
});
