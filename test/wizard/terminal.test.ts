// swarm-node wizard in a real pseudo-terminal (node-pty), key by key, against a real svc-api: what a person sees
// at each step, what the wizard leaves in the node's database and at the service, and Ctrl+C at any point.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { upsertRegistration } from '../../src/node/store/registrations.js';
import { nodeEnv } from '../helpers/cli.js';
import { fundWallet, payAndConfirm } from '../helpers/funnel.js';
import { mailIdsTo, nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import { spawnAsPrintedInTerminal } from '../cli/remedy-runner.js';
import { KEY, spawnSwarmNodePty, type PtySession } from '../helpers/pty.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { AGENT, nodeDb, registrationsOf, runsOf, signedInNode, walletBalance } from './fixtures.js';

const RAG = 'agent_research_rag_015';
const sessions: PtySession[] = [];
const service = useSvcApi();
afterAll(async () => {
  for (const session of sessions) session.kill();
});

/** The wizard, told to enroll a bare host (--enroll) unless `ask` (the question is the test's to answer). */
function wizard(env: Record<string, string>, args: string[] = [], ask = false): PtySession {
  const session = spawnSwarmNodePty(['wizard', ...(ask ? [] : ['--enroll']), ...args], env);
  sessions.push(session);
  return session;
}

describe('swarm-node wizard in a terminal', () => {
  it('happy path, key by key: signs in, lists the agents with prices, runs one billed run, registers it with a schedule and a cap', async () => {
    const email = uniqueEmail('wizard');
    await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
    await fundWallet(service.baseUrl, email, 100);
    const node = nodeEnv(service.baseUrl);
    // An agent registered earlier, to be marked in the list.
    const seeded = nodeDb(node.home);
    upsertRegistration(
      seeded,
      { agent_id: 'agent_dev_review_012', every_seconds: null, daily_cap_cents: null, default_input_json: null, schedule_id: null },
      Date.now(),
    );
    seeded.close();

    const session = wizard(node.env, [], true);
    await session.waitFor('Sign in with the e-mail address you paid with: the service mails it a code to type here.');
    await session.waitFor('E-mail address you paid with:');
    await session.typeLine('not-an-address');
    await session.waitFor('Enter the e-mail address you paid with');
    for (let i = 0; i < 'not-an-address'.length; i += 1) session.press(KEY.backspace);
    await session.typeLine(email);

    // The code goes to the inbox (the run's SMTP server), never to the screen.
    const sent = await session.waitFor(/Sent a sign-in code to \S+ \(reference ([0-9a-f]{8})\)/);
    const reference = /reference ([0-9a-f]{8})/.exec(sent)![1]!;
    const code = signInCodeOf(await nextMailTo(email, { match: (mail) => mail.text.includes(`reference ${reference}`) }));
    expect(session.screen()).not.toContain(code);
    await session.waitFor(`Code from the mail to ${email}:`);
    await session.typeLine('12');
    await session.waitFor('Type the 8 digits of the mail, such as 1234-5678.');
    session.press(KEY.backspace, KEY.backspace);
    await session.typeLine(code);
    // No offer asked: the one the address paid for is the sign-in's.
    await session.waitFor(`Signed in as ${email} (Dev portal); the token is kept in ${node.home}/etc/credentials.json (mode 0600).`);
    // A bare host becomes one of the user's nodes only when asked (the default, yes).
    await session.waitFor(`Enroll this host as one of ${email}'s nodes? Its runs then run here (as swarm-node enroll does). (Y/n)`);
    session.press(KEY.enter);

    const agents = await session.waitFor('Ops monitor agent  $0.04 per run');
    expect(agents).toContain('Agent to run (billed per run from your wallet):');
    expect(agents).toContain('❯ Dev review the service  $0.12 per run  (registered)');
    expect(agents).toContain('Sales outreach the service  $0.08 per run\n');
    expect(agents).toContain('Skills tutor  $0.05 per run\n');
    expect(agents).toContain('Research RAG the service  $0.15 per run\n');
    session.press(KEY.down, KEY.down, KEY.down, KEY.down);
    await session.waitFor('❯ Ops monitor agent  $0.04 per run');
    session.press(KEY.enter);
    await session.waitFor(`Agent: Ops monitor agent (${AGENT}), $0.04 per run.`);
    await session.waitFor(`Wallet: $1.00, enough for 25 run(s) of ${AGENT}.`);

    await session.waitFor(`Run ${AGENT} once now for $0.04 (the wallet holds $1.00)? (Y/n)`);
    session.press(KEY.enter);
    await session.waitFor(/✓ Ops monitor agent ran \(run \S+\): charged \$0\.04, the wallet now holds \$0\.96\./);
    // The real agent ran on this host (the wizard enrolled it): its own summary of the host's checks.
    await session.waitFor(/Result: (ok|warning|critical): \d+ (of \d+ )?checks/);

    await session.waitFor(`Register ${AGENT} on this node, so the daemon can run it on a schedule? (Y/n)`);
    session.press(KEY.enter);
    await session.waitFor('Run it every (5m, 1h, 1d; none: manual runs only): (1h)');
    await session.typeLine('10y');
    await session.waitFor('"10y" is not a duration');
    session.press(KEY.backspace, KEY.backspace, KEY.backspace);
    await session.typeLine('30s');
    await session.waitFor('a schedule runs at most once a minute: write 1m or more, or none.');
    session.press(KEY.backspace, KEY.backspace, KEY.backspace);
    await session.typeLine('30m');
    await session.waitFor('Daily cap in dollars (none: no cap; every 30m costs up to $1.92 a day, $57.60 a month): (1.00)');
    await session.typeLine('1.50');
    await session.waitFor(`Registered ${AGENT}: every 30m, daily cap $1.50.`);

    const summary = await session.waitFor('swarm-node status');
    expect(summary).toContain(`signed in   ${email} (dev_portal_execution_billing)`);
    expect(summary).toContain(`agent       ${AGENT} (Ops monitor agent, $0.04 per run)`);
    expect(summary).toMatch(/first run   \S+, charged \$0\.04/);
    expect(summary).toContain('wallet      $0.96');
    expect(summary).toContain('registered  every 30m, daily cap $1.50');
    expect(summary).toContain('swarm-node list');
    expect(summary).toContain('swarm-node runs');
    expect((await session.waitForExit()).exitCode).toBe(0);

    expect(runsOf(node.home)).toEqual([{ agent_id: AGENT, source: 'wizard', status: 'succeeded', charged_cents: 4 }]);
    expect(registrationsOf(node.home)).toEqual([
      { agent_id: 'agent_dev_review_012', every_seconds: null, daily_cap_cents: null },
      { agent_id: AGENT, every_seconds: 1800, daily_cap_cents: 150 },
    ]);
    // The JWT never reaches the screen.
    expect(session.screen()).not.toMatch(/eyJ[\w-]+\.[\w-]+\./);
  });

  it('empty wallet: shows the wallet page, waits and polls while the test funds it through the sandbox, then completes the run', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-empty');
    const session = wizard(node.env);
    await session.waitFor(`Signed in as ${node.email} (Starter agents, 30 days left).`);
    await session.waitFor('❯ Ops monitor agent  $0.04 per run');
    session.press(KEY.enter);
    await session.waitFor(`warning: the wallet holds $0.00; one run of ${AGENT} costs $0.04`);
    await session.waitFor(`Fund it at ${service.baseUrl}/wallet/login`);
    await session.waitFor('swarm-node wallet login prints a link that signs you in');
    await session.waitFor('Fund at least $0.04 more, then:');
    await session.waitFor('Quit (run swarm-node wizard again once funded)');
    session.press(KEY.enter);
    await session.waitFor('Waiting for the wallet to hold $0.04 (now $0.00); Ctrl+C quits');
    expect(runsOf(node.home)).toEqual([]);

    await fundWallet(service.baseUrl, node.email, 50);
    await session.waitFor('Funded: the wallet holds $0.50.', 10_000);
    await session.waitFor(`Run ${AGENT} once now for $0.04 (the wallet holds $0.50)?`);
    session.press(KEY.enter);
    await session.waitFor('charged $0.04, the wallet now holds $0.46.');
    await session.waitFor(`Register ${AGENT} on this node`);
    session.press('n', KEY.enter);
    await session.waitFor(`Not registered; later: swarm-node register ${AGENT} --every 1h`);
    const summary = await session.waitFor(`swarm-node register ${AGENT} --every 1h   let the daemon run it on a schedule`);
    expect(summary).toContain('registered  no');
    expect((await session.waitForExit()).exitCode).toBe(0);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(46);
    expect(runsOf(node.home)).toEqual([{ agent_id: AGENT, source: 'wizard', status: 'succeeded', charged_cents: 4 }]);
    expect(registrationsOf(node.home)).toEqual([]);
  });

  /** The wizard signing in `email` (paid) up to its code prompt: the code mailed, and one that is not it. */
  async function atCodePrompt(label: string): Promise<{ email: string; session: PtySession; code: string; wrong: string; home: string }> {
    const email = uniqueEmail(label);
    await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const node = nodeEnv(service.baseUrl);
    const session = wizard(node.env, ['--email', email]);
    const sent = await session.waitFor(/Sent a sign-in code to \S+ \(reference ([0-9a-f]{8})\)/);
    const reference = /reference ([0-9a-f]{8})/.exec(sent)![1]!;
    const code = signInCodeOf(await nextMailTo(email, { match: (mail) => mail.text.includes(`reference ${reference}`) }));
    await session.waitFor(`Code from the mail to ${email}:`);
    return { email, session, code, wrong: code === '0000-0000' ? '1111-1111' : '0000-0000', home: node.home };
  }

  it('a mistyped code is asked for again with the tries left; the right one then signs in', async () => {
    const { email, session, code, wrong } = await atCodePrompt('wizard-retype');
    await session.typeLine(wrong);
    await session.waitFor(/that is not the code of the mail \(reference [0-9a-f]{8}\): 4 tries left; type it again/);
    await session.waitFor(`Code from the mail to ${email}:`);
    await session.typeLine(code);
    await session.waitFor(`Signed in as ${email}`);
    session.press(KEY.ctrlC);
    expect((await session.waitForExit()).exitCode).toBe(130);
  });

  it('five wrong codes: exit 4, and the remedy starts the wizard over as invoked, which mails a new code and signs in', async () => {
    const { email, session, code, wrong, home } = await atCodePrompt('wizard-spent');
    for (let left = 4; left >= 1; left -= 1) {
      await session.typeLine(wrong);
      await session.waitFor(`${left} ${left === 1 ? 'try' : 'tries'} left; type it again`);
      await session.waitFor(`Code from the mail to ${email}:`);
    }
    await session.typeLine(wrong);
    expect((await session.waitForExit()).exitCode).toBe(4);
    const remedy = /This code takes no more tries \(typed wrong too often, expired, or used\): get a new one mailed to \S+: (.+)$/m.exec(
      session.screen(),
    );
    expect(remedy, session.screen()).not.toBeNull();
    expect(remedy![1]).toBe(`SWARM_NODE_HOME=${home} swarm-node wizard --email ${email} --enroll --base-url ${service.baseUrl}`);
    expect(session.screen()).not.toContain('swarm-node login');

    // As printed, in another shell: a new code is mailed (the spent one is not offered again), and it signs in.
    const before = mailIdsTo(email);
    const again = spawnAsPrintedInTerminal(remedy![1]!);
    sessions.push(again);
    await again.waitFor(`Sent a sign-in code to ${email}`);
    const fresh = signInCodeOf(await nextMailTo(email, { after: before }));
    expect(fresh).not.toBe(code);
    await again.waitFor(`Code from the mail to ${email}:`);
    await again.typeLine(fresh);
    await again.waitFor(`Signed in as ${email}`);
    again.kill();
  }, 60_000);

  it('an address that paid for nothing: the code is taken, then exit 5 with the remedy, nothing but the spent code stored', async () => {
    const email = uniqueEmail('wizard-unpaid');
    const node = nodeEnv(service.baseUrl);
    const session = wizard(node.env, ['--email', email]);
    const sent = await session.waitFor(/Sent a sign-in code to \S+ \(reference ([0-9a-f]{8})\)/);
    const reference = /reference ([0-9a-f]{8})/.exec(sent)![1]!;
    await session.waitFor(`Code from the mail to ${email}:`);
    session.typeLine(signInCodeOf(await nextMailTo(email, { match: (mail) => mail.text.includes(`reference ${reference}`) })));
    await session.waitFor('error: ');
    await session.waitFor(`has paid for nothing yet: pay at the payment provider with this address`);
    expect((await session.waitForExit()).exitCode).toBe(5);
    expect(JSON.parse(readFileSync(`${node.home}/etc/credentials.json`, 'utf8')).jwt).toBeUndefined();
  });

  it('an agent registered already: the run declined, its registration kept as it was (the default), and how to run it later', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-kept', 100);
    const seeded = nodeDb(node.home);
    upsertRegistration(
      seeded,
      { agent_id: AGENT, every_seconds: 300, daily_cap_cents: 100, default_input_json: null, schedule_id: null },
      Date.now(),
    );
    seeded.close();
    const session = wizard(node.env);
    await session.waitFor('❯ Ops monitor agent  $0.04 per run  (registered)');
    session.press(KEY.enter);
    await session.waitFor(`Run ${AGENT} once now for $0.04 (the wallet holds $1.00)? (Y/n)`);
    session.press('n', KEY.enter);
    await session.waitFor(`No run now; run it any time: swarm-node run ${AGENT}`);
    await session.waitFor(`${AGENT} is registered; change its schedule or daily cap? (y/N)`);
    session.press(KEY.enter);
    await session.waitFor(`${AGENT} stays registered as it was: every 5m, daily cap $1.00.`);
    const summary = await session.waitFor('swarm-node status');
    expect(summary).toContain('first run   not run');
    expect(summary).toContain('registered  every 5m, daily cap $1.00 (as before)');
    expect(summary).toContain(`swarm-node run ${AGENT}   run it once`);
    expect((await session.waitForExit()).exitCode).toBe(0);
    expect(runsOf(node.home)).toEqual([]);
    expect(registrationsOf(node.home)).toEqual([{ agent_id: AGENT, every_seconds: 300, daily_cap_cents: 100 }]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
  });
});

