// swarm-node wizard without a terminal (stdin not a TTY) or under --json: the flags answer every question, a missing
// one fails at once (before any network call or write) naming exactly the flags to pass, and the unattended run is
// the same flow as the attended one. The built binary against a real svc-api.
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { execa, execaSync } from 'execa';
import { writeCredentials } from '../../src/node/identity/credentials.js';
import { asPrinted, nodeEnv } from '../helpers/cli.js';
import { fundWallet, payAndConfirm } from '../helpers/funnel.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { stagedPackage, swarmNode } from '../install/support.js';
import { AGENT, nodeDb, registrationsOf, runsOf, signedInNode, walletBalance } from './fixtures.js';

/** A folder of Markdown for the research agent. */
function ragCorpus(): string {
  const corpus = tempDir('wizard-corpus-');
  writeFileSync(join(corpus, 'backup.md'), '# Backups\n\nSnapshots are kept for fourteen days before they are pruned.\n');
  return corpus;
}

/** A git repository with one commit, for the review agent. */
function gitRepo(): string {
  const repo = tempDir('wizard-repo-');
  const git = (...args: string[]) =>
    execaSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], {
      cwd: repo,
      env: { HOME: repo },
    });
  git('init', '-q');
  writeFileSync(join(repo, 'app.sh'), '#!/bin/sh\necho hello\n');
  git('add', '.');
  git('commit', '-q', '-m', 'first');
  return repo;
}

/** A CSV of leads for the outreach agent. */
function leadsFile(): string {
  const file = join(tempDir('wizard-leads-'), 'leads.csv');
  writeFileSync(file, 'email,name\nada@example.com,Ada\n');
  return file;
}

/** Nothing listens here: a wizard that tried the network would exit 6, not 2. */
const CLOSED_PORT_URL = 'http://127.0.0.1:9';
const JWT_PATTERN = /eyJ[\w-]+\.[\w-]+\.[\w-]+/;

const service = useSvcApi();

