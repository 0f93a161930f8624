// register, unregister, list, run, runs, wallet, docs, status: the built binary against the real svc-api.
import { describe, expect, it } from 'vitest';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { readCredentials, writeCredentials } from '../../src/node/identity/credentials.js';
import { journalRunStarted } from '../../src/node/store/journal.js';
import { asPrinted, nodeEnv, swarmNode } from '../helpers/cli.js';
import { apiClient } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { deadPid, nodeDb, signedInNode, walletBalance, type SignedInNode } from './fixtures.js';

const AGENT = 'agent_ops_monitor_004';
const PRICE = 4;
const CLOSED_PORT_URL = 'http://127.0.0.1:9';
/** The skills tutor needs a question (or a quiz): it refuses a run with no input. */
const QUESTION = 'What is a deploy token?';

/** The node this home was enrolled as (signedInNode enrolls it). */
function nodeIdOf(node: SignedInNode): string {
  return readCredentials(join(node.home, 'etc', 'credentials.json')).node!.node_id;
}

const service = useSvcApi();

describe('swarm-node register, unregister, list', () => {
  it('registers an agent, updates it on re-register keeping what was not given, and lists it', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'register' });
    const first = await swarmNode(['--json', 'register', AGENT, '--every', '5m', '--daily-cap', '1.50'], { env: node.env });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.json).toEqual({
      created: true,
      agent_id: AGENT,
      name: 'Ops monitor agent',
      price_cents: PRICE,
      every: '5m',
      every_seconds: 300,
      daily_cap_cents: 150,
      default_input: null,
      user_id: node.email,
      node_id: nodeIdOf(node),
      schedule_id: expect.any(String),
      next_run_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/),
      // 288 runs of $0.04 a day is $11.52, held to the $1.50 cap; 30 capped days a month.
      cost: { runs_per_day: 288, per_day_cents: 150, runs_per_month: 8640, per_month_cents: 4500 },
    });
    // The schedule is the service's, pinned to this node, as the daemon kept one: UTC, one run at a time.
    const scheduleOf = (id: string) =>
      service.db
        .prepare('SELECT agent_id, interval_seconds, time_zone, overlap, node_id, paused FROM schedules WHERE schedule_id = ?')
        .get(id);
    const scheduleId = first.json.schedule_id as string;
    expect(scheduleOf(scheduleId)).toEqual({
      agent_id: AGENT,
      interval_seconds: 300,
      time_zone: 'UTC',
      overlap: 'buffer_one',
      node_id: nodeIdOf(node),
      paused: 0,
    });
    const hourly = await swarmNode(['register', AGENT, '--every', '1h'], { env: node.env });
    expect(hourly.stdout).toContain('Costs up to $0.96 a day (24 runs) and $28.80 a month (720 runs), held to the daily cap.');
    expect(hourly.stderr).toContain(`swarm-node schedule show ${scheduleId}`);
    // Changed, not made again.
    expect(scheduleOf(scheduleId)).toMatchObject({ interval_seconds: 3600 });
    expect(service.db.prepare('SELECT COUNT(*) AS n FROM schedules WHERE user_id = ?').get(node.email)).toEqual({ n: 1 });
    const again = await swarmNode(['--json', 'register', AGENT, '--daily-cap', '2'], { env: node.env });
    expect(again.json).toMatchObject({ created: false, every_seconds: 3600, daily_cap_cents: 200, schedule_id: scheduleId });
    const manual = await swarmNode(['register', AGENT, '--every', 'none'], { env: node.env });
    expect(manual.exitCode, manual.stderr).toBe(0);
    expect(manual.stdout).toBe('Updated agent_ops_monitor_004 (Ops monitor agent, $0.04 per run): manual runs only, daily cap $2.00.');
    expect(scheduleOf(scheduleId)).toBeUndefined();
    // A new schedule runs a minute apart at the most often, as the service's own.
    const often = await swarmNode(['register', 'agent_dev_review_012', '--every', '30s'], { env: node.env });
    expect(often.exitCode).toBe(2);
    expect(often.stderr).toMatch(
      /^error: --every 30s is too often: a schedule runs at most once a minute\nGive 1m or more: .*swarm-node register agent_dev_review_012 --every 1m/,
    );
    // Its runs start from the registration's input, checked as the service checks a run's.
    const reviewed = await swarmNode(['register', 'agent_dev_review_012', '--every', '1m', '--input', 'repo=/srv/app'], { env: node.env });
    expect(reviewed.exitCode, reviewed.stderr).toBe(0);
    const asked = await swarmNode(['register', 'agent_svc_skills_005', '--every', '7d', '--input', 'question=What is a node?'], {
      env: node.env,
    });
    expect(asked.exitCode, asked.stderr).toBe(0);

    const list = await swarmNode(['--json', 'list'], { env: node.env });
    expect(list.exitCode, list.stderr).toBe(0);
    expect(list.json.registrations.map((r: { agent_id: string }) => r.agent_id)).toEqual([
      'agent_dev_review_012',
      AGENT,
      'agent_svc_skills_005',
    ]);
    expect(list.json.registrations[1]).toMatchObject({
      every_seconds: null,
      daily_cap_cents: 200,
      spent_today_cents: 0,
      last_run_at: null,
    });
    expect(list.json.day_start).toMatch(/T00:00:00\.000Z$/);
    const human = await swarmNode(['list'], { env: node.env });
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^AGENT\s+EVERY\s+DAILY CAP\s+SPENT TODAY\s+LAST RUN\s+NEXT RUN$/);
    // Its next run as the service has it: at the next whole minute.
    expect(lines[1]).toMatch(/^agent_dev_review_012\s+1m\s+-\s+\$0\.00\s+-\s+\d{4}-\d\d-\d\d \d\d:\d\d/);
    expect(lines[2]).toMatch(/^agent_ops_monitor_004\s+manual\s+\$2\.00\s+\$0\.00\s+-\s+-$/);
    expect(lines[3]).toMatch(/^agent_svc_skills_005\s+7d\s/);
    // Columns line up: every row starts its second column where the header does.
    const column = lines[0]!.indexOf('EVERY');
    for (const line of lines.slice(1)) expect(line[column - 1]).toBe(' ');

    const removed = await swarmNode(['--json', 'unregister', 'agent_dev_review_012'], { env: node.env });
    const reviewSchedule = list.json.registrations[0].schedule_id as string;
    expect(removed.json).toEqual({
      agent_id: 'agent_dev_review_012',
      removed: true,
      withdrawn: true,
      schedule: { schedule_id: reviewSchedule, removed: true },
    });
    expect(scheduleOf(reviewSchedule)).toBeUndefined();
    const gone = await swarmNode(['--json', 'unregister', 'agent_dev_review_012'], { env: node.env });
    expect(gone.exitCode).toBe(5);
    expect(gone.json.error.code).toBe('not_found');
    expect((await swarmNode(['--json', 'list'], { env: node.env })).json.registrations).toHaveLength(2);
  });

  it('stores the input runs start from: run --input goes over it, checked against the schema first, replaced whole, cleared', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'register-input', fundCents: 100 });
    const corpus = tempDir('corpus-');
    writeFileSync(join(corpus, 'backups.md'), '# Backups\n\nThe nightly backup of the ledger runs at 02:00 UTC to the cold store.\n');
    writeFileSync(join(corpus, 'keys.md'), '# Keys\n\nSigning keys are rotated every ninety days by the on-call engineer.\n');
    const RAG = 'agent_research_rag_015';

    // Checked before anything is stored: a relative corpus is refused by the schema (exit 2), nothing registered.
    const refused = await swarmNode(['--json', 'register', RAG, '--input', 'corpus=docs'], { env: node.env });
    expect(refused.exitCode).toBe(2);
    expect(refused.json.error).toMatchObject({ code: 'input_invalid', errors: [{ path: '/input/corpus', message: 'must match ^/' }] });
    expect((await swarmNode(['--json', 'list'], { env: node.env })).json.registrations).toEqual([]);
    expect((await swarmNode(['register', RAG, '--input', 'corpus=/x', '--clear-input'], { env: node.env })).exitCode).toBe(2);

    const stored = await swarmNode(['register', RAG, '--input', `corpus=${corpus}`], { env: node.env });
    expect(stored.exitCode, stored.stderr).toBe(0);
    expect(stored.stdout).toMatch(/manual runs only, no daily cap, runs start from the input \{corpus\}\.$/);
    const listed = await swarmNode(['--json', 'list'], { env: node.env });
    expect(listed.json.registrations[0]).toMatchObject({ agent_id: RAG, default_input: { corpus } });

    // The run gives the question; the corpus comes from the registration. The real agent answers from the files.
    const ran = await swarmNode(['--json', 'run', RAG, '--input', 'question=When does the backup run?'], { env: node.env });
    expect(ran.exitCode, ran.stderr).toBe(0);
    expect(JSON.stringify(ran.json.output)).toContain('backups.md');
    // A run's own field wins over the stored one.
    const elsewhere = tempDir('corpus-other-');
    writeFileSync(join(elsewhere, 'other.md'), '# Other\n\nNothing about backups here, only the weather report for Tuesday.\n');
    const over = await swarmNode(['--json', 'run', RAG, '--input', `corpus=${elsewhere}`, '--input', 'question=weather'], {
      env: node.env,
    });
    expect(over.exitCode, over.stderr).toBe(0);
    expect(JSON.stringify(over.json.output)).toContain('other.md');
    expect(JSON.stringify(over.json.output)).not.toContain('backups.md');

    // Options left out keep it; --input replaces it whole; --clear-input forgets it.
    // A schedule's runs have no one to give a question: one from this input would only be refused, so it is now.
    const scheduled = await swarmNode(['--json', 'register', RAG, '--every', '1h'], { env: node.env });
    expect([scheduled.exitCode, scheduled.json.error?.code]).toEqual([2, 'input_invalid']);
    expect((await swarmNode(['--json', 'register', RAG, '--daily-cap', '1'], { env: node.env })).json.default_input).toEqual({ corpus });
    const file = join(tempDir('input-'), 'input.json');
    writeFileSync(file, JSON.stringify({ corpus: elsewhere, question: 'weather' }));
    expect((await swarmNode(['--json', 'register', RAG, '--input-file', file], { env: node.env })).json.default_input).toEqual({
      corpus: elsewhere,
      question: 'weather',
    });
    const cleared = await swarmNode(['--json', 'register', RAG, '--clear-input'], { env: node.env });
    expect(cleared.json).toMatchObject({ default_input: null, daily_cap_cents: 100, every_seconds: null });
    const bare = await swarmNode(['--json', 'run', RAG, '--input', 'question=x'], { env: node.env });
    expect(bare.exitCode).toBe(2);
    expect(bare.json.error).toMatchObject({ code: 'input_invalid', errors: [{ path: '/input/corpus', message: 'is required' }] });
  });

  it('needs a JWT the service verifies (4), a SKU of the catalog (5), and well-formed durations and caps (2); nothing is stored otherwise', async () => {
    const fresh = nodeEnv(service.baseUrl);
    const notSignedIn = await swarmNode(['--json', 'register', AGENT], { env: fresh.env });
    expect(notSignedIn.exitCode).toBe(4);
    expect(notSignedIn.json.error.code).toBe('not_signed_in');

    const node = await signedInNode(service.baseUrl, { label: 'register-bad' });
    const unknown = await swarmNode(['--json', 'register', 'agent_nope_001'], { env: node.env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.json.error.code).toBe('agent_not_found');
    expect(unknown.json.error.remedy).toContain('agent_ops_monitor_004');
    for (const every of ['0s', '8d', '604801s', '5x', '1.5m', '', '-5m', 'm']) {
      const result = await swarmNode(['register', AGENT, '--every', every], { env: node.env });
      expect(result.exitCode, `--every ${every}: ${result.stderr}`).toBe(2);
    }
    // Out of range, said once: the range is in the sentence, not repeated after it.
    expect((await swarmNode(['register', AGENT, '--every', '0s'], { env: node.env })).stderr).toContain(
      "error: option '--every <duration>' argument '0s' is invalid. the interval 0s is outside 1s..7d (e.g. 30s, 5m, 1h, or none)\n",
    );
    expect((await swarmNode(['register', AGENT, '--every', '5x'], { env: node.env })).stderr).toContain(
      '"5x" is not a duration: write 30s, 5m, 1h or 1d (1s..7d), or none',
    );
    for (const cap of ['-1', '1.234', 'abc', '1e3', '$']) {
      const result = await swarmNode(['register', AGENT, '--daily-cap', cap], { env: node.env });
      expect(result.exitCode, `--daily-cap ${cap}: ${result.stderr}`).toBe(2);
    }
    // A schedule whose cap lets no run through (below one run's $0.04) would only ever show "paused: daily_cap".
    for (const args of [
      ['--every', '5m', '--daily-cap', '0'],
      ['--every', '5m', '--daily-cap', '0.03'],
    ]) {
      const result = await swarmNode(['--json', 'register', AGENT, ...args], { env: node.env });
      expect(result.exitCode, `${args.join(' ')}: ${result.stdout}`).toBe(2);
      expect(result.json.error.message).toMatch(
        /^a daily cap of \$0\.0[03] lets no run of agent_ops_monitor_004 through \(\$0\.04 a run\): its schedule would never run$/,
      );
    }
    expect((await swarmNode(['--json', 'list'], { env: node.env })).json.registrations).toEqual([]);
    // Without a schedule a cap holds nothing back: manual runs are not held to it (docs/api.md "run").
    expect((await swarmNode(['register', AGENT, '--daily-cap', '0'], { env: node.env })).exitCode).toBe(0);
    const later = await swarmNode(['--json', 'register', AGENT, '--every', '1h'], { env: node.env });
    expect([later.exitCode, later.json.error?.code]).toEqual([2, 'usage']);
    expect((await swarmNode(['unregister', AGENT], { env: node.env })).exitCode).toBe(0);

    // A stored token the service no longer accepts: 4, even though it has not expired locally.
    const file = join(node.home, 'etc', 'credentials.json');
    const credentials = readCredentials(file);
    writeCredentials(file, { ...credentials, jwt: { ...credentials.jwt!, token: `${credentials.jwt!.token.slice(0, -4)}AAAA` } });
    const forged = await swarmNode(['--json', 'register', AGENT], { env: node.env });
    expect(forged.exitCode, forged.stdout).toBe(4);
    expect(forged.json.error.code).toBe('unauthorized');
    expect((await swarmNode(['--json', 'list'], { env: node.env })).json.registrations).toEqual([]);
  });
});

