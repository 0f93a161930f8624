#!/usr/bin/env node
// `npm run demo`: the whole funnel on this machine, with the real programs. It starts the reference service with
// its sandbox payment provider, plays the customer's browser at that provider over HTTP, and drives the
// `swarm-node` binary from activation to a funded, billed run, narrating each step. Everything lives in one
// scratch directory that is removed at the end, also on failure and on Ctrl+C.
//
// Plain ESM JavaScript on purpose: it runs right after `npm ci` (which builds dist/), with no TypeScript runner.
import { existsSync, lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { alias, fail, header, mask, maskUrlToken, ok, say, secret, showCommand, showFields, showOutput, write, writeError } from './demo/narrate.mjs';
import {
  cleanEnv,
  cleanup,
  DemoFailure,
  interrupted,
  makeScratchDir,
  onInterrupt,
  REPO_ROOT,
  runProgram,
  startProgram,
  SVC_API_BIN,
  SWARM_NODE_BIN,
} from './demo/processes.mjs';

const EMAIL = 'demo@example.com';
const AGENT = 'agent_ops_monitor_004';
const AGENT_PRICE_CENTS = 4;
const FUND_CENTS = 100;
/** How long the daemon runs the every-2-s schedule: about two runs. */
const DAEMON_MS = 5_000;
const INSTALL_PATH = 'opt/svc/swarm-node';
const DOLLARS = (cents) => `$${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

const STEPS = [
  'Start the reference service',
  'Checkout at the payment provider',
  'Activate before the payment is confirmed',
  'The provider confirms: a signed webhook',
  'Activate again: the deploy token',
  'Install the node into a scratch root',
  'Issue the JWT',
  'Verify the JWT and read the unlocked docs',
  'The wallet login URL',
  'Register an agent',
  'Run it: insufficient balance',
  'Fund the wallet',
  'Run it again: charged',
  'The daemon runs the schedule',
];

const state = {};
let stepNumber = 0;

function step(title) {
  stepNumber += 1;
  if (STEPS[stepNumber - 1] !== title) throw new Error(`demo bug: step ${stepNumber} is "${title}", listed as "${STEPS[stepNumber - 1]}"`);
  header(stepNumber, STEPS.length, title);
}

function check(condition, message, output) {
  if (!condition) throw new DemoFailure(message, output);
}

/** Runs a swarm-node binary; shows the command (as `swarm-node …`) and, unless `quiet`, its output. */
async function swarmNode(bin, args, { env = {}, expectExit = 0, json = false, quiet = json, shownEnv = {} } = {}) {
  const argv = json ? ['--json', ...args] : args;
  showCommand(['swarm-node', ...argv], shownEnv);
  const result = await runProgram(bin, argv, { env: cleanEnv(env) });
  if (interrupted()) throw new DemoFailure('interrupted');
  if (!quiet) showOutput(result.all);
  const output = `$ swarm-node ${argv.join(' ')}\n${result.all}`;
  check(!result.timedOut, `swarm-node ${args[0]} did not finish in time`, output);
  check(result.exitCode === expectExit, `swarm-node ${args[0]} exited ${result.exitCode}, expected ${expectExit}`, output);
  if (json) {
    try {
      result.json = JSON.parse(result.stdout);
    } catch {
      throw new DemoFailure(`swarm-node --json ${args[0]} printed no JSON document`, output);
    }
  }
  return result;
}

/** The repo's swarm-node, with a scratch home: it never reads or writes a real node's /opt/svc/swarm-node. */
const operatorCli = (args, options = {}) =>
  swarmNode(SWARM_NODE_BIN, args, { ...options, env: { SWARM_NODE_HOME: state.operatorHome, SVC_BASE_URL: state.baseUrl, ...options.env } });

/** The installed swarm-node: it finds its home from where it is installed, and the service from its config. */
const nodeCli = (args, options = {}) => swarmNode(state.installedBin, args, options);

/** The customer's browser at the payment provider: plain HTTP to the sandbox. */
async function provider(method, path, body) {
  const response = await fetch(`${state.baseUrl}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

async function checkout(offerId, amountCents) {
  const body = { offer_id: offerId, customer_email: EMAIL, ...(amountCents === undefined ? {} : { amount_cents: amountCents }) };
  write(`   → POST /sandbox/payments ${JSON.stringify(body)}`);
  const payment = await provider('POST', '/sandbox/payments', body);
  check(payment.status === 201 && typeof payment.json?.payment_id === 'string', `checkout answered ${payment.status}`, payment.text);
  check(payment.json.status === 'PENDING', `a new payment should be PENDING, is ${payment.json.status}`, payment.text);
  return payment.json;
}

/** Confirms at the provider, then waits until its signed webhook has been accepted by the service. */
async function confirmAndAwaitWebhook(paymentId) {
  write(`   → POST /sandbox/payments/${paymentId}/confirm`);
  const confirmed = await provider('POST', `/sandbox/payments/${paymentId}/confirm`);
  check(confirmed.status < 300, `confirm answered ${confirmed.status}`, confirmed.text);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const payment = await provider('GET', `/sandbox/payments/${paymentId}`);
    check(payment.status === 200, `GET /sandbox/payments/${paymentId} answered ${payment.status}`, payment.text);
    if (payment.json.webhook_delivered === true) return payment.json;
    check(Date.now() < deadline, `the webhook of ${paymentId} was not delivered within 10 s`, payment.text);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function modeOf(path) {
  return (lstatSync(path).mode & 0o777).toString(8).padStart(4, '0');
}

async function main() {
  const started = performance.now();
  check(existsSync(join(REPO_ROOT, 'dist', 'swarm-node.js')) && existsSync(join(REPO_ROOT, 'dist', 'svc-api.js')), 'dist/ is missing: run npm ci (or npm run build) first');

  state.scratch = makeScratchDir();
  state.operatorHome = join(state.scratch, 'operator-home');
  state.root = join(state.scratch, 'host');
  state.home = join(state.root, INSTALL_PATH);
  state.installedBin = join(state.root, 'usr', 'local', 'bin', 'swarm-node');
  write(`svc swarm-node demo: the whole funnel, from a payment to a billed agent run, on this machine.`);
  write(`scratch directory: ${state.scratch} (shown as <scratch>; removed at the end)`);
  alias(state.root, '<root>');
  alias(state.scratch, '<scratch>');

  step('Start the reference service');
  say('svc-api is the complete reference implementation of the hosted service; --sandbox adds a payment provider\nthat confirms payments with a signed webhook, like a real one. Port 0: any free port; a fresh SQLite data dir.');
  showCommand(['svc-api', '--sandbox', '--port', '0', '--data-dir', join(state.scratch, 'service')]);
  state.service = await startProgram(process.execPath, [SVC_API_BIN, '--sandbox', '--port', '0', '--data-dir', join(state.scratch, 'service')], {
    env: cleanEnv({ SVC_LOG_LEVEL: 'warn' }),
    ready: /svc-api listening on (http:\/\/\S+)/,
    name: 'svc-api',
  });
  state.baseUrl = state.service.match[1];
  showOutput(state.service.match[0]);
  ok(`svc-api pid ${state.service.pid} at ${state.baseUrl}`);

  step('Checkout at the payment provider');
  say(`The customer pays for the starter-agents tier at the provider, with the e-mail ${EMAIL}. The payment\nstarts PENDING; the provider confirms it later.`);
  const starter = await checkout('svc_starter_agents');
  showFields([
    ['payment_id', starter.payment_id],
    ['status', starter.status],
    ['offer_id', starter.offer_id],
    ['amount', DOLLARS(starter.amount_cents)],
  ]);
  state.starterPayment = starter.payment_id;

  step('Activate before the payment is confirmed');
  say('`swarm-node activate` opens a pay-gate session for the tier and tries to activate it with the payment.\nThe provider has not confirmed yet, so the service answers payment_not_confirmed: exit code 7.');
  const early = await operatorCli(['activate', '--tier', 'svc_starter_agents', '--email', EMAIL, '--payment', state.starterPayment, '--wait', '0'], {
    json: true,
    expectExit: 7,
  });
  check(early.json.error?.code === 'payment_not_confirmed', `expected payment_not_confirmed, got ${early.json.error?.code}`, early.stdout);
  state.sessionId = early.json.error.session_id;
  check(typeof state.sessionId === 'string', 'the error carries no session_id to resume', early.stdout);
  showFields([
    ['exit code', String(early.exitCode)],
    ['error', early.json.error.message],
    ['session_id', `${state.sessionId} (kept: activation resumes it)`],
  ]);

  step('The provider confirms: a signed webhook');
  say('The provider marks the payment CONFIRMED and POSTs a signed payment.confirmed event to the service\n(/v1/payments/webhook, HMAC-SHA256 in Svc-Signature); the service records the payment as confirmed.');
  const confirmed = await confirmAndAwaitWebhook(state.starterPayment);
  check(confirmed.status === 'CONFIRMED', `the payment is ${confirmed.status} after confirm`, JSON.stringify(confirmed));
  showFields([
    ['status', confirmed.status],
    ['webhook_delivered', String(confirmed.webhook_delivered)],
  ]);

  step('Activate again: the deploy token');
  say('The same session, now activated: the service returns a short-lived, single-use deploy token, the install\npath and the deploy mode. The token goes to a file of mode 0600, never onto the screen or a command line.');
  state.deployTokenFile = join(state.scratch, 'deploy-token');
  const activation = await operatorCli(
    ['activate', '--session', state.sessionId, '--payment', state.starterPayment, '--wait', '10', '--deploy-token-file', state.deployTokenFile],
    { json: true },
  );
  check(activation.json.install_path === '/opt/svc/swarm-node', `install_path is ${activation.json.install_path}`, activation.stdout);
  check(activation.json.deploy_mode === 'bare_metal', `deploy_mode is ${activation.json.deploy_mode}`, activation.stdout);
  check(activation.json.deploy_token === undefined, 'the deploy token was printed although a file was asked for', '');
  check(modeOf(state.deployTokenFile) === '0600', `the deploy token file has mode ${modeOf(state.deployTokenFile)}`, '');
  const deployToken = readFileSync(state.deployTokenFile, 'utf8').trim();
  check(/^[A-Za-z0-9_-]{16,}$/.test(deployToken), 'the deploy token file holds no token', '');
  secret(deployToken);
  showFields([
    ['session', `${activation.json.session_id} ${activation.json.status}`],
    ['deploy_token', `${mask(deployToken)} (in <scratch>/deploy-token, mode 0600)`],
    ['expires_at', activation.json.deploy_token_expires_at],
    ['install_path', activation.json.install_path],
    ['deploy_mode', activation.json.deploy_mode],
  ]);

  step('Install the node into a scratch root');
  say('On a real host: sudo swarm-node install. Here --root puts the whole layout under a scratch directory and\n--no-start leaves systemd alone. The deploy token comes from the environment (argv is visible in ps); the\nservice consumes it to enroll the node, then the release, links, unit and config are written.');
  const install = await operatorCli(['install', '--root', state.root, '--no-start'], {
    env: { SVC_DEPLOY_TOKEN: deployToken },
    shownEnv: { SVC_DEPLOY_TOKEN: mask(deployToken) },
  });
  check(/installed swarm-node \S+ under .*node [0-9a-f-]{36}/.test(install.stdout), 'install did not report an enrolled node', install.all);
  const config = JSON.parse(readFileSync(join(state.home, 'etc', 'config.json'), 'utf8'));
  const nodeCredential = JSON.parse(readFileSync(join(state.home, 'etc', 'credentials.json'), 'utf8')).node?.credential;
  check(typeof nodeCredential === 'string', 'etc/credentials.json lacks the node credential from enrollment', '');
  secret(nodeCredential);
  check(config.base_url === state.baseUrl && typeof config.node_id === 'string', 'etc/config.json lacks the base URL or node id', JSON.stringify(config));
  const layout = [
    ['current', `-> ${readlinkSync(join(state.home, 'current'))}`],
    ['releases/', readFileSync(join(state.home, 'current', 'package.json'), 'utf8').match(/"version":\s*"([^"]+)"/)?.[1] ?? '?'],
    ['etc/config.json', `${modeOf(join(state.home, 'etc', 'config.json'))}  base_url, wallet_url, node_id ${config.node_id}`],
    ['etc/credentials.json', `${modeOf(join(state.home, 'etc', 'credentials.json'))}  the node id and its own credential; the JWT joins them at login`],
    ['var/', `${modeOf(join(state.home, 'var'))}  the node's SQLite: registrations, runs, schedules`],
    ['uninstall.sh', modeOf(join(state.home, 'uninstall.sh'))],
  ];
  check(modeOf(join(state.home, 'etc', 'credentials.json')) === '0600', 'etc/credentials.json is not 0600', '');
  check(modeOf(join(state.home, 'var')) === '0711', 'var/ is not 0711', '');
  check(existsSync(state.installedBin), 'the installed swarm-node link is missing', '');
  write(`   Created under <root>/${INSTALL_PATH}:`);
  showFields(layout);
  write(`   and <root>/etc/systemd/system/svc-swarm-node.service (${modeOf(join(state.root, 'etc/systemd/system/svc-swarm-node.service'))}),`);
  write(`       <root>/usr/local/bin/swarm-node -> ${readlinkSync(state.installedBin)}`);
  say('From here on, the INSTALLED binary runs: it finds its home from where it lives, and the service from its config.');

  step('Issue the JWT');
  say('`login` asks the service for a JWT (HS256, 30 days, chainId 1202, nodeAccess isolated_svc_server, tier = the\noffer) and keeps it in etc/credentials.json, mode 0600. Issuing one needs proof of payment, never just an e-mail:\non this enrolled node its own credential (from the deploy token) is that proof, so plain `login` suffices;\nelsewhere it is `login --email … --offer … --payment <payment_id>`.');
  await nodeCli(['login']);
  const credentialsFile = join(state.home, 'etc', 'credentials.json');
  check(modeOf(credentialsFile) === '0600', 'etc/credentials.json is no longer 0600 after login', '');
  const credentials = JSON.parse(readFileSync(credentialsFile, 'utf8'));
  check(typeof credentials.jwt?.token === 'string' && credentials.node?.node_id === config.node_id, 'the credentials lack the JWT or the node', '');
  secret(credentials.jwt.token);
  showFields([['jwtToken', `${mask(credentials.jwt.token)} (in <root>/${INSTALL_PATH}/etc/credentials.json, mode 0600)`]]);

  step('Verify the JWT and read the unlocked docs');
  say('`whoami` has the service verify the token; its tier unlocks private documentation sections.');
  const whoami = await nodeCli(['whoami']);
  check(/svc_starter_agents/.test(whoami.stdout) && /1202/.test(whoami.stdout), 'whoami does not show the tier and chain', whoami.all);
  const docs = await nodeCli(['docs']);
  for (const section of ['starter-agents', 'node-install', 'agent-upload']) check(docs.stdout.split('\n').includes(section), `docs does not list ${section}`, docs.all);
  const section = await nodeCli(['docs', 'node-install'], { quiet: true });
  const body = section.stdout.split('\n').filter((line) => line.trim() !== '');
  check(body.length > 3, 'the node-install section is empty', section.all);
  showOutput(`${body.slice(0, 3).join('\n')}\n… (${body.length} lines)`);

  step('The wallet login URL');
  say('Runs are paid from the pay wallet. This URL signs the customer in to the wallet page with the JWT (it holds\nthe token, so it is a secret: shown masked here).');
  const walletLogin = await nodeCli(['wallet', 'login'], { json: true });
  const walletUrl = walletLogin.json.wallet_login_url;
  const parsedWalletUrl = new URL(walletUrl);
  check(parsedWalletUrl.pathname.endsWith('/login') && parsedWalletUrl.searchParams.get('intent') === 'swarm_private_access', 'the wallet URL lacks /login or intent', '');
  check(parsedWalletUrl.searchParams.get('token') === credentials.jwt.token, 'the wallet URL does not carry the stored JWT', '');
  showFields([['wallet_login_url', maskUrlToken(walletUrl)]]);

  step('Register an agent');
  say(`${AGENT} (Ops monitor agent, ${DOLLARS(AGENT_PRICE_CENTS)} per run) joins this node, scheduled every 2 s for the daemon.`);
  await nodeCli(['register', AGENT, '--every', '2s']);

  step('Run it: insufficient balance');
  say('The wallet is empty, so the service refuses the run (HTTP 402) and says where to fund the wallet: exit code 3.');
  const refused = await nodeCli(['run', AGENT], { json: true, expectExit: 3 });
  const refusal = refused.json.error;
  check(refusal?.code === 'insufficient_balance' && typeof refusal.wallet_login_url === 'string', `expected insufficient_balance with wallet_login_url, got ${refusal?.code}`, refused.stdout);
  check(refusal.balance_cents === 0 && refusal.price_cents === AGENT_PRICE_CENTS, 'the refusal has the wrong balance or price', refused.stdout);
  showFields([
    ['exit code', String(refused.exitCode)],
    ['error', refusal.message],
    ['wallet_login_url', refusal.wallet_login_url],
  ]);

  step('Fund the wallet');
  say(`At the wallet, the customer pays ${DOLLARS(FUND_CENTS)} into it: a svc_pay_wallet_fund payment at the provider. Its\nconfirmed webhook credits the amount to the wallet.`);
  const fund = await checkout('svc_pay_wallet_fund', FUND_CENTS);
  await confirmAndAwaitWebhook(fund.payment_id);
  ok(`payment ${fund.payment_id} CONFIRMED, webhook delivered`);
  const wallet = await nodeCli(['wallet'], { json: true });
  check(wallet.json.balance_cents === FUND_CENTS && wallet.json.chain_id === 1202, `the wallet holds ${wallet.json.balance_cents} cents`, wallet.stdout);
  showFields([['balance', `${wallet.json.balance} ${wallet.json.currency} on chain ${wallet.json.chain_id}`]]);

  step('Run it again: charged');
  say('The same run now succeeds: the service debits the per-run price and the run record in one transaction.');
  const run = await nodeCli(['run', AGENT]);
  const expected = `charged ${DOLLARS(AGENT_PRICE_CENTS)}, balance ${DOLLARS(FUND_CENTS - AGENT_PRICE_CENTS)}`;
  check(run.stdout.includes(expected), `the run did not report "${expected}"`, run.all);

  step('The daemon runs the schedule');
  say(`\`swarm-node daemon\` is what the systemd unit runs. In the foreground here for ${DAEMON_MS / 1000} s: it runs the agent every 2 s,\nbilled like any run, and logs one logfmt line per event on stdout (journald on a host). Then SIGTERM.`);
  showCommand(['swarm-node', 'daemon']);
  state.daemon = await startProgram(state.installedBin, ['daemon'], {
    env: cleanEnv(),
    ready: /event=daemon_started\b.*\n/,
    name: 'swarm-node daemon',
  });
  ok(`daemon pid ${state.daemon.pid}`);
  await new Promise((resolve) => setTimeout(resolve, DAEMON_MS / 2));
  const status = await nodeCli(['status']);
  check(/daemon\s+running/.test(status.stdout), 'status does not show the daemon running', status.all);
  await new Promise((resolve) => setTimeout(resolve, DAEMON_MS / 2));
  const daemonExit = await state.daemon.stop();
  const daemonLog = state.daemon.log.text;
  state.daemon = undefined;
  write('   The daemon\'s log:');
  showOutput(daemonLog);
  check(daemonExit === 0, `the daemon exited ${daemonExit} on SIGTERM`, daemonLog);
  const daemonRuns = daemonLog.split('\n').filter((line) => /\bevent=run_succeeded\b/.test(line) && line.includes(`agent=${AGENT}`)).length;
  check(daemonRuns >= 1, `the daemon did not run the agent in ${DAEMON_MS / 1000} s`, daemonLog);
  check(/\bevent=daemon_stopped\b/.test(daemonLog), 'the daemon did not log its stop', daemonLog);
  const history = await nodeCli(['runs'], { json: true });
  const succeeded = history.json.runs.filter((entry) => entry.status === 'succeeded');
  check(succeeded.length === 1 + daemonRuns, `runs shows ${succeeded.length} succeeded runs, expected ${1 + daemonRuns}`, history.stdout);
  check(history.json.totals.charged_cents === AGENT_PRICE_CENTS * succeeded.length, 'the totals do not add up to the runs', history.stdout);
  await nodeCli(['runs']);
  const balance = await nodeCli(['wallet'], { json: true });
  const expectedBalance = FUND_CENTS - AGENT_PRICE_CENTS * succeeded.length;
  check(balance.json.balance_cents === expectedBalance, `the wallet holds ${balance.json.balance_cents} cents, expected ${expectedBalance}`, balance.stdout);
  showFields([
    ['daemon runs', `${daemonRuns}, exit code ${daemonExit} on SIGTERM`],
    ['balance', `${balance.json.balance} = ${DOLLARS(FUND_CENTS)} − ${succeeded.length} × ${DOLLARS(AGENT_PRICE_CENTS)}`],
  ]);

  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  write();
  write(`Stopping svc-api (pid ${state.service.pid}) and removing <scratch>…`);
  const serviceExit = await state.service.stop();
  state.service = undefined;
  check(serviceExit === 0, `svc-api exited ${serviceExit} on SIGTERM`, '');
  await cleanup();
  check(!existsSync(state.scratch), 'the scratch directory is still there', '');
  write(`cleaned up: no process left, ${state.scratch} removed`);
  write(`demo finished in ${seconds} s`);
}

onInterrupt((signal) => fail(`${signal}: stopping the demo's processes and removing its scratch directory`));
try {
  await main();
} catch (error) {
  if (!interrupted()) {
    const where = stepNumber === 0 ? 'before the first step' : `step ${stepNumber}/${STEPS.length} "${STEPS[stepNumber - 1]}"`;
    fail(`demo failed at ${where}: ${error instanceof Error ? error.message : String(error)}`);
    if (error instanceof DemoFailure && error.output) writeError(error.output);
    else if (!(error instanceof DemoFailure) && error instanceof Error && error.stack) writeError(error.stack);
    if (state.service !== undefined && state.service.log.text !== '') writeError(`svc-api's log:\n${state.service.log.text}`);
    await cleanup();
    process.exitCode = 1;
  }
  // Interrupted: the signal handler cleans up and exits 130.
}
