// `svc-api sandbox pay|confirm|fund`: the built binary against a spawned svc-api --sandbox, checked through the
// sandbox API and the service (a payment the service accepts, a wallet credited).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestService } from '../helpers/svc-api.js';
import { runProgram, type CliResult } from '../helpers/cli.js';
import { MERCHANT_ID, mailedCode, signIn } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { SVC_API_BIN, spawnSvcApi, startSvcApi, type SpawnedSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';

let api: SpawnedSvcApi;
beforeAll(async () => {
  api = await spawnSvcApi();
});
afterAll(async () => {
  await api.stop();
  removeTempDirs();
});

function sandbox(args: string[], baseUrl = api.baseUrl): Promise<CliResult> {
  return runProgram('node', [SVC_API_BIN, 'sandbox', ...args, '--base-url', baseUrl], { env: {} });
}

describe('svc-api sandbox pay and confirm', () => {
  it('pay makes a PENDING checkout at the tier price; confirm waits for the webhook; the service then accepts the payment', async () => {
    const email = uniqueEmail('sandbox-cli');
    const paid = await sandbox(['pay', '--offer', 'svc_starter_agents', '--email', email, '--json']);
    expect(paid.exitCode, paid.stderr).toBe(0);
    expect(paid.json).toMatchObject({
      status: 'PENDING',
      offer_id: 'svc_starter_agents',
      customer_email: email,
      amount_cents: 4900,
      webhook_delivered: false,
    });
    const paymentId = paid.json.payment_id as string;
    expect((await apiClient(api.baseUrl).get(`/sandbox/payments/${paymentId}`)).body.status).toBe('PENDING');

    const confirmed = await sandbox(['confirm', paymentId]);
    expect(confirmed.exitCode, confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toContain(`payment   ${paymentId}`);
    expect(confirmed.stdout).toContain('status    CONFIRMED (the service has the webhook)');
    expect((await apiClient(api.baseUrl).get(`/sandbox/payments/${paymentId}`)).body).toMatchObject({
      status: 'CONFIRMED',
      webhook_delivered: true,
    });
    // At once, with no wait of its own: the service has the confirmation, and the payer signs in by mail.
    const token = await apiClient(api.baseUrl).post('/v1/auth/issue-token', {
      status: 'CONFIRMED',
      offer_id: 'svc_starter_agents',
      customer_email: email,
      merchant_id: MERCHANT_ID,
      ...(await mailedCode(api.baseUrl, email)),
    });
    expect(token.status, token.text).toBe(201);
  });

  it('pay --amount in dollars; the human output names the next step', async () => {
    const paid = await sandbox(['pay', '--offer', 'dev_portal_execution_billing', '--email', uniqueEmail('amount'), '--amount', '12.50']);
    expect(paid.exitCode, paid.stderr).toBe(0);
    const paymentId = /payment {3}(pay_[0-9a-f]+)/.exec(paid.stdout)?.[1];
    expect(paid.stdout).toContain('amount    $12.50');
    expect(paid.stdout).toContain(`Next: svc-api sandbox confirm ${paymentId}`);
    expect((await apiClient(api.baseUrl).get(`/sandbox/payments/${paymentId}`)).body.amount_cents).toBe(1250);
  });

  it('in a checkout, whose svc-api is on no PATH, the next steps name ./bin/svc-api.js and ./bin/swarm-node.js, which run as printed', async () => {
    const checkout = join(SVC_API_BIN, '..', '..');
    const path = (process.env.PATH ?? '/usr/bin:/bin')
      .split(':')
      .filter((dir) => !existsSync(join(dir, 'svc-api')))
      .join(':');
    const email = uniqueEmail('checkout');
    const inCheckout = { env: { PATH: path }, cwd: checkout };
    const paid = await runProgram(
      'node',
      [SVC_API_BIN, 'sandbox', 'pay', '--offer', 'svc_starter_agents', '--email', email, '--base-url', api.baseUrl],
      inCheckout,
    );
    const next = /Next: (.*)/.exec(paid.stdout)?.[1];
    expect(next).toMatch(/^\.\/bin\/svc-api\.js sandbox confirm pay_[0-9a-f]+ --base-url /);
    const confirmed = await runProgram('/bin/sh', ['-c', next!], inCheckout);
    expect(confirmed.exitCode, confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toContain(`  ./bin/swarm-node.js login --email ${email}`);
  });
});

describe('svc-api sandbox mail, and SVC_BASE_URL', () => {
  it('prints the mail the sandbox sent an address, newest first: the sign-in code a developer types', async () => {
    const email = uniqueEmail('outbox');
    expect((await sandbox(['mail', '--to', email])).stdout.trim()).toBe(`No mail to ${email} yet.`);
    const asked = await apiClient(api.baseUrl).post('/v1/auth/email-code', { email });
    expect(asked.status).toBe(202);
    const human = await sandbox(['mail', '--to', email, '--limit', '1']);
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^\d{4}-\d\d-\d\dT\S+ {2}Your svc sign-in code: \d{4}-\d{4}\n {4}Your svc sign-in code is \d{4}-\d{4}\n/);
    expect(human.stdout).toContain(`reference ${String(asked.body.challenge_id).slice(0, 8)}`);
    const json = await sandbox(['mail', '--to', email, '--json']);
    expect(json.json.messages).toHaveLength(1);
    expect(json.json.messages[0]).toMatchObject({ to: email, subject: expect.stringMatching(/sign-in code/) });
    const bad = await sandbox(['mail', '--to', email, '--limit', '0']);
    expect(bad.exitCode).toBe(2);
  });

  it('talks to SVC_BASE_URL without --base-url, and its next steps name that service so they work as printed', async () => {
    const email = uniqueEmail('env-url');
    const viaEnv = (args: string[]) => runProgram('node', [SVC_API_BIN, 'sandbox', ...args], { env: { SVC_BASE_URL: api.baseUrl } });
    const paid = await viaEnv(['pay', '--offer', 'svc_starter_agents', '--email', email]);
    expect(paid.exitCode, paid.stderr).toBe(0);
    const next = /Next: (svc-api sandbox confirm .*)$/m.exec(paid.stdout)![1]!;
    expect(next).toContain(`--base-url ${api.baseUrl}`);
    // Typed as printed, in a shell that has no SVC_BASE_URL: it confirms on the same service.
    const confirmed = await runProgram('node', [SVC_API_BIN, ...next.split(' ').slice(1)], { env: {} });
    expect(confirmed.exitCode, confirmed.stderr).toBe(0);
    expect(confirmed.stdout).toContain('status    CONFIRMED (the service has the webhook)');
    expect(confirmed.stdout).toContain(`svc-api sandbox mail --to ${email} --base-url ${api.baseUrl}`);
    expect(confirmed.stdout).toContain(`swarm-node login --email ${email}`);
  });
});

describe('svc-api sandbox fund', () => {
  it("credits the user's wallet: a confirmed svc_pay_wallet_fund payment whose webhook arrived", async () => {
    const email = uniqueEmail('fund');
    const token = await signIn(api.baseUrl, email);
    const funded = await sandbox(['fund', '--email', email, '--amount', '5']);
    expect(funded.exitCode, funded.stderr).toBe(0);
    expect(funded.stdout).toMatch(new RegExp(`^Funded the wallet of ${email} with \\$5\\.00 \\(payment pay_[0-9a-f]+\\)\\.$`, 'm'));
    const wallet = await apiClient(api.baseUrl).get('/v1/swarm/wallet', token);
    expect(wallet.body.balance_cents).toBe(500);

    const again = await sandbox(['fund', '--email', email, '--amount', '0.25', '--json']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.json).toMatchObject({ offer_id: 'svc_pay_wallet_fund', status: 'CONFIRMED', amount_cents: 25, webhook_delivered: true });
    expect((await apiClient(api.baseUrl).get(`/sandbox/payments/${again.json.payment_id}`)).body.webhook_delivered).toBe(true);
    expect((await apiClient(api.baseUrl).get('/v1/swarm/wallet', token)).body.balance_cents).toBe(525);
  });
});

describe('svc-api sandbox errors and help', () => {
  it('usage errors exit 2 before anything is sent, naming the option', async () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /give a command: pay, confirm, fund or mail/],
      [['refund'], /unknown sandbox command "refund"/],
      [['pay', '--email', 'a@example.com'], /--offer is required/],
      [['pay', '--offer', 'gold', '--email', 'a@example.com'], /--offer must be one of/],
      [['fund', '--email', 'a@example.com'], /--amount is required/],
      [['fund', '--email', 'a@example.com', '--amount', '0'], /--amount takes dollars/],
      [['fund', '--email', 'a@example.com', '--amount', '1.234'], /--amount takes dollars/],
      [['fund', '--email', 'a@example.com', '--amount', '2000000'], /--amount takes dollars from 0\.01 to 1000000\.00/],
      [['confirm'], /give one payment id/],
      [['pay', '--offer', 'svc_starter_agents', '--email', 'a@example.com', '--colour'], /Unknown option '--colour'/],
    ];
    for (const [args, message] of cases) {
      const result = await sandbox(args);
      expect(result.exitCode, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('a value the provider refuses is exit 2, named by its flag', async () => {
    const result = await sandbox(['pay', '--offer', 'svc_starter_agents', '--email', 'not-an-address', '--json']);
    expect(result.exitCode).toBe(2);
    expect(result.json.error).toMatchObject({ code: 'invalid_request', remedy: 'Correct the option named above and run it again.' });
    expect(result.json.error.message).toMatch(/^--email: /);
  });

  it('an unknown payment is exit 1; a service without --sandbox exit 1 saying so; nothing listening exit 6', async () => {
    const unknown = await sandbox(['confirm', 'pay_000000000000000000000000']);
    expect(unknown.exitCode).toBe(1);
    expect(unknown.stderr).toContain('the sandbox provider has no payment pay_000000000000000000000000');

    const plain: TestService = await startSvcApi({ sandbox: false });
    try {
      const noSandbox = await sandbox(['pay', '--offer', 'svc_starter_agents', '--email', uniqueEmail()], plain.baseUrl);
      expect(noSandbox.exitCode).toBe(1);
      expect(noSandbox.stderr).toContain(`the svc-api at ${plain.baseUrl} serves no sandbox provider\nStart it with --sandbox.`);
    } finally {
      await plain.close();
    }

    const gone = await sandbox(['fund', '--email', uniqueEmail(), '--amount', '1', '--json'], `http://127.0.0.1:${await closedPort()}`);
    expect(gone.exitCode).toBe(6);
    expect(gone.json.error).toMatchObject({ code: 'service_unreachable', message: expect.stringContaining('ECONNREFUSED') });
  });

  it('svc-api --help lists the sandbox commands with an example; svc-api sandbox --help shows them all', async () => {
    const help = await runProgram('node', [SVC_API_BIN, '--help'], { env: {} });
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('svc-api sandbox pay --offer <tier_id> --email <e> [--amount <dollars>]');
    expect(help.stdout).toContain('svc-api sandbox confirm <payment_id>');
    expect(help.stdout).toContain('svc-api sandbox fund --email <e> --amount <dollars>');
    expect(help.stdout).toMatch(/Examples:\n(?: {2}svc-api .*\n)*  svc-api sandbox fund --email you@example\.com --amount 5\.00$/);
    const sandboxHelp = await runProgram('node', [SVC_API_BIN, 'sandbox', '--help'], { env: {} });
    expect(sandboxHelp.exitCode).toBe(0);
    expect(sandboxHelp.stdout).toContain('Exit codes: 0 ok, 1 failure, 2 usage, 6 svc-api unreachable.');
  });
});

/** A port nothing listens on: bound by the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
