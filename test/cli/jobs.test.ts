// swarm-node runs, runs show and cancel (docs/api.md "Runs as jobs"): the built CLI against the real svc-api. The
// history is the service's (every run of the user, wherever it was started); --local stays this host's journal; a
// run is shown as what it produced; a queued run is cancelled and refunded.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { signedInNode, walletBalance, type SignedInNode } from './fixtures.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
const service = useSvcApi();
afterAll(stopServingNodes);

const executeOverHttp = (node: SignedInNode, body: Record<string, unknown> = {}) =>
  httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
    method: 'POST',
    token: node.token,
    body: { user_id: node.email, agent_id: OPS, ...body },
    headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
  });

/** A repository whose last commit adds what the review reports: a TODO and a conflict marker, each at its line. */
async function repoWithFindings(): Promise<string> {
  const repo = tempDir('review-repo-');
  const git = (...args: string[]) =>
    execa('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], {
      cwd: repo,
      env: { HOME: repo },
    });
  await git('init', '-q');
  writeFileSync(join(repo, 'README.md'), '# app\n');
  await git('add', '.');
  await git('commit', '-qm', 'first');
  mkdirSync(join(repo, 'src'));
  writeFileSync(join(repo, 'src', 'app.js'), 'const a = 1;\n// TODO: remove the debug flag\n<<<<<<< HEAD\n');
  await git('add', '.');
  await git('commit', '-qm', 'second');
  return repo;
}