describe('swarm-node run and runs', () => {
  it('runs an agent: result, charge in dollars, new balance; journals it; runs shows history with totals; list shows spend today', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'run' });
    const json = await swarmNode(['--json', 'run', AGENT], { env: node.env });
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.json).toMatchObject({
      agent_id: AGENT,
      status: 'succeeded',
      charged_cents: PRICE,
      balance_cents: 100 - PRICE,
      run_id: expect.any(String),
    });
    expect(json.json.output).toBeDefined();
    const human = await swarmNode(['run', AGENT], { env: node.env });
    expect(human.exitCode, human.stderr).toBe(0);
    // Ran here, on this node, by the real agent: the head line says where, then the agent's own summary.
    const [head, summary] = human.stdout.split('\n');
    expect(head).toBe(
      `✓ agent_ops_monitor_004 ran on node ${nodeIdOf(node)} (run ${head!.match(/\(run (\S+)\)/)?.[1]}): charged $0.04, balance $0.92`,
    );
    expect(summary).toMatch(/^(ok|warning|critical): \d+ (of \d+ )?checks/);
    expect(json.json.node_id).toBe(nodeIdOf(node));
    expect(json.json.output).toMatchObject({ host: { hostname: hostname() }, findings: expect.any(Array) });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - 2 * PRICE);
    expect(human.stdout + human.stderr).not.toContain(node.token);
    // An agent that needs input: without it the service refuses the run against the built-in agent's input_schema,
    // before any charge (exit 2, the failing field named); with it, it answers.
    const noInput = await swarmNode(['--json', 'run', 'agent_svc_skills_005'], { env: node.env });
    expect(noInput.exitCode).toBe(2);
    expect(noInput.json.error).toMatchObject({
      code: 'input_invalid',
      agent_id: 'agent_svc_skills_005',
      digest: null,
      errors: [{ path: '/input', message: 'must have at least 1 properties' }],
    });
    const badQuiz = await swarmNode(['--json', 'run', 'agent_svc_skills_005', '--input', 'quiz=11'], { env: node.env });
    expect(badQuiz.exitCode).toBe(2);
    expect(badQuiz.json.error.errors).toEqual([{ path: '/input/quiz', message: 'must be at most 10, or must be true' }]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - 2 * PRICE);
    const skills = await swarmNode(['--json', 'run', 'agent_svc_skills_005', '--input', `question=${QUESTION}`], { env: node.env });
    expect(skills.exitCode, skills.stderr).toBe(0);
    expect(skills.json.output.summary).toEqual(expect.any(String));

    const runs = await swarmNode(['--json', 'runs', '--local'], { env: node.env });
    expect(runs.exitCode, runs.stderr).toBe(0);
    // The two refusals are journaled too, as failed runs that cost nothing.
    expect(runs.json.runs).toHaveLength(5);
    expect(runs.json.runs[0]).toMatchObject({
      agent_id: 'agent_svc_skills_005',
      status: 'succeeded',
      charged_cents: 5,
      run_id: expect.any(String),
      started_at: expect.any(String),
    });
    for (const refused of runs.json.runs.slice(1, 3))
      expect(refused).toMatchObject({ agent_id: 'agent_svc_skills_005', status: 'failed', charged_cents: 0, run_id: null });
    expect(runs.json.runs[4].run_id).toBe(json.json.run_id);
    expect(runs.json.totals).toEqual({
      runs: 5,
      charged_cents: 13,
      by_status: { succeeded: 3, failed: 2, insufficient_balance: 0, pending: 0 },
    });
    const filtered = await swarmNode(['--json', 'runs', '--local', '--agent', AGENT, '--limit', '1'], { env: node.env });
    expect(filtered.json.runs).toHaveLength(1);
    expect(filtered.json.totals).toMatchObject({ runs: 2, charged_cents: 8 });
    const table = await swarmNode(['runs', '--local'], { env: node.env });
    expect(table.stdout).toMatch(/^STARTED\s+AGENT\s+STATUS\s+CHARGED\s+RUN ID$/m);
    expect(table.stdout).toContain('5 of 5 run(s) started here shown; in total $0.13 charged (3 succeeded, 2 failed).');
    for (const limit of ['0', '-1', 'x', '10001'])
      expect((await swarmNode(['runs', '--local', '--limit', limit], { env: node.env })).exitCode).toBe(2);

    expect((await swarmNode(['register', AGENT, '--daily-cap', '1'], { env: node.env })).exitCode).toBe(0);
    const list = await swarmNode(['--json', 'list'], { env: node.env });
    expect(list.json.registrations[0]).toMatchObject({
      agent_id: AGENT,
      spent_today_cents: 8,
      spent_today_from: 'node',
      last_run_status: 'succeeded',
    });
  });

  it("--input is typed by the agent's schema: quiz=2 is the number a quiz takes, quiz=true the boolean; a text field keeps its text", async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'typed-input' });
    for (const quiz of ['2', 'true']) {
      const run = await swarmNode(['--json', 'run', 'agent_svc_skills_005', '--input', `quiz=${quiz}`], { env: node.env });
      expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    }
    // The same parser stores a registration's input: the number, not its text.
    const registered = await swarmNode(['--json', 'register', 'agent_svc_skills_005', '--input', 'quiz=2'], { env: node.env });
    expect(registered.exitCode, registered.stderr).toBe(0);
    expect(registered.json.default_input).toEqual({ quiz: 2 });
    // A field that takes text keeps "007" as it is; one whose schema is not a number stays text for the check to name.
    const text = await swarmNode(['--json', 'register', 'agent_research_rag_015', '--input', 'question=007'], { env: node.env });
    expect(text.json.default_input).toEqual({ question: '007' });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - 2 * 5);
  });

  it('run --fail-on exits 10 after printing the answer when its status is at or above the one named, and 0 below it', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'fail-on' });
    const critical = JSON.stringify({ thresholds: { disk_warning_percent: 0, disk_critical_percent: 0 } });
    const inputFile = join(tempDir('fail-on-'), 'critical.json');
    writeFileSync(inputFile, critical);
    const alert = await swarmNode(['run', AGENT, '--input-file', inputFile, '--fail-on', 'critical'], { env: node.env });
    expect(alert.exitCode, alert.stderr).toBe(10);
    expect(alert.stdout).toMatch(/^✓ agent_ops_monitor_004 ran on node .*charged \$0\.04/);
    expect(alert.stdout).toMatch(/\ncritical: /);
    expect(alert.stderr).toContain("the agent's status is critical, at or above --fail-on critical");
    const json = await swarmNode(['--json', 'run', AGENT, '--input-file', inputFile, '--fail-on', 'warning'], { env: node.env });
    // --json: the run is the one document on stdout, the exit code the alert.
    expect(json.exitCode).toBe(10);
    expect(json.json).toMatchObject({ status: 'succeeded', output: { status: 'critical' } });
    expect(json.stderr).toContain("the agent's status is critical, at or above --fail-on warning");
    // A status below the one named: an ordinary run.
    const lenient = join(tempDir('fail-on-'), 'lenient.json');
    writeFileSync(
      lenient,
      JSON.stringify({
        thresholds: {
          load_warning_per_cpu: 1000,
          load_critical_per_cpu: 1000,
          memory_warning_percent: 100,
          memory_critical_percent: 100,
          swap_warning_percent: 100,
          swap_critical_percent: 100,
          disk_warning_percent: 100,
          disk_critical_percent: 100,
        },
      }),
    );
    const calm = await swarmNode(['--json', 'run', AGENT, '--input-file', lenient, '--fail-on', 'critical'], { env: node.env });
    expect(calm.exitCode, calm.stderr).toBe(0);
    expect(calm.json.output.status).not.toBe('critical');
    expect((await swarmNode(['run', AGENT, '--fail-on', 'bad'], { env: node.env })).exitCode).toBe(2);
  });

  it('exits 3 on insufficient balance with wallet_login_url and the remedy, and journals it as insufficient_balance', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 3, label: 'poor' });
    const json = await swarmNode(['--json', 'run', AGENT], { env: node.env });
    expect(json.exitCode).toBe(3);
    expect(json.json.error).toMatchObject({
      code: 'insufficient_balance',
      wallet_login_url: `${service.walletUrl}/login`,
      balance_cents: 3,
      price_cents: PRICE,
    });
    expect(json.json.error.message).toBe('insufficient balance: the wallet holds $0.03, one run costs $0.04');
    expect(json.json.error.remedy).toContain(`Fund the wallet at ${service.walletUrl}/login`);
    const human = await swarmNode(['run', AGENT], { env: node.env });
    expect(human.exitCode).toBe(3);
    expect(human.stderr).toContain(`${service.walletUrl}/login`);
    expect(human.stdout).toBe('');
    const runs = await swarmNode(['--json', 'runs', '--local'], { env: node.env });
    expect(runs.json.runs.map((r: { status: string }) => r.status)).toEqual(['insufficient_balance', 'insufficient_balance']);
    expect(runs.json.totals.charged_cents).toBe(0);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(3);
  });

  it('exits 5 for an unknown agent and 4 when not signed in, journaling nothing', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'run-bad' });
    const unknown = await swarmNode(['--json', 'run', 'agent_nope_001'], { env: node.env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.json.error.code).toBe('agent_not_found');
    expect((await swarmNode(['--json', 'runs', '--local'], { env: node.env })).json.totals.runs).toBe(0);
    const fresh = nodeEnv(service.baseUrl);
    expect((await swarmNode(['run', AGENT], { env: fresh.env })).exitCode).toBe(4);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100);
  });

  it('runs --agent: an id not in the catalog is exit 5 listing the ids; a catalog agent without runs says so by name', async () => {
    const fresh = nodeEnv(service.baseUrl);
    const { env, home } = fresh;
    const unknown = await swarmNode(['--json', 'runs', '--local', '--agent', 'nope'], { env });
    expect(unknown.exitCode).toBe(5);
    expect(unknown.json.error).toMatchObject({ code: 'agent_not_found', message: 'there is no agent "nope"' });
    expect(unknown.json.error.remedy).toMatch(/agent_dev_review_012, .*agent_ops_monitor_004/);
    const human = await swarmNode(['runs', '--local', '--agent', 'nope'], { env });
    expect(human.exitCode).toBe(5);
    expect(human.stderr).not.toContain('No runs');

    const none = await swarmNode(['runs', '--local', '--agent', AGENT], { env });
    expect(none.exitCode, none.stderr).toBe(0);
    expect(none.stderr.trim()).toBe(`No runs of ${AGENT} started here yet. Run it: ${asPrinted(fresh, `swarm-node run ${AGENT}`)}.`);

    // An agent gone from the catalog keeps the history the journal holds for it.
    const db = nodeDb(home);
    journalRunStarted(db, { idempotency_key: randomUUID(), agent_id: 'agent_retired_001', source: 'cli', price_cents: 3 }, Date.now());
    db.close();
    const retired = await swarmNode(['--json', 'runs', '--local', '--agent', 'agent_retired_001'], { env });
    expect(retired.exitCode, retired.stdout).toBe(0);
    expect(retired.json.runs).toMatchObject([{ agent_id: 'agent_retired_001', status: 'pending' }]);
  });

  it('a run whose answer was lost is settled by asking the service for its key, never by running it again; one that never arrived is settled as never run', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'lost' });
    // The first attempt reached the service, which charged the run and leased it; it ran and was reported (here by the
    // test, as the node), but the answer to this process was lost.
    const key = randomUUID();
    // Another never reached the service (the process died before sending it).
    const neverSent = randomUUID();
    const db = nodeDb(node.home);
    journalRunStarted(
      db,
      { idempotency_key: key, agent_id: AGENT, source: 'cli', price_cents: PRICE, user_id: node.email, owner_pid: await deadPid() },
      Date.now() - 60_000,
    );
    // A row of a process that still waits for its answer (this test process) is not touched.
    const inFlight = randomUUID();
    journalRunStarted(
      db,
      { idempotency_key: inFlight, agent_id: AGENT, source: 'daemon', price_cents: PRICE, user_id: node.email, owner_pid: process.pid },
      Date.now(),
    );
    // Older than the service keeps keys: replaying could charge twice, so it is closed as outcome_unknown.
    const ancient = randomUUID();
    journalRunStarted(
      db,
      {
        idempotency_key: ancient,
        agent_id: AGENT,
        source: 'cli',
        price_cents: PRICE,
        user_id: node.email,
        owner_pid: null as unknown as undefined,
      },
      Date.now() - 25 * 3600_000,
    );
    journalRunStarted(
      db,
      { idempotency_key: neverSent, agent_id: AGENT, source: 'cli', price_cents: PRICE, user_id: node.email, owner_pid: await deadPid() },
      Date.now() - 30_000,
    );
    db.close();
    const credential = readCredentials(join(node.home, 'etc', 'credentials.json')).node!.credential!;
    const api = apiClient(service.baseUrl);
    const lost = await api.post(
      '/v1/swarm/execute',
      { user_id: node.email, agent_id: AGENT },
      { token: credential, headers: { 'idempotency-key': key } },
    );
    expect(lost.status, lost.text).toBe(202);
    expect(lost.body).toMatchObject({
      status: 'running',
      node_id: nodeIdOf(node),
      charged_cents: PRICE,
      lease: { lease_id: expect.any(String) },
    });
    const reported = await api.post(
      `/v1/swarm/runs/${lost.body.run_id}/result`,
      { lease_id: lost.body.lease.lease_id, status: 'succeeded', output: { reported: 'once' } },
      { token: credential },
    );
    expect(reported.status, reported.text).toBe(200);

    const next = await swarmNode(['--json', 'run', AGENT], { env: node.env });
    expect(next.exitCode, next.stderr).toBe(0);
    expect(next.stderr).toContain('Settled 2 earlier run(s)');
    expect(next.json.balance_cents).toBe(100 - 2 * PRICE);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - 2 * PRICE);

    const check = nodeDb(node.home);
    const rows = check.prepare('SELECT idempotency_key, status, run_id, charged_cents, error_code FROM runs').all() as {
      idempotency_key: string;
      status: string;
      run_id: string | null;
      charged_cents: number;
      error_code: string | null;
    }[];
    check.close();
    const byKey = new Map(rows.map((row) => [row.idempotency_key, row]));
    expect(byKey.get(key)).toMatchObject({ status: 'succeeded', run_id: lost.body.run_id, charged_cents: PRICE });
    // Settled by asking: the run is as it ended, with the result it had; the agent did not run again.
    const settled = await api.get(`/v1/swarm/runs/${lost.body.run_id}`, node.token);
    expect(settled.body).toMatchObject({ status: 'succeeded', charged_cents: PRICE, output: { reported: 'once' } });
    expect(byKey.get(neverSent)).toMatchObject({ status: 'failed', error_code: 'never_ran', charged_cents: 0 });
    // Settled as never run: the request, were it still on its way, runs nothing when it arrives.
    const arriving = await api.post(
      '/v1/swarm/execute',
      { user_id: node.email, agent_id: AGENT },
      { token: credential, headers: { 'idempotency-key': neverSent } },
    );
    expect(arriving.status).toBe(409);
    expect(arriving.body.code).toBe('idempotency_key_void');
    expect(byKey.get(inFlight)).toMatchObject({ status: 'pending', run_id: null });
    expect(byKey.get(ancient)).toMatchObject({ status: 'failed', error_code: 'outcome_unknown', charged_cents: 0 });
  });

  it('when the service cannot be reached (connection refused) the run was not sent: exit 6, journaled not_sent, never run later', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'offline' });
    const started = Date.now();
    const offline = await swarmNode(['--json', '--base-url', CLOSED_PORT_URL, 'run', AGENT], { env: node.env });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(offline.exitCode).toBe(6);
    expect(offline.json.error).toMatchObject({ code: 'service_unreachable', run_status: 'not_sent', idempotency_key: expect.any(String) });
    expect(offline.json.error.message).toContain('the run was not sent, and will not run');
    expect(offline.json.error.remedy).toContain('swarm-node status');
    expect(offline.stdout).not.toContain(node.token);
    const local = await swarmNode(['--json', 'runs', '--local'], { env: node.env });
    expect(local.json.runs[0]).toMatchObject({
      status: 'failed',
      error_code: 'not_sent',
      idempotency_key: offline.json.error.idempotency_key,
    });

    // Back online: the next run is the only one that runs; nothing is settled, nothing charged for the first.
    const online = await swarmNode(['--json', 'run', AGENT], { env: node.env });
    expect(online.exitCode, online.stderr).toBe(0);
    expect(online.stderr).not.toContain('Settled');
    const runs = await swarmNode(['--json', 'runs', '--local'], { env: node.env });
    expect(runs.json.totals).toMatchObject({ runs: 2, charged_cents: PRICE, by_status: { succeeded: 1, failed: 1, pending: 0 } });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - PRICE);
  });
});