describe('an agent that needs input, in a terminal', () => {
  it("asks for each input its schema requires, in the schema's words, refuses an empty answer, and runs the agent with them", async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-input', 100);
    const corpus = tempDir('wizard-corpus-');
    writeFileSync(join(corpus, 'backup.md'), '# Backups\n\nSnapshots are kept for fourteen days before they are pruned.\n');
    const session = wizard(node.env, ['--agent', RAG]);
    await session.waitFor(`Agent: Research RAG the service (${RAG}), $0.15 per run.`);
    // The field's name, then the schema's words for it.
    await session.waitFor(
      "corpus (Absolute path of a folder of Markdown (.md, .markdown) and text (.txt, .text) files on the node's host.):",
    );
    session.press(KEY.enter);
    await session.waitFor(`${RAG} needs corpus to run (unattended: --input corpus=…).`);
    // A relative path is refused at once, naming the field: not after the questions that follow.
    await session.typeLine('docs');
    await session.waitFor('corpus must match ^/');
    for (let i = 0; i < 'docs'.length; i += 1) session.press(KEY.backspace);
    await session.typeLine(corpus);
    await session.waitFor('question (The question, in plain words; search operators in it are read as text.):');
    await session.typeLine('How long are snapshots kept?');
    await session.waitFor(`Run ${RAG} once now for $0.15 (the wallet holds $1.00)? (Y/n)`);
    session.press(KEY.enter);
    await session.waitFor(/✓ Research RAG the service ran \(run \S+\): charged \$0\.15, the wallet now holds \$0\.85\./);
    await session.waitFor('Result: Snapshots are kept for fourteen days before they are pruned.');
    await session.waitFor(`Register ${RAG} on this node`);
    session.press('n', KEY.enter);
    await session.waitFor('swarm-node runs');
    expect((await session.waitForExit()).exitCode).toBe(0);

    const db = nodeDb(node.home);
    const journaled = db.prepare('SELECT status, charged_cents, input_json FROM runs').all();
    db.close();
    expect(journaled).toEqual([
      { status: 'succeeded', charged_cents: 15, input_json: JSON.stringify({ corpus, question: 'How long are snapshots kept?' }) },
    ]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(85);
  });

  it('declining the enrollment ends it: exit 1, this host not enrolled, nothing run or charged', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-no-enroll', 100);
    const session = wizard(node.env, ['--agent', AGENT], true);
    await session.waitFor(`Enroll this host as one of ${node.email}'s nodes?`);
    await session.typeLine('n');
    expect((await session.waitForExit()).exitCode).toBe(1);
    expect(session.screen()).toContain('not confirmed: this host was not enrolled, and nothing was run or charged');
    expect(JSON.parse(readFileSync(join(node.home, 'etc', 'credentials.json'), 'utf8')).node).toBeUndefined();
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
  });

  it('given some inputs as --input, asks only for the rest; Ctrl+C there exits 130 with nothing run or charged', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-input-int', 100);
    const session = wizard(node.env, ['--agent', RAG, '--input', 'corpus=/srv/docs']);
    await session.waitFor('The question, in plain words');
    expect(session.screen()).not.toContain('Absolute path of a folder');
    session.press(KEY.ctrlC);
    expect((await session.waitForExit()).exitCode).toBe(130);
    expect(runsOf(node.home)).toEqual([]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
  });
});