describe('swarm-node runs: the service history', () => {
  it('lists every run of the user, those started over HTTP on another node included; --local is what this host started', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'history' });
    const other = await enrollNode(service.baseUrl, node.email);
    await serve(service.baseUrl, other, { agents: [OPS] });
    for (let n = 0; n < 2; n += 1) expect((await executeOverHttp(node)).status).toBeLessThan(300);
    expect((await swarmNode(['run', OPS], { env: node.env })).exitCode).toBe(0);
    await expect
      .poll(async () => (await swarmNode(['--json', 'runs', '--status', 'succeeded'], { env: node.env })).json.runs.length, {
        timeout: 30_000,
      })
      .toBe(3);

    const human = await swarmNode(['runs'], { env: node.env });
    expect(human.exitCode, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^STARTED\s+AGENT\s+STATUS\s+CHARGED\s+NODE\s+TRIGGER\s+RUN ID$/m);
    expect(human.stdout).toContain('3 run(s) shown, $0.12 charged for them.');
    // What started each (docs/api.md "Triggers"): swarm-node run says manual; the executes over HTTP said nothing.
    const listed = (await swarmNode(['--json', 'runs'], { env: node.env })).json.runs as Array<{ run_id: string; trigger: string }>;
    expect(listed.map((run) => run.trigger)).toEqual(['manual', 'api', 'api']);
    expect(human.stdout).toMatch(new RegExp(`\\smanual\\s+${listed[0]!.run_id}$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`\\sapi\\s+${listed[1]!.run_id}$`, 'm'));
    const shown = await swarmNode(['runs', 'show', listed[0]!.run_id], { env: node.env });
    expect(shown.stdout).toMatch(/^Charged \$0\.04 · started \S+ \S+ \(trigger manual\)/m);
    const local = await swarmNode(['--json', 'runs', '--local'], { env: node.env });
    expect(local.json.totals).toMatchObject({ runs: 1, charged_cents: 4 });

    const page = await swarmNode(['--json', 'runs', '--limit', '2'], { env: node.env });
    expect(page.json.runs).toHaveLength(2);
    const rest = await swarmNode(['--json', 'runs', '--limit', '2', '--cursor', page.json.next_cursor], { env: node.env });
    expect(rest.json.runs).toHaveLength(1);
    expect(rest.json.next_cursor).toBeNull();
    const more = await swarmNode(['runs', '--limit', '2'], { env: node.env });
    expect(more.stdout).toContain(`Older runs: swarm-node runs --cursor ${page.json.next_cursor} --limit 2`);

    // By node: the id the fleet lists. --node names a node of this host, so a node id there is refused, never
    // ignored, with the filter's own name in the remedy.
    const byNode = await swarmNode(['--json', 'runs', '--node-id', other.node_id], { env: node.env });
    expect(byNode.json.runs.map((run: { node_id: string }) => run.node_id)).toEqual([other.node_id, other.node_id]);
    const mistaken = await swarmNode(['--json', 'runs', '--node', other.node_id], { env: node.env });
    expect(mistaken.exitCode).toBe(2);
    expect(mistaken.json.error.remedy).toContain(`swarm-node runs --node-id ${other.node_id}`);
    const notAnId = await swarmNode(['--json', 'runs', '--node-id', 'gpu'], { env: node.env });
    expect(notAnId.exitCode).toBe(2);
    expect(notAnId.json.error.message).toContain('is not a node id');
  });

  it('needs a signed-in user; refuses a bad filter before asking', async () => {
    const fresh = nodeEnv(service.baseUrl);
    const unsigned = await swarmNode(['runs'], { env: fresh.env });
    expect(unsigned.exitCode).toBe(4);
    expect(unsigned.stderr).toContain('swarm-node login');
    const node = await signedInNode(service.baseUrl, { label: 'filters', enroll: false });
    expect((await swarmNode(['runs', '--limit', '201'], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['runs', '--status', 'lost'], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['runs', '--agent', 'nope'], { env: node.env })).exitCode).toBe(5);
    const since = await swarmNode(['--json', 'runs', '--since', 'yesterday'], { env: node.env });
    expect(since.exitCode).toBe(2);
    expect(since.json.error.message).toContain('--since must be an ISO 8601 time');
    // In the words of the command line: the flag and the command, not a request body.
    expect(since.json.error.remedy).toContain('Correct what the message names and run the command again (its options: ');
    expect(since.json.error.remedy).toContain(' runs --help');
    expect(since.json.error.remedy).not.toContain('request body');
  });
});

describe('swarm-node runs show', () => {
  it("renders what a run produced: the review's findings with file and line, a quiz with its answers; --json has attempts and links", async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'show' });
    const repo = await repoWithFindings();
    const review = await swarmNode(['--json', 'run', 'agent_dev_review_012', '--input', `repo=${repo}`], { env: node.env });
    expect(review.exitCode, review.stderr).toBe(0);
    const shown = await swarmNode(['runs', 'show', review.json.run_id], { env: node.env });
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`Run ${review.json.run_id} of agent_dev_review_012: succeeded on node`);
    expect(shown.stdout).toMatch(/Findings \(\d+\):/);
    expect(shown.stdout).toMatch(/critical src\/app\.js:3\s+adds the merge-conflict marker/);
    expect(shown.stdout).toMatch(/src\/app\.js:2\s+adds a TODO/);
    expect(shown.stdout).toContain(`Logs: swarm-node logs ${review.json.run_id} · Artifacts: swarm-node artifacts ${review.json.run_id}`);
    // `run` itself shows the same, not only a summary.
    const again = await swarmNode(['run', 'agent_dev_review_012', '--input', `repo=${repo}`], { env: node.env });
    expect(again.stdout).toMatch(/critical src\/app\.js:3/);

    const quiz = await swarmNode(['--json', 'run', 'agent_svc_skills_005', '--input-file', '-'], { env: node.env, input: '{"quiz": 2}' });
    expect(quiz.exitCode, quiz.stderr).toBe(0);
    const quizShown = await swarmNode(['runs', 'show', quiz.json.run_id], { env: node.env });
    expect(quizShown.stdout).toContain('Quiz (2):');
    expect(quizShown.stdout).toMatch(/1\. .+\n\s+Answer: .+/);

    const json = await swarmNode(['--json', 'runs', 'show', quiz.json.run_id], { env: node.env });
    expect(json.json).toMatchObject({
      run_id: quiz.json.run_id,
      status: 'succeeded',
      attempts: [{ attempt: 1, outcome: 'succeeded' }],
      links: { logs: expect.any(String), artifacts: expect.any(String) },
    });
    const unknown = await swarmNode(['runs', 'show', randomUUID()], { env: node.env });
    expect(unknown.exitCode).toBe(5);
  });
});

describe('swarm-node cancel', () => {
  it('cancels a queued run and refunds it; a repeat says the same; a finished run is refused; an unknown one is exit 5', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'cancel', enroll: false });
    // A node that serves the agent but is not polling: the run waits for it.
    const offline = await enrollNode(service.baseUrl, node.email);
    expect(
      (await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents/${OPS}`, { method: 'PUT', token: offline.credential })).status,
    ).toBe(200);
    const queued = await executeOverHttp(node);
    expect(queued.body.status).toBe('queued');
    expect(await walletBalance(service.baseUrl, node.token)).toBe(96);

    const cancelled = await swarmNode(['cancel', queued.body.run_id], { env: node.env });
    expect(cancelled.exitCode, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain(`run ${queued.body.run_id} of ${OPS} cancelled; refunded, the wallet holds $1.00`);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
    expect((await swarmNode(['cancel', queued.body.run_id], { env: node.env })).exitCode).toBe(0);
    const listed = await swarmNode(['--json', 'runs', '--status', 'cancelled'], { env: node.env });
    expect(listed.json.runs.map((run: { run_id: string }) => run.run_id)).toEqual([queued.body.run_id]);

    await serve(service.baseUrl, offline, { agents: [OPS] });
    const done = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token: node.token,
      body: { user_id: node.email, agent_id: OPS },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(done.body.status).toBe('succeeded');
    const late = await swarmNode(['--json', 'cancel', done.body.run_id], { env: node.env });
    expect(late.exitCode).toBe(1);
    expect(late.json.error).toMatchObject({ code: 'run_finished', remedy: expect.stringContaining('swarm-node runs show') });
    expect((await swarmNode(['cancel', randomUUID()], { env: node.env })).exitCode).toBe(5);
  });
});
