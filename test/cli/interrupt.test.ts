// Ctrl+C while a command waits exits 130 through the CLI's cleanup, not by the signal, and says what it leaves
// behind at the service: a billed run that goes on (its id, its charge, the commands that cancel and follow it), a
// session whose wait it ended (its id, the command that resumes it).
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, httpRequest } from '../helpers/http.js';
import { asPrinted, swarmNode } from '../helpers/cli.js';
import { confirmPayment, createPayment, payAndConfirm } from '../helpers/funnel.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { loginByMail, signedInNode, walletBalance, type SignedInNode } from './fixtures.js';
import { KEY, spawnSwarmNodePty } from '../helpers/pty.js';
import { SWARM_NODE_BIN, useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { contractInputFlags, heldAgentProgram, installTestBundle } from '../helpers/bundles.js';
import { dirname, join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { runAsPrinted } from './remedy-runner.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
/** Its bundle here answers only once the test releases it: a node's own run that waits as long as needed. */
const HELD_AGENT = 'agent_research_rag_015';
const release = join(tempDir('held-agent-'), 'release');
afterAll(async () => {
  // A held agent left by a run cut short answers and ends (its temp directory may be gone with the suite's).
  mkdirSync(dirname(release), { recursive: true });
  writeFileSync(release, '');
  await stopServingNodes();
});

describe('Ctrl+C during a spinner', () => {
  const service = useSvcApi();

  /** A signed-in user (not a node) with $1, and a node of theirs that serves OPS but is offline: a run waits for it. */
  async function userWithOfflineNode(label: string): Promise<SignedInNode & { nodeId: string; credential: string }> {
    const user = await signedInNode(service.baseUrl, { fundCents: 100, label, enroll: false });
    const offline = await enrollNode(service.baseUrl, user.email);
    const served = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents/${OPS}`, { method: 'PUT', token: offline.credential });
    expect(served.status, served.text).toBeLessThan(300);
    return { ...user, nodeId: offline.node_id, credential: offline.credential };
  }

  it('run: prints the run it leaves running, its charge, and the cancel and follow commands, which work as printed; exit 130', async () => {
    const user = await userWithOfflineNode('interrupt-run');
    const session = spawnSwarmNodePty(['run', OPS], user.env);
    const started = await session.waitFor(/Run (\S+) started \(queued, waiting for a node\): \$0\.04 charged/, 20_000);
    const runId = /Run (\S+) started/.exec(started)![1]!;
    session.press(KEY.ctrlC);
    const exit = await session.waitForExit(10_000);
    expect(exit.exitCode).toBe(130);
    expect(exit.signal || undefined, 'ended by the signal instead of by the CLI').toBeUndefined();
    const screen = session.screen();
    expect(screen).toContain(`run ${runId} of ${OPS} keeps running at the service (queued, waiting for a node); $0.04 is charged for it`);
    // As printed, the commands carry the home and the service this one acted on (docs/api.md "Remedies").
    const cancel = /Cancel it: (.+?)\. Or follow it again: (.+)$/m.exec(screen);
    expect(cancel, screen).not.toBeNull();
    expect(cancel![1]).toBe(asPrinted(user, `swarm-node cancel ${runId}`));
    expect(cancel![2]).toBe(asPrinted(user, `swarm-node logs ${runId} --follow`));
    // Charged while it waits: the money is held, as printed.
    expect(await walletBalance(service.baseUrl, user.token)).toBe(96);

    // The printed cancel, typed as printed: the run ends cancelled and is refunded.
    const cancelled = await runAsPrinted(cancel![1]!);
    expect(cancelled.exitCode, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain(`run ${runId} of ${OPS} cancelled; refunded, the wallet holds $1.00`);
  }, 90_000);

  it('run --json: one JSON document says the run keeps running, with its id, status and charge', async () => {
    const user = await userWithOfflineNode('interrupt-json');
    const child = execa('node', [SWARM_NODE_BIN, '--json', 'run', OPS], { env: user.env, reject: false, stdin: 'ignore' });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const runId = await waitFor(async () => /Run (\S+) started/.exec(stderr)?.[1], 'the line saying the run started', 20_000);
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    const document = JSON.parse(String(result.stdout));
    expect(document.error).toMatchObject({
      code: 'interrupted',
      run_id: runId,
      agent_id: OPS,
      run_status: 'queued',
      node_id: null,
      charged_cents: 4,
      balance_cents: 96,
      keeps_running: true,
      remedy: expect.stringContaining(`swarm-node cancel ${runId}`),
    });
    // What it names is there to follow: the run is still queued at the service.
    const shown = await swarmNode(['--json', 'runs', 'show', runId], { env: user.env });
    expect(shown.json.status).toBe('queued');
    // And once the node comes, it runs: Ctrl+C ended the wait, not the run.
    await serve(service.baseUrl, { node_id: user.nodeId, credential: user.credential, email: user.email }, { agents: [OPS] });
    const followed = await swarmNode(['logs', runId, '--follow'], { env: user.env });
    expect(followed.exitCode, followed.stderr).toBe(0);
    expect(followed.stderr).toContain(`Run ${runId} succeeded.`);
  }, 90_000);

  it('run on an enrolled node: Ctrl+C stops the agent here, and the message says so, with how to see how the run ended', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'interrupt-own' });
    installTestBundle(node.home, HELD_AGENT, heldAgentProgram(release));
    const session = spawnSwarmNodePty(['run', HELD_AGENT, ...contractInputFlags(HELD_AGENT)], node.env);
    const started = await session.waitFor(/Run (\S+) started \(running, on node \S+\)/, 20_000);
    const runId = /Run (\S+) started/.exec(started)![1]!;
    session.press(KEY.ctrlC);
    expect((await session.waitForExit(10_000)).exitCode).toBe(130);
    const screen = session.screen();
    expect(screen).toContain(`run ${runId} of ${HELD_AGENT} was stopped on this node; it ends failed and refunded`);
    // Not "keeps running": nothing to cancel or follow here.
    expect(screen).not.toContain('keeps running');
    const show = /See how it ended: (.+)$/m.exec(screen);
    expect(show![1]).toBe(asPrinted(node, `swarm-node runs show ${runId}`));
    const shown = await runAsPrinted(show![1]!);
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(runId);
  }, 60_000);

  it('activate waiting for an unconfirmed payment shows its deadline; Ctrl+C exits 130 naming the session and the command that resumes it', async () => {
    const email = uniqueEmail('interrupt');
    const home = { SWARM_NODE_HOME: tempDir('interrupt-home-'), SVC_BASE_URL: service.baseUrl };
    await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', email);
    expect((await loginByMail({ ...home, NO_COLOR: '1' }, email)).exitCode).toBe(0);
    const paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const session = spawnSwarmNodePty(
      ['activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', paymentId, '--wait', '60'],
      home,
    );
    await session.waitFor(
      new RegExp(`Payment ${paymentId} not confirmed yet; retry 1 in \\d+s \\(waiting until \\d\\d:\\d\\d:\\d\\d UTC, --wait 60\\)`),
      15_000,
    );
    session.press(KEY.ctrlC);
    const exit = await session.waitForExit(10_000);
    expect(exit.exitCode).toBe(130);
    expect(exit.signal || undefined, 'ended by the signal instead of by the CLI').toBeUndefined();
    const resume = new RegExp(`swarm-node activate --session (\\S+) --payment ${paymentId}`).exec(session.screen());
    expect(resume, session.screen()).not.toBeNull();
    expect(session.screen()).toContain(`session ${resume![1]}`);
    // Nothing was consumed: the payment is still pending at the provider, free to activate later.
    const payment = await apiClient(service.baseUrl).get(`/sandbox/payments/${paymentId}`);
    expect(payment.body.status).toBe('PENDING');
    // The printed command resumes it once the payment is confirmed: the same session gives its deploy token.
    await confirmPayment(service.baseUrl, paymentId);
    const printed = /Resume the wait \(the same session and payment\): (.+)$/m.exec(session.screen())![1]!;
    const resumed = await runAsPrinted(`${printed} --json`);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(resumed.json).toMatchObject({ session_id: resume![1], deploy_token: expect.any(String) });
  }, 60_000);

  it('activate --json: Ctrl+C once the wait began writes one JSON document naming the session and the payment', async () => {
    const email = uniqueEmail('interrupt-json');
    const home = { SWARM_NODE_HOME: tempDir('interrupt-home-'), SVC_BASE_URL: service.baseUrl, NO_COLOR: '1' };
    await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', email);
    expect((await loginByMail(home, email)).exitCode).toBe(0);
    const paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const args = ['--json', 'activate', '--tier', 'svc_starter_agents', '--payment', paymentId, '--wait', '60'];
    const child = execa('node', [SWARM_NODE_BIN, ...args], { env: home, reject: false, stdin: 'ignore' });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const sessionId = await waitFor(
      async () => /is not confirmed yet: waiting for it until \d\d:\d\d:\d\d UTC \(session (\S+)\)/.exec(stderr)?.[1],
      'the line saying the wait began',
      20_000,
    );
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    expect(JSON.parse(String(result.stdout)).error).toMatchObject({
      code: 'interrupted',
      session_id: sessionId,
      payment_id: paymentId,
      remedy: expect.stringContaining(`swarm-node activate --session ${sessionId} --payment ${paymentId}`),
    });
  });
});