describe('Ctrl+C in the wizard', () => {
  it('at the agent prompt: exits 130, no run in the journal, nothing charged', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-int-agent', 100);
    const session = wizard(node.env);
    await session.waitFor('Agent to run (billed per run from your wallet):');
    session.press(KEY.ctrlC);
    expect((await session.waitForExit()).exitCode).toBe(130);
    expect(runsOf(node.home)).toEqual([]);
    expect(registrationsOf(node.home)).toEqual([]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
  });

  it('at the schedule prompt of the registration: exits 130 with no registration, the run that was sent journaled once', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-int-register', 100);
    const session = wizard(node.env, ['--agent', AGENT]);
    await session.waitFor(`Run ${AGENT} once now`);
    session.press(KEY.enter);
    await session.waitFor(`Register ${AGENT} on this node`);
    session.press(KEY.enter);
    await session.waitFor('Run it every');
    await session.typeLine('5m');
    await session.waitFor('Daily cap in dollars');
    session.press(KEY.ctrlC);
    expect((await session.waitForExit()).exitCode).toBe(130);
    expect(registrationsOf(node.home)).toEqual([]);
    expect(runsOf(node.home)).toEqual([{ agent_id: AGENT, source: 'wizard', status: 'succeeded', charged_cents: 4 }]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(96);
  });

  it('while it waits for funds (a spinner, not a prompt): exits 130, no run', async () => {
    const node = await signedInNode(service.baseUrl, 'wizard-int-wait');
    const session = wizard(node.env, ['--agent', AGENT]);
    await session.waitFor('Wait here while I fund it');
    session.press(KEY.enter);
    await session.waitFor('Waiting for the wallet to hold $0.04 (now $0.00); Ctrl+C quits');
    session.press(KEY.ctrlC);
    expect((await session.waitForExit()).exitCode).toBe(130);
    expect(session.screen()).not.toContain('Funded');
    expect(session.screen()).not.toContain(`Run ${AGENT} once now`);
    expect(runsOf(node.home)).toEqual([]);
    expect(registrationsOf(node.home)).toEqual([]);
  });
});