describe('swarm-node wallet, docs, status', () => {
  it('wallet shows the balance in dollars (cents in JSON); wallet login prints the sign-in URL with a secret warning', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 1234, label: 'wallet' });
    const json = await swarmNode(['--json', 'wallet'], { env: node.env });
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.json).toEqual({ user_id: node.email, balance_cents: 1234, balance: '$12.34', currency: 'USD', chain_id: 1202 });
    const human = await swarmNode(['wallet'], { env: node.env });
    expect(human.stdout).toMatch(/^balance\s+\$12\.34 USD$/m);

    const login = await swarmNode(['--json', 'wallet', 'login'], { env: { ...node.env, DISPLAY: '', WAYLAND_DISPLAY: '' } });
    expect(login.exitCode, login.stderr).toBe(0);
    const url = new URL(login.json.wallet_login_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${service.walletUrl}/login`);
    expect(url.searchParams.get('token')).toBe(node.token);
    expect(url.searchParams.get('intent')).toBe('swarm_private_access');
    expect(login.json.warning).toMatch(/secret/);
    expect(login.stderr).toMatch(/warning: this URL holds your access token, a secret/);
    const page = await fetch(login.json.wallet_login_url, { redirect: 'manual' });
    expect(page.status).toBeLessThan(400);

    const noDisplay = await swarmNode(['wallet', 'login', '--open'], { env: { ...node.env, DISPLAY: '', WAYLAND_DISPLAY: '' } });
    expect(noDisplay.exitCode).toBe(0);
    expect(noDisplay.stderr).toContain('cannot open a browser here (no display)');

    // With a display, the opener gets one argument: the path of a page only this user can read, which forwards
    // to the URL. The token itself never reaches a command line (argv is visible to every user in `ps`).
    const bin = tempDir('opener-');
    const record = join(bin, 'args');
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$#" "$1" > '${record}'\n`);
    chmodSync(join(bin, 'xdg-open'), 0o755);
    const opened = await swarmNode(['--json', 'wallet', 'login', '--open'], {
      env: { ...node.env, DISPLAY: ':99', PATH: `${bin}:${process.env.PATH}` },
    });
    expect(opened.exitCode, opened.stderr).toBe(0);
    expect(opened.json.opened).toBe(true);
    const [count, pagePath] = readFileSync(record, 'utf8').trimEnd().split('\n');
    expect(count).toBe('1');
    expect(pagePath).not.toContain(node.token);
    expect(statSync(pagePath!).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(pagePath!)).mode & 0o777).toBe(0o700);
    expect(readFileSync(pagePath!, 'utf8')).toContain(login.json.wallet_login_url.replaceAll('&', '&amp;'));

    const fresh = nodeEnv(service.baseUrl);
    expect((await swarmNode(['wallet'], { env: fresh.env })).exitCode).toBe(4);
    expect((await swarmNode(['wallet', 'login'], { env: fresh.env })).exitCode).toBe(4);
  });

  it('docs lists the unlocked sections, prints one, refuses a locked one (1) and an unknown one (5)', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'docs' });
    const list = await swarmNode(['--json', 'docs'], { env: node.env });
    expect(list.exitCode, list.stderr).toBe(0);
    expect(list.json).toEqual({ tier: 'svc_starter_agents', docs_sections: ['starter-agents', 'node-install', 'agent-upload'] });
    const human = await swarmNode(['docs'], { env: node.env });
    expect(human.stdout).toBe('starter-agents\nnode-install\nagent-upload');
    const locked = await swarmNode(['--json', 'docs', 'dev-portal'], { env: node.env });
    expect(locked.exitCode).toBe(1);
    expect(locked.json.error.code).toBe('forbidden');
    const unknown = await swarmNode(['docs', 'secrets'], { env: node.env });
    expect(unknown.exitCode).toBe(5);
    expect((await swarmNode(['docs'], { env: nodeEnv(service.baseUrl).env })).exitCode).toBe(4);

    const section = await swarmNode(['--json', 'docs', 'node-install'], { env: node.env });
    expect(section.exitCode, section.stdout + section.stderr).toBe(0);
    expect(section.json).toMatchObject({ section: 'node-install', content_type: 'text/markdown', body: expect.any(String) });
    const text = await swarmNode(['docs', 'node-install'], { env: node.env });
    expect(text.stdout).toBe(section.json.body.trimEnd());
  });

  it('status shows config with sources, reachability and latency, token validity, registrations, database and daemon', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'status' });
    expect((await swarmNode(['register', AGENT, '--every', '1m'], { env: node.env })).exitCode).toBe(0);
    const status = await swarmNode(['--json', 'status'], { env: node.env });
    expect(status.exitCode, status.stderr).toBe(0);
    expect(status.json).toMatchObject({
      config: { values: { base_url: service.baseUrl, timeout_seconds: 15 }, sources: { base_url: 'env', merchant_id: 'default' } },
      service: { reachable: true, latency_ms: expect.any(Number), error: null },
      token: { stored: true, sub: node.email, tier: 'svc_starter_agents', valid: true, days_left: 30, expiring_soon: false },
      registrations: { count: 1, agents: [{ agent_id: AGENT, every: '1m', daily_cap_cents: null }] },
      node: {
        enrolled: true,
        node_id: nodeIdOf(node),
        user_id: node.email,
        tier_id: 'svc_starter_agents',
        isolation: 'none',
        isolation_error: null,
        // What runs here are not held to, as the daemon logs it once and doctor says it.
        isolation_summary: expect.stringMatching(/^none: runs as the node's own user, unsandboxed/),
        isolation_cannot: expect.arrayContaining([expect.stringMatching(/credential and database/)]),
      },
      database: { path: join(node.home, 'var', 'swarm-node.db'), exists: true, error: null },
      daemon: { running: false, pid: null },
      problems: [],
    });
    expect(JSON.stringify(status.json)).not.toContain(node.token);

    const db = nodeDb(node.home);
    const tick = new Date().toISOString();
    db.prepare('INSERT INTO daemon_state (key, value, updated_at) VALUES (?, ?, ?), (?, ?, ?)').run(
      'pid',
      String(process.pid),
      Date.now(),
      'last_tick_at',
      tick,
      Date.now(),
    );
    db.close();
    const file = join(node.home, 'etc', 'credentials.json');
    const credentials = readCredentials(file);
    writeCredentials(file, { ...credentials, jwt: { ...credentials.jwt!, exp: Math.floor(Date.now() / 1000) + 3 * 86_400 } });
    const human = await swarmNode(['status'], { env: node.env });
    expect(human.exitCode).toBe(0);
    expect(human.stdout).toMatch(/^daemon\s+running pid \d+, last tick /m);
    expect(human.stdout).toMatch(new RegExp(`^node\\s+${nodeIdOf(node)} of ${node.email} \\(svc_starter_agents\\)$`, 'm'));
    expect(human.stdout).toMatch(/^service\s+reachable http:\/\/127\.0\.0\.1:\d+ \(\d+ ms\)$/m);
    expect(human.stdout).toMatch(/^ {2}base_url\s+http:\/\/127\.0\.0\.1:\d+ {2}\(env\)$/m);
    expect(human.stdout).toContain('! the stored token expires in 3 day(s)');

    // The report, whole, as the one JSON document; then exit 6, which a script checks without reading it.
    const offline = await swarmNode(['--json', '--base-url', CLOSED_PORT_URL, 'status'], { env: node.env });
    expect(offline.exitCode).toBe(6);
    expect(offline.stderr).toContain(`the service at ${CLOSED_PORT_URL} cannot be reached`);
    const offlineHuman = await swarmNode(['--base-url', CLOSED_PORT_URL, 'status'], { env: node.env });
    expect(offlineHuman.exitCode).toBe(6);
    expect(offlineHuman.stdout).toMatch(/^service\s+unreachable /m);
    expect(offlineHuman.stderr).toMatch(/^error: the service at .* cannot be reached/m);
    expect(offline.json.service).toMatchObject({ reachable: false, latency_ms: null, error: expect.stringContaining('cannot reach') });
    expect(offline.json.token.valid).toBeNull();
    expect(offline.json.problems).toContain(`the service at ${CLOSED_PORT_URL} is not reachable`);

    const fresh = await swarmNode(['--json', 'status'], { env: nodeEnv(service.baseUrl).env });
    expect(fresh.exitCode).toBe(0);
    expect(fresh.json).toMatchObject({
      token: { stored: false },
      node: { enrolled: false, node_id: null },
      database: { exists: false },
      daemon: { running: false },
      problems: [
        'this host is not an enrolled node: agents cannot run here (swarm-node install, or swarm-node enroll)',
        'not signed in (swarm-node login)',
      ],
    });
    const freshHuman = await swarmNode(['status'], { env: nodeEnv(service.baseUrl).env });
    expect(freshHuman.stdout).toMatch(/^node\s+not enrolled$/m);
  });
});
