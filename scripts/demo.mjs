#!/usr/bin/env node
// `npm run demo`: the whole funnel on this machine, with the real programs. It starts the reference service with
// its sandbox payment provider, plays the customer's browser at that provider over HTTP, and drives the
// `swarm-node` binary from activation to a funded, billed run on the node; then the installed daemon runs the
// agents (a schedule, a run started with curl), and is killed mid-run to show the retry, charged once. Narrated step by step.
// Everything lives in one scratch directory that is removed at the end, also on failure and on Ctrl+C.
//
// Plain ESM JavaScript on purpose: it runs right after `npm ci` (which builds dist/), with no TypeScript runner.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { hostname, release } from 'node:os';
import { join } from 'node:path';
import { CUSTOM_AGENT, CUSTOM_MARK, CUSTOM_PRICE_CENTS, editCustomAgent } from './demo/custom-agent.mjs';
import { curl, request } from './demo/http.mjs';
import {
  alias,
  fail,
  header,
  mask,
  maskUrlToken,
  ok,
  say,
  secret,
  showCommand,
  showFields,
  showOutput,
  write,
  writeError,
} from './demo/narrate.mjs';
import {
  cleanEnv,
  cleanup,
  DemoFailure,
  descendantsOf,
  interrupted,
  makeScratchDir,
  onInterrupt,
  processInfo,
  REPO_ROOT,
  runProgram,
  startProgram,
  SVC_API_BIN,
  SWARM_NODE_BIN,
  waitUntil,
} from './demo/processes.mjs';
import { findingLines } from './demo/ops-findings.mjs';
import { installPipe } from './demo/install-pipe.mjs';
import { isolationLine, probeIsolation } from './demo/isolation.mjs';
import { SLOW_AGENT, SLOW_INPUT, writeSlowBundle } from './demo/slow-agent.mjs';