describe('swarm-node wizard without a terminal: what is missing, at once', () => {
  it('a fresh node and no flags: exit 2 naming --email, --code-file, --agent and --yes, before any network call or write', async () => {
    const node = nodeEnv(CLOSED_PORT_URL);
    const started = Date.now();
    const result = await swarmNode(['wizard'], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(2);
    expect(result.stderr).toContain(
      'error: no terminal to ask on (stdin is not a TTY): pass --email <email>, --code-file <file>, --agent <agent_id>, --yes',
    );
    expect(result.stderr).toContain(`Example: ${asPrinted(node, 'swarm-node wizard --agent agent_ops_monitor_004 --yes')}`);
    expect(result.stdout).toBe('');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(readdirSync(node.home)).toEqual([]);
  });

  it('--json: one JSON error on stdout with the missing flags; a signed-in node needs only --agent and --yes', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-json-missing');
    const before = readdirSync(node.home).sort();
    const result = await swarmNode(['--json', 'wizard', '--every', '5m', '--base-url', CLOSED_PORT_URL], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(2);
    expect(result.json).toEqual({
      error: {
        code: 'not_a_terminal',
        message: '--json asks no questions: pass --agent <agent_id>, --yes',
        remedy: expect.stringContaining('swarm-node wizard --agent agent_ops_monitor_004 --yes'),
        missing_flags: ['--agent', '--yes'],
      },
    });
    expect(readdirSync(node.home).sort()).toEqual(before);
    expect(existsSync(join(node.home, 'var'))).toBe(false);
  });

  it('with --agent but not --yes, names --yes alone (the run is never confirmed by default)', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-no-yes', 100);
    const result = await swarmNode(['wizard', '--agent', AGENT, '--every', '1h'], { env: node.env });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('pass --yes\n');
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
  });

  it.each([
    [['--agent', 'agent_nope'], /option '--agent <agent_id>' argument 'agent_nope' is invalid.*agent_ops_monitor_004/],
    [['--offer', 'gold'], /option '--offer <tier_id>' argument 'gold' is invalid/],
    [['--email', 'not-an-address'], /give an e-mail address such as you@example.com/],
    [['--every', '10y'], /"10y" is not a duration/],
    [['--every', '8d'], /outside 1s..7d/],
    [['--daily-cap', '-1'], /give dollars such as/],
    [['--daily-cap', '0.001'], /give dollars such as/],
    [['--no-register', '--every', '5m'], /--no-register goes without --every and --daily-cap/],
    [['--agent'], /option '--agent <agent_id>' argument missing/],
  ])('bad input %j: exit 2 with the reason, nothing sent or written', async (args, reason) => {
    const node = nodeEnv(CLOSED_PORT_URL);
    const result = await swarmNode(['wizard', '--yes', ...args], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(2);
    expect(result.stderr).toMatch(reason);
    expect(readdirSync(node.home)).toEqual([]);
  });

  it('an agent that needs input: an --input flag for each input its schema asks for, before any network call or write', async () => {
    const node = nodeEnv(CLOSED_PORT_URL);
    const signIn = ['--email', 'a@example.com', '--code-file', join(node.home, '..', 'no-code-yet')];
    const rag = await swarmNode(['wizard', ...signIn, '--agent', 'agent_research_rag_015', '--yes'], { env: node.env });
    expect(rag.exitCode, rag.stderr).toBe(2);
    expect(rag.stderr).toContain(
      'error: no terminal to ask on (stdin is not a TTY): pass --input corpus=<value>, --input question=<value>\n',
    );

    // One given: the other is named; the tutor's schema wants one property of two, and a question is one to type.
    const some = await swarmNode(
      ['--json', 'wizard', ...signIn, '--agent', 'agent_research_rag_015', '--input', 'corpus=/srv/docs', '--yes'],
      { env: node.env },
    );
    expect(some.exitCode).toBe(2);
    expect(some.json.error).toMatchObject({ code: 'not_a_terminal', missing_flags: ['--input question'] });
    const tutor = await swarmNode(['--json', 'wizard', ...signIn, '--agent', 'agent_svc_skills_005'], { env: node.env });
    expect(tutor.json.error).toMatchObject({
      message: '--json asks no questions: pass --input question=<value>, --yes',
      missing_flags: ['--input question', '--yes'],
    });
    for (const [agent, flag] of [
      ['agent_dev_review_012', 'repo'],
      ['agent_sales_outreach_008', 'leads'],
    ] as const) {
      const result = await swarmNode(['--json', 'wizard', ...signIn, '--agent', agent, '--yes'], { env: node.env });
      expect(result.json.error.missing_flags, agent).toContain(`--input ${flag}`);
    }
    // The ops monitor needs nothing: with no flag missing, the wizard goes to the (closed) network: exit 6.
    expect((await swarmNode(['wizard', ...signIn, '--agent', AGENT, '--yes'], { env: node.env })).exitCode).toBe(6);
    expect(readdirSync(node.home)).toEqual([]);
    expect((await swarmNode(['wizard', '--input', 'no-separator'], { env: node.env })).stderr).toContain('give key=value');
  });

  it('a stored token the service no longer accepts: says so, then names --email; no run, no database', async () => {
    const node = nodeEnv(service.baseUrl);
    const email = uniqueEmail('wizard-forged');
    const exp = Math.floor(Date.now() / 1000) + 3600;
    const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
    const forged = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: email, tier: 'svc_starter_agents', exp })}.${'A'.repeat(43)}`;
    writeCredentials(join(node.home, 'etc', 'credentials.json'), {
      jwt: { token: forged, sub: email, tier: 'svc_starter_agents', exp, stored_at: new Date().toISOString() },
    });
    const result = await swarmNode(['wizard', '--agent', AGENT, '--yes'], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/warning: the service does not accept the token: .+; sign in again/);
    expect(result.stderr).toContain('error: no terminal to ask on: pass --email <email>');
    expect(result.stderr).not.toContain(forged);
    expect(existsSync(join(node.home, 'var'))).toBe(false);
  });
});

describe('swarm-node wizard --agent … --yes: unattended', () => {
  it('signed in and funded: runs once, registers for manual runs only (no schedule nobody asked for), and says what next', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-unattended', 100);
    const result = await swarmNode(['wizard', '--agent', AGENT, '--yes'], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toContain(`Signed in as ${node.email} (Starter agents, 30 days left).`);
    expect(result.stderr).toContain(`Wallet: $1.00, enough for 25 run(s) of ${AGENT}.`);
    expect(result.stderr).toContain(`Running ${AGENT}…`);
    expect(result.stderr).toMatch(/✓ Ops monitor agent ran \(run \S+\): charged \$0\.04, the wallet now holds \$0\.96\./);
    expect(result.stderr).toContain(`Registered ${AGENT}: manual runs only, no daily cap.`);
    expect(result.stdout).toContain('Done.');
    expect(result.stdout).toContain('registered  manual runs only, no daily cap');
    expect(result.stdout).toContain(`swarm-node register ${AGENT} --every 1h   let the daemon run it on a schedule`);
    expect(`${result.stdout}${result.stderr}`).not.toMatch(JWT_PATTERN);
    expect(`${result.stdout}${result.stderr}`).not.toContain('⠋');
    expect(runsOf(node.home)).toEqual([{ agent_id: AGENT, source: 'wizard', status: 'succeeded', charged_cents: 4 }]);
    expect(registrationsOf(node.home)).toEqual([{ agent_id: AGENT, every_seconds: null, daily_cap_cents: null }]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(96);
  });

  it('--json with --every and --daily-cap: one JSON summary; run again with --yes alone, the registration keeps its schedule', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-json', 20);
    const first = await swarmNode(['--json', 'wizard', '--agent', AGENT, '--every', '5m', '--daily-cap', '1.00', '--yes'], {
      env: node.env,
    });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.json).toEqual({
      user_id: node.email,
      tier: 'svc_starter_agents',
      signed_in_now: false,
      // A bare host: the wizard enrolled it, and the agent ran here.
      node: { node_id: expect.any(String), enrolled_now: true },
      agent: { agent_id: AGENT, name: 'Ops monitor agent', price_cents: 4 },
      run: {
        run_id: expect.any(String),
        status: 'succeeded',
        charged_cents: 4,
        balance_cents: 16,
        output: expect.objectContaining({ host: expect.objectContaining({ hostname: hostname() }), findings: expect.any(Array) }),
        idempotency_key: expect.stringMatching(/^[0-9a-f-]{36}$/),
      },
      balance_cents: 16,
      registration: { created: true, changed: true, agent_id: AGENT, every: '5m', every_seconds: 300, daily_cap_cents: 100 },
      next_steps: expect.arrayContaining([expect.stringContaining('swarm-node status'), expect.stringContaining('swarm-node list')]),
    });

    // The registration's schedule is the service's, pinned to this node (UTC, one run at a time).
    const schedule = (): { schedule_id: string; updated_at: number; interval_seconds: number; node_id: string; overlap: string } => {
      const db = nodeDb(node.home);
      try {
        const { schedule_id, updated_at } = db
          .prepare('SELECT schedule_id, updated_at FROM registrations WHERE agent_id = ?')
          .get(AGENT) as {
          schedule_id: string;
          updated_at: number;
        };
        const atService = service.db
          .prepare('SELECT interval_seconds, node_id, overlap FROM schedules WHERE schedule_id = ?')
          .get(schedule_id) as { interval_seconds: number; node_id: string; overlap: string };
        return { schedule_id, updated_at, ...atService };
      } finally {
        db.close();
      }
    };
    const first5m = schedule();
    expect(first5m).toMatchObject({ interval_seconds: 300, node_id: first.json.node.node_id, overlap: 'buffer_one' });
    const again = await swarmNode(['--json', 'wizard', '--agent', AGENT, '--yes'], { env: node.env });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.json.node).toEqual({ node_id: first.json.node.node_id, enrolled_now: false });
    expect(again.json.registration).toEqual({
      created: false,
      changed: false,
      agent_id: AGENT,
      every: '5m',
      every_seconds: 300,
      daily_cap_cents: 100,
    });
    expect(again.stderr).toContain(`${AGENT} stays registered as it was: every 5m, daily cap $1.00.`);
    // Not written again, nor its schedule made twice.
    expect(schedule()).toEqual(first5m);
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM schedules WHERE user_id = ?').get(node.email)).toEqual({ n: 1 });

    const declined = await swarmNode(['--json', 'wizard', '--agent', AGENT, '--yes', '--no-register'], { env: node.env });
    expect(declined.exitCode, declined.stderr).toBe(0);
    expect(declined.json).toMatchObject({ registration: { changed: false, every_seconds: 300 }, balance_cents: 8 });
    expect(registrationsOf(node.home)).toEqual([{ agent_id: AGENT, every_seconds: 300, daily_cap_cents: 100 }]);
    expect(runsOf(node.home).map((run) => run.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it('insufficient balance: exit 3 with the wallet_login_url, before any run is journaled or charged', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-broke');
    const input = ['--input', `corpus=${ragCorpus()}`, '--input', 'question=Where are the backups?'];
    const human = await swarmNode(['wizard', '--agent', 'agent_research_rag_015', ...input, '--yes', '--every', '1h'], { env: node.env });
    expect(human.exitCode, human.stderr).toBe(3);
    expect(human.stderr).toContain('warning: the wallet holds $0.00; one run of agent_research_rag_015 costs $0.15');
    expect(human.stderr).toContain('error: insufficient balance: the wallet holds $0.00, one run of agent_research_rag_015 costs $0.15');
    expect(human.stderr).toContain(
      `Fund the wallet at ${service.baseUrl}/wallet/login (a link that signs you in there: ${asPrinted(node, 'swarm-node wallet login')}), then again: ${asPrinted(node, 'swarm-node wizard')}.`,
    );

    const json = await swarmNode(['--json', 'wizard', '--agent', 'agent_research_rag_015', ...input, '--yes'], { env: node.env });
    expect(json.exitCode).toBe(3);
    expect(json.json.error).toMatchObject({
      code: 'insufficient_balance',
      wallet_login_url: `${service.baseUrl}/wallet/login`,
      balance_cents: 0,
      price_cents: 15,
    });
    expect(runsOf(node.home)).toEqual([]);
    expect(registrationsOf(node.home)).toEqual([]);
  });

  it('not signed in, with --email and --code-file (the code of login --send-code): signs in (credentials 0600, the JWT never printed), then runs', async () => {
    const email = uniqueEmail('wizard-signin');
    await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
    await fundWallet(service.baseUrl, email, 10);
    const node = nodeEnv(service.baseUrl);
    const sent = await swarmNode(['--json', 'login', '--email', email, '--send-code'], { env: node.env });
    expect(sent.exitCode, sent.stderr).toBe(0);
    const mail = await nextMailTo(email, {
      match: (each) => each.text.includes(`reference ${String(sent.json.challenge_id).slice(0, 8)}`),
    });
    const codeFile = join(tempDir('wizard-code-'), 'code');
    writeFileSync(codeFile, signInCodeOf(mail));
    const result = await swarmNode(
      [
        '--json',
        'wizard',
        '--email',
        email,
        '--code-file',
        codeFile,
        '--agent',
        'agent_svc_skills_005',
        '--input',
        'question=What does a deploy token do?',
        '--yes',
        '--no-register',
      ],
      { env: node.env },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.json).toMatchObject({
      user_id: email,
      tier: 'dev_portal_execution_billing',
      signed_in_now: true,
      node: { enrolled_now: true },
      run: { status: 'succeeded', charged_cents: 5, output: { mode: 'answer', summary: expect.any(String) } },
      balance_cents: 5,
    });
    expect(`${result.stdout}${result.stderr}`).not.toMatch(JWT_PATTERN);
    const credentials = join(node.home, 'etc', 'credentials.json');
    expect(statSync(credentials).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(credentials, 'utf8')).jwt.sub).toBe(email);
  });

  // spec §1.7 on a bare host, for every agent that needs input: the wizard enrolls it, runs the agent here with the
  // --input flags, and the run is billed.
  it.each([
    ['agent_svc_skills_005', 5, () => ['--input', 'question=How long does a deploy token live?']],
    ['agent_research_rag_015', 15, () => ['--input', `corpus=${ragCorpus()}`, '--input', 'question=How long are snapshots kept?']],
    ['agent_dev_review_012', 12, () => ['--input', `repo=${gitRepo()}`]],
    ['agent_sales_outreach_008', 8, () => ['--input', `leads=${leadsFile()}`, '--input', 'template=Hello {{name}}, a note from us.']],
  ] as const)(
    '%s with its --input flags on a bare host: enrolls it, runs the agent here, billed, registers it with that input',
    async (agent, price, inputFlags) => {
      const node = await signedInNode(service.baseUrl, `wizard-input-${price}`, 100);
      const flags = inputFlags();
      const result = await swarmNode(['--json', 'wizard', '--agent', agent, ...flags, '--yes', '--every', '1h'], { env: node.env });
      expect(result.exitCode, result.stderr + result.stdout).toBe(0);
      expect(result.json).toMatchObject({
        node: { enrolled_now: true },
        run: { status: 'succeeded', charged_cents: price, output: { summary: expect.any(String) } },
        balance_cents: 100 - price,
      });
      expect(runsOf(node.home)).toEqual([{ agent_id: agent, source: 'wizard', status: 'succeeded', charged_cents: price }]);
      expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - price);
      // The daemon's scheduled runs have nobody to ask: they start from the input the first run was given.
      const given = Object.fromEntries(
        flags.filter((_, index) => index % 2 === 1).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
      );
      const list = await swarmNode(['--json', 'list'], { env: node.env });
      expect(list.json.registrations).toMatchObject([{ agent_id: agent, every_seconds: 3600, default_input: given }]);
    },
  );

  it('a code file that holds no code: exit 2 before any token is issued, and nothing but the code asked for is stored', async () => {
    const email = uniqueEmail('wizard-nocode');
    await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const node = nodeEnv(service.baseUrl);
    const codeFile = join(tempDir('wizard-code-'), 'code');
    writeFileSync(codeFile, 'not a code\n');
    const result = await swarmNode(['wizard', '--email', email, '--code-file', codeFile, '--agent', AGENT, '--yes'], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(2);
    expect(result.stderr).toContain(`${codeFile} does not hold a sign-in code`);
    expect(JSON.parse(readFileSync(join(node.home, 'etc', 'credentials.json'), 'utf8')).jwt).toBeUndefined();
  });
});

describe('swarm-node wizard --help', () => {
  it('documents every flag with examples, and loads no prompt, spinner, SQLite or HTTP module', async () => {
    const help = await swarmNode(['wizard', '--help']);
    expect(help.exitCode).toBe(0);
    for (const flag of [
      '--email <email>',
      '--offer <tier_id>',
      '--code-file <file>',
      '--agent <agent_id>',
      '--every <duration>',
      '--daily-cap <dollars>',
      '-y, --yes',
      '--no-register',
    ]) {
      expect(help.stdout).toContain(flag);
    }
    expect(help.stdout).toContain('--yes without --every registers the agent for manual runs only');
    expect(help.stdout).toMatch(/Example:\n\s+\$ swarm-node wizard\n\s+\$ swarm-node wizard --agent agent_ops_monitor_004 --yes/);

    // A resolve hook lists the files the program loads; their source maps say which modules are inside.
    const dir = tempDir('wizard-trace-');
    const trace = join(dir, 'loaded.txt');
    writeFileSync(trace, '');
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(trace)}, result.url + '\\n');
  return result;
}`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister(new URL('./hooks.mjs', import.meta.url));\n`,
    );
    const bin = join(stagedPackage(), 'bin', 'swarm-node.js');
    const traced = await execa('node', ['--import', join(dir, 'register.mjs'), bin, 'wizard', '--help'], { reject: false });
    expect(traced.exitCode).toBe(0);
    const sources: string[] = [];
    for (const url of readFileSync(trace, 'utf8')
      .split('\n')
      .filter((line) => line.includes('/dist/'))) {
      sources.push(...(JSON.parse(readFileSync(`${new URL(url).pathname}.map`, 'utf8')) as { sources: string[] }).sources);
    }
    expect(sources.some((source) => source.includes('src/cli/commands/wizard.ts'))).toBe(true);
    expect(
      sources.filter((source) =>
        /node_modules\/(@inquirer|@sinclair\/typebox|ora|undici|better-sqlite3)\/|src\/cli\/prompts\.ts|src\/node\/(store|service-client)\.ts/.test(
          source,
        ),
      ),
    ).toEqual([]);
  });
});