const EMAIL = 'demo@example.com';
const AGENT = 'agent_ops_monitor_004';
const AGENT_PRICE_CENTS = 4;
const SLOW_PRICE_CENTS = 12;
const FUND_CENTS = 100;
/** The service's lease: a node that stops renewing a run loses it (node_lost, refunded) this long after. */
const LEASE_SECONDS = 5;
const INSTALL_PATH = 'opt/svc/swarm-node';
const DOLLARS = (cents) => `$${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

const STEPS = [
  'Start the reference service',
  'Checkout at the payment provider',
  'The provider confirms: a signed webhook',
  'Sign in: a code mailed to the address',
  'Activate: the deploy token',
  'Install the node into a scratch root',
  'Sign the node in',
  'Verify the JWT and read the unlocked docs',
  'The wallet login URL',
  'Register an agent',
  'Run it: insufficient balance',
  'Fund the wallet',
  'Run it again: charged',
  'The daemon starts',
  'The node list',
  'A schedule at the service',
  'A run started with curl executes on the node',
  'Upload an agent of your own',
  'Run it on the node: your code, charged',
  "An agent bundle of the operator's own",
  'The node is killed mid-run: the run waits',
  'The node comes back: the run is retried, charged once',
  'Cancel a run',
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
  swarmNode(SWARM_NODE_BIN, args, {
    ...options,
    env: { SWARM_NODE_HOME: state.operatorHome, SVC_BASE_URL: state.baseUrl, ...options.env },
  });

/** The installed swarm-node: it finds its home from where it is installed, and the service from its config. */
const nodeCli = (args, options = {}) => swarmNode(state.installedBin, args, options);

/** The customer's browser at the payment provider: plain HTTP to the sandbox. */
const provider = (method, path, body) => request(state.baseUrl, method, path, { body });

/** Whether it is still the UTC day of `time` (the service counts a node's runs per UTC day). */
const sameUtcDay = (time) => new Date(time).toISOString().slice(0, 10) === new Date().toISOString().slice(0, 10);

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

/**
 * `swarm-node login` by mail, as a script does it: --send-code, the code read from the sandbox's outbox with
 * `svc-api sandbox mail`, written to a 0600 file, then the login that reads it (never a command-line argument).
 */
async function signInByMail(cli, codeFile) {
  const sent = await cli(['login', '--email', EMAIL, '--send-code'], { json: true });
  const reference = String(sent.json.challenge_id).slice(0, 8);
  showFields([['code sent', `to ${EMAIL}, reference ${reference}, valid until ${sent.json.expires_at}`]]);
  showCommand(['svc-api', 'sandbox', 'mail', '--to', EMAIL, '--limit', '1']);
  const outbox = await runProgram(process.execPath, [SVC_API_BIN, 'sandbox', 'mail', '--to', EMAIL, '--limit', '1', '--json'], {
    env: cleanEnv({ SVC_BASE_URL: state.baseUrl }),
  });
  check(outbox.exitCode === 0, `svc-api sandbox mail exited ${outbox.exitCode}`, outbox.all);
  const [mail] = JSON.parse(outbox.stdout).messages;
  check(
    mail !== undefined && mail.text.includes(`reference ${reference}`),
    'the sandbox outbox has no mail of this sign-in',
    outbox.stdout,
  );
  const code = /\b(\d{4}-\d{4})\b/.exec(mail.text)?.[1];
  check(code !== undefined, 'the sign-in mail holds no code', mail.text);
  showOutput(`${mail.subject.replace(code, '####-####')}\n${mail.text.split('\n').slice(2, 4).join('\n')}`);
  writeFileSync(codeFile, `${code}\n`, { mode: 0o600 });
  const signedIn = await cli(['login', '--email', EMAIL, '--code-file', codeFile]);
  check(/tier\s+svc_starter_agents/.test(signedIn.stdout), 'login did not show the tier signed in for', signedIn.all);
}

/** An Ed25519 key pair for signing the demo's release; the private half stays in the scratch directory. */
function writeDemoSigningKey(dir) {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const privateFile = join(dir, 'demo.pem');
  const publicFile = join(dir, 'demo.pub.pem');
  writeFileSync(privateFile, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  writeFileSync(publicFile, publicKey.export({ format: 'pem', type: 'spki' }), { mode: 0o644 });
  return { privateFile, publicFile };
}

function modeOf(path) {
  return (lstatSync(path).mode & 0o777).toString(8).padStart(4, '0');
}

async function main() {
  const started = Date.now();
  check(
    existsSync(join(REPO_ROOT, 'dist', 'swarm-node.js')) && existsSync(join(REPO_ROOT, 'dist', 'svc-api.js')),
    'dist/ is missing: run npm ci (or npm run build) first',
  );

  state.scratch = makeScratchDir();
  state.operatorHome = join(state.scratch, 'operator-home');
  state.root = join(state.scratch, 'host');
  state.home = join(state.root, INSTALL_PATH);
  state.installedBin = join(state.root, 'usr', 'local', 'bin', 'swarm-node');
  write(`svc swarm-node demo: the whole funnel, from a payment to billed agent runs on the node, on this machine.`);
  write(`scratch directory: ${state.scratch} (shown as <scratch>; removed at the end)`);
  alias(state.root, '<root>');
  alias(state.scratch, '<scratch>');
  state.isolation = probeIsolation(state.scratch);
  write(isolationLine(state.isolation));

  step('Start the reference service');
  say(
    `svc-api is the complete reference implementation of the hosted service; --sandbox adds a payment provider\nthat confirms payments with a signed webhook, like a real one. Port 0: any free port; a fresh SQLite data dir.\nA run whose node stops renewing it is refunded a lease after (--lease-seconds ${LEASE_SECONDS}: step 20 stays short).`,
  );
  // The release the node installs (docs/operations.md "Releases"): built and signed here with a throwaway key, as a
  // release machine would with the production key; the service publishes it from --releases-dir.
  state.releaseKey = writeDemoSigningKey(join(state.scratch, 'release-key'));
  const releasesDir = join(state.scratch, 'releases');
  const built = await runProgram(
    process.execPath,
    [
      join(REPO_ROOT, 'dist', 'swarm-node-release.js'),
      '--key',
      state.releaseKey.privateFile,
      '--out',
      releasesDir,
      '--no-runtime',
      '--no-deb',
    ],
    {
      env: cleanEnv(),
      timeoutMs: 120_000,
    },
  );
  check(built.exitCode === 0, `npm run release exited ${built.exitCode}`, built.all);
  const summary = JSON.parse(built.stdout);
  write('   $ npm run release -- --key <scratch>/release-key/demo.pem --out <scratch>/releases --no-runtime --no-deb');
  showFields([
    [
      'artifact',
      `${summary.artifact.path.split('/').at(-1)}  ${(summary.artifact.bytes / 1e6).toFixed(1)} MB, ${summary.files} files, signed by key ${summary.signed_by}`,
    ],
    ['note', '--no-runtime: this machine has Node; the production artifact carries its own (docs/operations.md "Releases")'],
  ]);
  const serviceArgs = [
    '--sandbox',
    '--port',
    '0',
    '--data-dir',
    join(state.scratch, 'service'),
    '--lease-seconds',
    String(LEASE_SECONDS),
    '--releases-dir',
    releasesDir,
  ];
  showCommand(['svc-api', ...serviceArgs]);
  state.service = await startProgram(process.execPath, [SVC_API_BIN, ...serviceArgs], {
    env: cleanEnv({ SVC_LOG_LEVEL: 'warn' }),
    ready: /svc-api listening on (http:\/\/\S+)/,
    name: 'svc-api',
  });
  state.baseUrl = state.service.match[1];
  showOutput(state.service.match[0]);
  ok(`svc-api pid ${state.service.pid} at ${state.baseUrl}`);

  step('Checkout at the payment provider');
  say(
    `The customer pays for the starter-agents tier at the provider, with the e-mail ${EMAIL}. The payment\nstarts PENDING; the provider confirms it later.`,
  );
  const starter = await checkout('svc_starter_agents');
  showFields([
    ['payment_id', starter.payment_id],
    ['status', starter.status],
    ['offer_id', starter.offer_id],
    ['amount', DOLLARS(starter.amount_cents)],
  ]);
  state.starterPayment = starter.payment_id;

  step('The provider confirms: a signed webhook');
  say(
    'The provider marks the payment CONFIRMED and POSTs a signed payment.confirmed event to the service\n(/v1/payments/webhook, HMAC-SHA256 in Svc-Signature); the service records the payment as confirmed.',
  );
  const confirmed = await confirmAndAwaitWebhook(state.starterPayment);
  check(confirmed.status === 'CONFIRMED', `the payment is ${confirmed.status} after confirm`, JSON.stringify(confirmed));
  showFields([
    ['status', confirmed.status],
    ['webhook_delivered', String(confirmed.webhook_delivered)],
  ]);

  step('Sign in: a code mailed to the address');
  say(
    `A payment names an address; it proves nobody reads it. \`login\` asks the service to mail a one-time code to\n${EMAIL} (8 digits, 10 minutes, 5 tries) and takes it back: a JWT (HS256, 30 days, chainId 1202, the tier\npaid for) for whoever reads that inbox. The sandbox keeps its mail in an outbox: \`svc-api sandbox mail\` shows it.`,
  );
  await signInByMail(operatorCli, join(state.scratch, 'operator-code'));

  step('Activate: the deploy token');
  say(
    '`swarm-node activate` opens a pay-gate session for the tier and activates it with the payment, as the\nsigned-in user (a stranger who paid in your name cannot). The service returns a short-lived, single-use deploy\ntoken, once: it goes to a file of mode 0600, never onto the screen or a command line.',
  );
  state.deployTokenFile = join(state.scratch, 'deploy-token');
  const activation = await operatorCli(
    [
      'activate',
      '--tier',
      'svc_starter_agents',
      '--payment',
      state.starterPayment,
      '--wait',
      '10',
      '--deploy-token-file',
      state.deployTokenFile,
    ],
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
  say(
    'On a real host: curl -fsSL <base_url>/install.sh | sudo sh -s -- --token-file F. The script downloads the\nnewest release, checks its signature and SHA-256 before unpacking, and runs its swarm-node install. Here --root\nputs the layout under a scratch directory, --no-start leaves systemd alone, and --trust-key trusts the demo key.\nThe deploy token comes from the environment (argv is visible in ps); the service consumes it to enroll the node.',
  );
  const installArgs = ['--root', state.root, '--no-start', '--trust-key', state.releaseKey.publicFile];
  const installEnv = cleanEnv({ SVC_DEPLOY_TOKEN: deployToken });
  const pipe = installPipe(installEnv.PATH);
  if (pipe.why !== undefined) say(pipe.why);
  write(
    `   $ SVC_DEPLOY_TOKEN=${mask(deployToken)} ${pipe.shown(state.baseUrl)} --root <root> --no-start --trust-key <scratch>/release-key/demo.pub.pem`,
  );
  const install = await runProgram('sh', ['-c', pipe.script, state.baseUrl, ...installArgs], {
    env: installEnv,
    timeoutMs: 120_000,
  });
  showOutput(install.all);
  check(install.exitCode === 0, `install.sh exited ${install.exitCode}`, install.all);
  check(/installed swarm-node \S+ under .*node [0-9a-f-]{36}/.test(install.stdout), 'install did not report an enrolled node', install.all);
  const config = JSON.parse(readFileSync(join(state.home, 'etc', 'config.json'), 'utf8'));
  const nodeCredential = JSON.parse(readFileSync(join(state.home, 'etc', 'credentials.json'), 'utf8')).node?.credential;
  check(typeof nodeCredential === 'string', 'etc/credentials.json lacks the node credential from enrollment', '');
  secret(nodeCredential);
  check(
    config.base_url === state.baseUrl && typeof config.node_id === 'string',
    'etc/config.json lacks the base URL or node id',
    JSON.stringify(config),
  );
  state.nodeId = config.node_id;
  const layout = [
    ['current', `-> ${readlinkSync(join(state.home, 'current'))}`],
    ['releases/', readFileSync(join(state.home, 'current', 'package.json'), 'utf8').match(/"version":\s*"([^"]+)"/)?.[1] ?? '?'],
    ['etc/config.json', `${modeOf(join(state.home, 'etc', 'config.json'))}  base_url, wallet_url, node_id ${config.node_id}`],
    [
      'etc/credentials.json',
      `${modeOf(join(state.home, 'etc', 'credentials.json'))}  the node id and its own credential; the JWT joins them at login`,
    ],
    ['var/', `${modeOf(join(state.home, 'var'))}  the node's SQLite: registrations, runs, schedules`],
    ['uninstall.sh', modeOf(join(state.home, 'uninstall.sh'))],
  ];
  check(modeOf(join(state.home, 'etc', 'credentials.json')) === '0600', 'etc/credentials.json is not 0600', '');
  check(modeOf(join(state.home, 'var')) === '0711', 'var/ is not 0711', '');
  check(existsSync(state.installedBin), 'the installed swarm-node link is missing', '');
  write(`   Created under <root>/${INSTALL_PATH}:`);
  showFields(layout);
  write(
    `   and <root>/etc/systemd/system/svc-swarm-node.service (${modeOf(join(state.root, 'etc/systemd/system/svc-swarm-node.service'))}),`,
  );
  write(`       <root>/usr/local/bin/swarm-node -> ${readlinkSync(state.installedBin)}`);
  say('From here on, the INSTALLED binary runs: it finds its home from where it lives, and the service from its config.');
  if (state.isolation.config !== undefined) {
    // Without bubblewrap the installed node refuses to run agents as root (agent_isolation auto): the operator names
    // the mode this machine has in its config, as the line at the top says.
    say(
      `Not bubblewrap here (the line at the top says why): the node is told how to run its agents in its config.json\n(agent_isolation ${state.isolation.config}).`,
    );
    await nodeCli(['config', 'set', 'agent_isolation', state.isolation.config]);
    const set = JSON.parse(readFileSync(join(state.home, 'etc', 'config.json'), 'utf8'));
    check(
      set.agent_isolation === state.isolation.config,
      `etc/config.json holds agent_isolation ${set.agent_isolation}`,
      JSON.stringify(set),
    );
  }

  step('Sign the node in');
  say(
    "The installed node signs in the same way, by mail: its own credential (from the deploy token) does the\nnode's work only and never becomes the user's JWT. The JWT joins it in etc/credentials.json, mode 0600.",
  );
  await signInByMail(nodeCli, join(state.scratch, 'node-code'));
  const credentialsFile = join(state.home, 'etc', 'credentials.json');
  check(modeOf(credentialsFile) === '0600', 'etc/credentials.json is no longer 0600 after login', '');
  const credentials = JSON.parse(readFileSync(credentialsFile, 'utf8'));
  check(
    typeof credentials.jwt?.token === 'string' && credentials.node?.node_id === config.node_id,
    'the credentials lack the JWT or the node',
    '',
  );
  secret(credentials.jwt.token);
  state.jwt = credentials.jwt.token;
  state.userId = JSON.parse(Buffer.from(state.jwt.split('.')[1], 'base64url').toString('utf8')).sub;
  showFields([['jwtToken', `${mask(credentials.jwt.token)} (in <root>/${INSTALL_PATH}/etc/credentials.json, mode 0600)`]]);

  step('Verify the JWT and read the unlocked docs');
  say(
    '`whoami` has the service verify the token; its tier unlocks private documentation sections. What it shows:\nchainId 1202 is the chain of the pay wallet every run is debited from; nodeAccess isolated_svc_server says the\ntoken is for private, isolated nodes of the service; payment_rail svc_pay_wallet:1202 is how runs are paid: from\nthat wallet, on that chain.',
  );
  const whoami = await nodeCli(['whoami']);
  check(/svc_starter_agents/.test(whoami.stdout) && /1202/.test(whoami.stdout), 'whoami does not show the tier and chain', whoami.all);
  const docs = await nodeCli(['docs']);
  for (const section of ['starter-agents', 'node-install', 'agent-upload'])
    check(docs.stdout.split('\n').includes(section), `docs does not list ${section}`, docs.all);
  const section = await nodeCli(['docs', 'node-install'], { quiet: true });
  const body = section.stdout.split('\n').filter((line) => line.trim() !== '');
  check(body.length > 3, 'the node-install section is empty', section.all);
  showOutput(`${body.slice(0, 3).join('\n')}\n… (${body.length} lines)`);

  step('The wallet login URL');
  say(
    'Runs are paid from the pay wallet. This URL signs the customer in to the wallet page with the JWT (it holds\nthe token, so it is a secret: shown masked here).',
  );
  const walletLogin = await nodeCli(['wallet', 'login'], { json: true });
  const walletUrl = walletLogin.json.wallet_login_url;
  const parsedWalletUrl = new URL(walletUrl);
  check(
    parsedWalletUrl.pathname.endsWith('/login') && parsedWalletUrl.searchParams.get('intent') === 'swarm_private_access',
    'the wallet URL lacks /login or intent',
    '',
  );
  check(parsedWalletUrl.searchParams.get('token') === credentials.jwt.token, 'the wallet URL does not carry the stored JWT', '');
  showFields([['wallet_login_url', maskUrlToken(walletUrl)]]);

  step('Register an agent');
  say(
    `${AGENT} (Ops monitor agent, ${DOLLARS(AGENT_PRICE_CENTS)} per run) joins this node: the service routes its runs here,\nwherever they are started. (\`--every 1h\` would also make it a schedule at the service, pinned here: below.)`,
  );
  await nodeCli(['register', AGENT]);

  step('Run it: insufficient balance');
  say('The wallet is empty, so the service refuses the run (HTTP 402) and says where to fund the wallet: exit code 3.');
  const refused = await nodeCli(['run', AGENT], { json: true, expectExit: 3 });
  const refusal = refused.json.error;
  check(
    refusal?.code === 'insufficient_balance' && typeof refusal.wallet_login_url === 'string',
    `expected insufficient_balance with wallet_login_url, got ${refusal?.code}`,
    refused.stdout,
  );
  check(
    refusal.balance_cents === 0 && refusal.price_cents === AGENT_PRICE_CENTS,
    'the refusal has the wrong balance or price',
    refused.stdout,
  );
  showFields([
    ['exit code', String(refused.exitCode)],
    ['error', refusal.message],
    ['wallet_login_url', refusal.wallet_login_url],
  ]);

  step('Fund the wallet');
  say(
    `At the wallet, the customer pays ${DOLLARS(FUND_CENTS)} into it: a svc_pay_wallet_fund payment at the provider. Its\nconfirmed webhook credits the amount to the wallet.`,
  );
  const fund = await checkout('svc_pay_wallet_fund', FUND_CENTS);
  await confirmAndAwaitWebhook(fund.payment_id);
  ok(`payment ${fund.payment_id} CONFIRMED, webhook delivered`);
  const wallet = await nodeCli(['wallet'], { json: true });
  check(
    wallet.json.balance_cents === FUND_CENTS && wallet.json.chain_id === 1202,
    `the wallet holds ${wallet.json.balance_cents} cents`,
    wallet.stdout,
  );
  showFields([['balance', `${wallet.json.balance} ${wallet.json.currency} on chain ${wallet.json.chain_id}`]]);

  step('Run it again: charged');
  say(
    'The same run now succeeds: the service debits the per-run price and the run record in one transaction, and\nthe run executes on this node, on this host. No daemon runs yet: the CLI runs the agent itself.',
  );
  const run = await nodeCli(['run', AGENT]);
  const expected = `charged ${DOLLARS(AGENT_PRICE_CENTS)}, balance ${DOLLARS(FUND_CENTS - AGENT_PRICE_CENTS)}`;
  check(run.stdout.includes(expected), `the run did not report "${expected}"`, run.all);
  check(run.stdout.includes(`ran on node ${state.nodeId}`), 'the run did not say it ran on this node', run.all);

  step('The daemon starts');
  say(
    "`swarm-node daemon` is what the systemd unit runs; here it runs in the background. It long-polls the service\nwith the node credential (the poll is its heartbeat), runs what the service routes here (a schedule's runs, a\nrun started with curl), billed like any run, and logs one logfmt line per event (journald on a host). It is ready\nonce it has told the service which agents it serves.",
  );
  write('   $ swarm-node daemon &');
  state.daemon = await startProgram(state.installedBin, ['daemon'], {
    env: cleanEnv(),
    ready: /event=agents_served\b.*\n/,
    name: 'swarm-node daemon',
  });
  ok(`daemon pid ${state.daemon.pid}, ready`);
  const status = await nodeCli(['status']);
  check(/daemon\s+running/.test(status.stdout), 'status does not show the daemon running', status.all);
  // The run by hand above: the one run of the agent so far.
  state.succeeded = 1;
  state.failed = 0;
  write("   The daemon's log:");
  showOutput(state.daemon.log.text);

  step('The node list');
  say(
    "`swarm-node nodes` lists the user's nodes as the service sees them (GET /v1/swarm/nodes with the JWT): online\nwhile its daemon polls, the agents it serves, the runs it finished today (UTC).",
  );
  const listed = await waitUntil(async () => {
    const fleet = await request(state.baseUrl, 'GET', '/v1/swarm/nodes', { token: state.jwt });
    const node = fleet.json?.nodes?.find((entry) => entry.node_id === state.nodeId);
    return node?.online === true ? node : undefined;
  }, 'the node online');
  const nodes = await nodeCli(['nodes']);
  const row = nodes.stdout.split('\n').find((line) => line.startsWith(`${state.nodeId} (here)`)) ?? '';
  check(
    /\bonline\b/.test(row) && row.includes(AGENT) && row.includes(hostname()),
    'the node list does not show this node online, on this host, serving the agent',
    nodes.all,
  );
  const finished = state.succeeded + state.failed;
  check(
    listed.runs_today === finished || !sameUtcDay(started),
    `runs today is ${listed.runs_today}, expected ${finished}`,
    JSON.stringify(listed),
  );

  step('A schedule at the service');
  say(
    'The service keeps schedules of its own, whether or not this host is up: a cron in a time zone (or an interval),\nan overlap policy, a daily cap, a pin to this node (--here). `schedule add` shows what it costs a day and a\nmonth and its next fire times. It is removed again, so that the wallet moves only with the runs below.',
  );
  // Twelve hours from now in Berlin, on weekdays: nothing fires while the demo runs.
  const berlinHour = Number(
    new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', hourCycle: 'h23' }).format(new Date()),
  );
  const cron = `0 ${(berlinHour + 12) % 24} * * 1-5`;
  const scheduled = await nodeCli(['schedule', 'add', AGENT, '--cron', cron, '--tz', 'Europe/Berlin', '--daily-cap', '1.00', '--here']);
  const scheduleId = /^Schedule ([0-9a-f-]{36}):/.exec(scheduled.stdout)?.[1];
  check(
    scheduleId !== undefined && /Costs up to \$0\.04 a day/.test(scheduled.stdout),
    'schedule add did not show the schedule and its cost',
    scheduled.all,
  );
  await nodeCli(['schedule', 'rm', scheduleId, '--yes']);
  say(
    '`register --every` makes the same kind of schedule for a registration: pinned to this node, in UTC, one run\nat a time. `--every none` removes it again.',
  );
  const daily = await nodeCli(['register', AGENT, '--every', '1d']);
  check(
    /Costs up to \$0\.04 a day/.test(daily.stdout) && /schedule show [0-9a-f-]{36}/.test(daily.stderr),
    'register --every did not make a schedule at the service, priced',
    daily.all,
  );
  await nodeCli(['register', AGENT, '--every', 'none']);

  step('A run started with curl executes on the node');
  say(
    "Any client with the JWT can start a run: curl on a laptop, say. The service checks the token, debits the wallet\nand hands the run to an online node of the user that serves the agent. The daemon pulls it and runs the agent\non this host; the answer carries the node's id and what the agent found there.",
  );
  const ranByCurl = await curl(state.baseUrl, 'POST', '/v1/swarm/execute', {
    token: state.jwt,
    headers: { 'Idempotency-Key': randomUUID() },
    body: { user_id: state.userId, agent_id: AGENT },
  });
  if (interrupted()) throw new DemoFailure('interrupted');
  const ran = ranByCurl.json;
  check(
    ranByCurl.status === 200 && ran?.status === 'succeeded',
    `execute answered ${ranByCurl.status} ${ran?.status ?? ''}`,
    ranByCurl.text,
  );
  check(ran.node_id === state.nodeId, `the run executed on ${ran.node_id}, not on this node`, ranByCurl.text);
  const host = ran.output?.host;
  check(
    host?.hostname === hostname() && host?.kernel === release(),
    "the output does not hold this host's hostname and kernel",
    ranByCurl.text,
  );
  const nodeDb = ran.output?.database;
  // The agent runs in a sandbox that hides the node's own files (docs/operations.md "Agent isolation"): it names the
  // node's database, and a node whose runs could see it (agent_isolation none) shows its size too.
  check(nodeDb?.path === join(state.home, 'var', 'swarm-node.db'), "the output does not name the node's database", ranByCurl.text);
  state.succeeded += 1;
  showFields([
    ['HTTP', String(ranByCurl.status)],
    ['run_id', ran.run_id],
    ['status', `${ran.status}, charged ${DOLLARS(ran.charged_cents)}, balance ${DOLLARS(ran.balance_cents)}`],
    ['node_id', `${ran.node_id} (this node)`],
    ['output.summary', ran.output.summary],
    ['output.host', `${host.hostname}, kernel ${host.kernel}: this machine's`],
    [
      'output.database',
      nodeDb.size_bytes === null
        ? `${nodeDb.path}: out of the agent's sight (its sandbox hides the node's files)`
        : `${nodeDb.path}, ${nodeDb.size_bytes} bytes: the node's own, in the agent's sight (agent_isolation ${state.isolation.mode}: no sandbox)`,
    ],
  ]);
  const findings = ran.output.findings;
  check(
    ['load', 'memory', 'filesystem'].every((kind) =>
      findings?.some((finding) => finding.check === kind && typeof finding.message === 'string'),
    ),
    "the ops monitor's findings lack the load, the memory or a filesystem",
    ranByCurl.text,
  );
  write(`   What the ops monitor found on this host (output.findings, ${findings.length} in all, the worst first), each judged`);
  write(`   against its default thresholds (a run's input can set others):`);
  showFields(findingLines(ran.output));
  const pulled = await state.daemon.waitFor(
    new RegExp(`^.*\\bevent=run_pulled agent=${AGENT} run_id=${ran.run_id}\\b.*\\n`, 'm'),
    'the daemon pulled the run',
  );
  const reported = await state.daemon.waitFor(
    new RegExp(`^.*\\bevent=run_succeeded agent=${AGENT} run_id=${ran.run_id}\\b.*\\n`, 'm'),
    'the daemon reported the run',
  );
  write("   The daemon's log: it pulled the run, ran the agent here and reported the result.");
  showOutput(`${pulled[0]}${reported[0]}`);

  step('Upload an agent of your own');
  say(
    `The tier unlocks agent upload: code of your own for a catalog agent, run on your nodes and billed at that agent's\ncatalog price. \`agent init\` starts a bundle on the agent kit that works as it is (agent.json, main.mjs, swarm_kit/);\none line edited makes it the demo's. The upload authenticates with the JWT this node signed in with (never an\nargument), and the new version becomes current: from now on the user's runs of ${CUSTOM_AGENT} execute it.`,
  );
  const customDir = join(state.scratch, 'my-agent');
  await nodeCli(['agent', 'init', customDir, '--agent', CUSTOM_AGENT]);
  const edit = editCustomAgent(customDir);
  write('   $ $EDITOR <scratch>/my-agent/main.mjs    # the summary it answers:');
  showOutput(`- ${edit.before.trim()}\n+ ${edit.after.trim()}`);
  const upload = await nodeCli(['agent', 'upload', customDir]);
  const uploaded = /^Uploaded \S+ version (\S+) \(([0-9a-f]{12}),/m.exec(upload.stdout);
  check(uploaded !== null, 'agent upload did not report a new version', upload.all);
  const [, customVersion, customDigest] = uploaded;
  const versions = await nodeCli(['agent', 'versions', CUSTOM_AGENT]);
  check(
    new RegExp(`^${customVersion.replaceAll('.', '\\.')}\\s+${customDigest}\\s.*\\syes$`, 'm').test(versions.stdout),
    'agent versions does not show the upload current',
    versions.all,
  );

  step('Run it on the node: your code, charged');
  say(
    `The run is pinned to the current version's digest when the service accepts it. The node fetches that bundle\nby digest with its own credential, checks its SHA-256 before unpacking anything, installs it under\nvar/agents/<agent_id>/<digest>/ and runs it like any agent: the input its schema allows (--input name=Ada),\ncharged the catalog price of ${CUSTOM_AGENT}, ${DOLLARS(CUSTOM_PRICE_CENTS)}.`,
  );
  const custom = await nodeCli(['run', CUSTOM_AGENT, '--input', 'name=Ada']);
  check(custom.stdout.includes(CUSTOM_MARK), `the run's output does not say "${CUSTOM_MARK}": not the uploaded code`, custom.all);
  check(custom.stdout.includes(`ran on node ${state.nodeId}`), 'the run did not say it ran on this node', custom.all);
  check(
    new RegExp(`charged \\${DOLLARS(CUSTOM_PRICE_CENTS)}, balance`).test(custom.stdout),
    `the run did not report its charge of ${DOLLARS(CUSTOM_PRICE_CENTS)}`,
    custom.all,
  );
  const installedUnder = join(state.home, 'var', 'agents', CUSTOM_AGENT);
  const installed = existsSync(installedUnder) ? readdirSync(installedUnder) : [];
  check(
    installed.length === 1 && /^[0-9a-f]{64}$/.test(installed[0]) && installed[0].startsWith(customDigest),
    `var/agents/${CUSTOM_AGENT} holds ${installed.join(', ') || 'nothing'}`,
    '',
  );
  showFields([
    ['installed', `${join(installedUnder, customDigest)}…/: ${readdirSync(join(installedUnder, installed[0])).sort().join(', ')}`],
  ]);

  step("An agent bundle of the operator's own");
  say(
    `An upload goes with its user to every node of theirs. An operator can also put a bundle on one node by hand:\nin <home>/agents/<agent_id>/ (agent.json and its files) it takes the place of the package's reference agent\non this node. This one stands in for ${SLOW_AGENT}, and takes its time.`,
  );
  const bundle = writeSlowBundle(state.home);
  write(`   Written to <root>/${INSTALL_PATH}/agents/${SLOW_AGENT}/:`);
  showFields([
    ['agent.json', JSON.stringify({ agent_id: bundle.manifest.agent_id, version: bundle.manifest.version, entry: bundle.manifest.entry })],
    ['main.mjs', bundle.source.split('\n')[0]],
  ]);
  await nodeCli(['register', SLOW_AGENT]);

  step('The node is killed mid-run: the run waits');
  say(
    `Started with Prefer: respond-async, the run is answered at once: 202, charged, and a Location to follow. While the\nagent works, the daemon and its agent are killed (SIGKILL, as when the host loses power): nothing reports the run.\nOnce its lease runs out (${LEASE_SECONDS} s here, 45 s by default) the service records the attempt lost (node_lost). The\nreview is safe to run again (its agent.json says retry_safe), so the run goes back to the queue under the same id\nand charge, waiting for a node that serves it; an agent that is not (outreach: it may have sent mail) is refunded.`,
  );
  const before = await nodeCli(['wallet'], { json: true });
  showFields([['balance', before.json.balance]]);
  const accepted = await curl(state.baseUrl, 'POST', '/v1/swarm/execute', {
    token: state.jwt,
    headers: { 'Idempotency-Key': randomUUID(), Prefer: 'respond-async' },
    body: { user_id: state.userId, agent_id: SLOW_AGENT, input: SLOW_INPUT },
  });
  if (interrupted()) throw new DemoFailure('interrupted');
  const slow = accepted.json;
  check(
    accepted.status === 202 && slow?.charged_cents === SLOW_PRICE_CENTS,
    `execute answered ${accepted.status}, charged ${slow?.charged_cents}`,
    accepted.text,
  );
  check(slow.balance_cents === before.json.balance_cents - SLOW_PRICE_CENTS, 'the 202 does not show the price taken', accepted.text);
  showFields([
    ['HTTP', `${accepted.status}, Location: ${accepted.headers.get('location')}`],
    ['run_id', slow.run_id],
    ['status', `${slow.status}, charged ${DOLLARS(slow.charged_cents)}, balance ${DOLLARS(slow.balance_cents)}`],
  ]);
  await state.daemon.waitFor(new RegExp(`event=run_pulled agent=${SLOW_AGENT} run_id=${slow.run_id}\\b`), 'the daemon pulled the slow run');
  // The agent itself, `node …/main.mjs`: the launcher before it (setpriv, prlimit, sh) names the bundle too.
  const agentProcess = await waitUntil(
    () =>
      descendantsOf(state.daemon.pid)
        .map(processInfo)
        .find((info) => info?.commandLine.length === 2 && info.commandLine[1] === bundle.main),
    'the agent running',
  );
  const whose =
    agentProcess.uid !== process.getuid?.()
      ? `a user of its own, sandboxed by ${state.isolation.mode}`
      : state.isolation.mode === 'none'
        ? "the daemon's own user, unsandboxed (agent_isolation none)"
        : "the daemon's own user, in a user namespace: no privilege to switch";
  ok(`the agent runs on this host: pid ${agentProcess.pid}, uid ${agentProcess.uid} (${whose})`);
  const following = await curl(state.baseUrl, 'GET', `/v1/swarm/runs/${slow.run_id}`, { token: state.jwt });
  check(
    following.json?.status === 'running' && following.json.node_id === state.nodeId,
    `the run is ${following.json?.status} on ${following.json?.node_id}`,
    following.text,
  );
  showFields([['status', `running on node ${following.json.node_id}`]]);
  say("While the agent works, the daemon's polls renew the run's lease (and say the node is alive):");
  const alive = await nodeCli(['nodes']);
  check(/\bonline\b/.test(alive.stdout), 'the node is not online while its agent works', alive.all);
  write(`   $ kill -KILL ${state.daemon.pid} ${agentProcess.pid}    # the daemon and its agent`);
  await state.daemon.kill();
  state.daemon = undefined;
  await waitUntil(() => (processInfo(agentProcess.pid) === undefined ? true : undefined), 'the agent gone after the kill');
  ok('killed: nothing on the node reports the run any more');
  const lost = await waitUntil(async () => {
    const view = await request(state.baseUrl, 'GET', `/v1/swarm/runs/${slow.run_id}`, { token: state.jwt });
    return view.json?.attempts?.length === 1 && view.json.attempts[0].outcome !== null ? view : undefined;
  }, 'the lease to run out');
  if (interrupted()) throw new DemoFailure('interrupted');
  const [lostAttempt] = lost.json.attempts;
  check(
    lost.json.status === 'queued' && lostAttempt.outcome === 'node_lost' && lost.json.charged_cents === SLOW_PRICE_CENTS,
    `the run is ${lost.json.status} after attempt 1 (${lostAttempt.outcome})`,
    lost.text,
  );
  await nodeCli(['runs', 'show', slow.run_id]);
  const after = await nodeCli(['wallet'], { json: true });
  check(
    after.json.balance_cents === before.json.balance_cents - SLOW_PRICE_CENTS,
    `the wallet holds ${after.json.balance_cents} cents, ${before.json.balance_cents} before the run`,
    after.stdout,
  );
  showFields([['balance', `${after.json.balance}: the run's price is held, not taken twice`]]);
  await waitUntil(async () => {
    const fleet = await request(state.baseUrl, 'GET', '/v1/swarm/nodes', { token: state.jwt });
    return fleet.json?.nodes?.find((entry) => entry.node_id === state.nodeId)?.online === false ? true : undefined;
  }, 'the node offline');
  const offline = await nodeCli(['nodes']);
  check(/\boffline\b/.test(offline.stdout), 'the node list does not show the node offline', offline.all);
  say(
    `While the node is off, a run started with curl waits for it (execute's queue_seconds: 600 s unless asked), charged;\nit starts when a node that serves it polls, and is refunded not_picked_up if none does in time.`,
  );
  const waiting = await curl(state.baseUrl, 'POST', '/v1/swarm/execute', {
    token: state.jwt,
    headers: { 'Idempotency-Key': randomUUID(), Prefer: 'respond-async' },
    body: { user_id: state.userId, agent_id: AGENT },
  });
  if (interrupted()) throw new DemoFailure('interrupted');
  check(
    waiting.status === 202 && waiting.json?.status === 'queued',
    `execute answered ${waiting.status}, ${waiting.json?.status}`,
    waiting.text,
  );
  state.queuedRun = waiting.json.run_id;
  showFields([
    ['run_id', waiting.json.run_id],
    ['status', `${waiting.json.status}, charged ${DOLLARS(waiting.json.charged_cents)}, waits until ${waiting.json.queue_expires_at}`],
  ]);

  step('The node comes back: the run is retried, charged once');
  say(
    "The daemon starts again, as systemd restarts it. It finds the run it held when it died and reports it cut short;\nthe service refuses that late result (its attempt was replaced), and what the kill left behind is removed (a run\nin a sandbox leaves nothing on the host: its directory was in its own /tmp). Then its poll takes the queued runs:\nthe review's attempt 2, the same run id, succeeded, charged once, and the run started while it was off.",
  );
  // Only a run without a sandbox (agent_isolation none) has its directory on the host, in var/runs.
  const leftDir = join(state.home, 'var', 'runs', slow.run_id);
  // Its retry runs under the same run id, in a directory of the same name: what the kill left is told by a mark.
  const leftMark = join(leftDir, '.left-by-the-kill');
  if (existsSync(leftDir)) writeFileSync(leftMark, '');
  write('   $ swarm-node daemon &');
  state.daemon = await startProgram(state.installedBin, ['daemon'], {
    env: cleanEnv(),
    ready: /event=agents_served\b.*\n/,
    name: 'swarm-node daemon',
  });
  ok(`daemon pid ${state.daemon.pid}, ready`);
  await state.daemon.waitFor(/event=pending_runs_settled reported=0 lost=1\b.*\n/, 'the lost run settled');
  check(!existsSync(leftMark), "the killed run's directory is still there", state.daemon.log.text);
  say(
    'Its log, followed while it runs (what the agent writes on stderr and stdout, shipped by the node as it comes);\nthe command exits 0 once the run succeeded:',
  );
  const followed = await nodeCli(['logs', slow.run_id, '--follow']);
  check(/reviewed 1 of \d+ s/.test(followed.stdout), 'the followed log does not show the agent writing', followed.all);
  await state.daemon.waitFor(
    new RegExp(`event=run_succeeded agent=${SLOW_AGENT} run_id=${slow.run_id}\\b.*\\n`),
    'the retried run to succeed',
  );
  const retried = await request(state.baseUrl, 'GET', `/v1/swarm/runs/${slow.run_id}`, { token: state.jwt });
  check(
    retried.json?.status === 'succeeded' &&
      retried.json.attempt === 2 &&
      retried.json.attempts?.length === 2 &&
      retried.json.charged_cents === SLOW_PRICE_CENTS,
    `the retried run is ${retried.json?.status} at attempt ${retried.json?.attempt}`,
    retried.text,
  );
  const queued = await request(state.baseUrl, 'GET', `/v1/swarm/runs/${state.queuedRun}`, {
    token: state.jwt,
    headers: { Prefer: 'wait=30' },
  });
  check(
    queued.json?.status === 'succeeded' && queued.json.node_id === state.nodeId,
    `the run queued while the node was off is ${queued.json?.status}`,
    queued.text,
  );
  showFields([
    [
      'retried run',
      `${slow.run_id} ${retried.json.status} at attempt ${retried.json.attempt} (${retried.json.attempts.map((entry) => entry.outcome).join(', ')}), charged ${DOLLARS(retried.json.charged_cents)} once; nothing of the killed attempt left on the host`,
    ],
    ['output', retried.json.output.summary],
    ['queued run', `${state.queuedRun} ${queued.json.status} once the node polled, charged ${DOLLARS(queued.json.charged_cents)}`],
  ]);
  say(
    'What the review left in its SWARM_ARTIFACTS_DIR, uploaded by the node after the run, listed and downloaded (each\nfile checked against its sha256):',
  );
  const downloads = join(state.scratch, 'downloads');
  await nodeCli(['artifacts', slow.run_id, '--download', downloads]);
  const review = join(downloads, 'review.txt');
  check(
    existsSync(review) && readFileSync(review, 'utf8') === `run ${slow.run_id}: nothing flagged in /srv/app\n`,
    'the downloaded artifact is not what the agent wrote',
    '',
  );
  ok(`<scratch>/downloads/review.txt: ${readFileSync(review, 'utf8').trim()}`);

  step('Cancel a run');
  say(
    'A run started and then not wanted: swarm-node cancel. A queued run ends at once; a running one is stopped on its\nnode within seconds (its poll hands the node the cancel), ends cancelled, and is refunded: nothing is charged.\nThen SIGTERM: the daemon stops cleanly.',
  );
  const unwanted = await curl(state.baseUrl, 'POST', '/v1/swarm/execute', {
    token: state.jwt,
    headers: { 'Idempotency-Key': randomUUID(), Prefer: 'respond-async' },
    body: { user_id: state.userId, agent_id: SLOW_AGENT, input: SLOW_INPUT },
  });
  if (interrupted()) throw new DemoFailure('interrupted');
  check(unwanted.status === 202 && unwanted.json?.charged_cents === SLOW_PRICE_CENTS, `execute answered ${unwanted.status}`, unwanted.text);
  await state.daemon.waitFor(
    new RegExp(`event=run_pulled agent=${SLOW_AGENT} run_id=${unwanted.json.run_id}\\b`),
    'the daemon pulled the run',
  );
  await nodeCli(['cancel', unwanted.json.run_id]);
  const cancelled = await request(state.baseUrl, 'GET', `/v1/swarm/runs/${unwanted.json.run_id}`, {
    token: state.jwt,
    headers: { Prefer: 'wait=30' },
  });
  check(
    cancelled.json?.status === 'cancelled' && cancelled.json.charged_cents === 0,
    `the cancelled run is ${cancelled.json?.status}`,
    cancelled.text,
  );
  showFields([
    [
      'cancelled run',
      `${unwanted.json.run_id} ${cancelled.json.status} (${cancelled.json.output.message}), charged ${DOLLARS(cancelled.json.charged_cents)}`,
    ],
  ]);
  const daemonExit = await state.daemon.stop();
  const daemonLog = state.daemon.log.text;
  state.daemon = undefined;
  write("   The daemon's log:");
  showOutput(daemonLog);
  check(daemonExit === 0, `the daemon exited ${daemonExit} on SIGTERM`, daemonLog);
  check(/\bevent=daemon_stopped\b/.test(daemonLog), 'the daemon did not log its stop', daemonLog);
  const balance = await nodeCli(['wallet'], { json: true });
  const opsRuns = state.succeeded + 1;
  const expectedBalance = FUND_CENTS - AGENT_PRICE_CENTS * opsRuns - CUSTOM_PRICE_CENTS - SLOW_PRICE_CENTS;
  check(
    balance.json.balance_cents === expectedBalance,
    `the wallet holds ${balance.json.balance_cents} cents, expected ${expectedBalance}`,
    balance.stdout,
  );
  showFields([
    ['daemon', `exit code ${daemonExit} on SIGTERM`],
    [
      'balance',
      `${balance.json.balance} = ${DOLLARS(FUND_CENTS)} − ${opsRuns} × ${DOLLARS(AGENT_PRICE_CENTS)} − ${DOLLARS(CUSTOM_PRICE_CENTS)} (your agent) − ${DOLLARS(SLOW_PRICE_CENTS)} (the review, once): only the runs that succeeded are charged`,
    ],
  ]);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
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
