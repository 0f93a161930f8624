// swarm-node secret, budget, usage and webhook (docs/api.md "Secrets", "Budgets", "Usage", "Webhooks"): the built
// binary against the real svc-api. A value goes in from stdin or a file and never comes out; what destroys needs a
// terminal's yes or --yes; usage prints a table (and a line of bars only on a terminal); a webhook's signing secret is
// shown once or written 0600; bad input is refused before anything is sent.
import { statSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asPrinted, swarmNode } from '../helpers/cli.js';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { renderUsage } from '../../src/cli/commands/usage.js';
import { sparkline } from '../../src/cli/sparkline.js';
import { signedInNode } from './fixtures.js';

const VALUE = 'sk_live_LEAKCHECK_42';
const OPS = 'agent_ops_monitor_004';

describe('swarm-node secret, budget, usage, webhook', () => {
  let receiver: HttpsReceiver;
  beforeAll(async () => {
    receiver = await startHttpsReceiver();
  });
  afterAll(async () => receiver.close());
  const service = useSvcApi(() => ({ webhookAllowPrivate: true, webhookCa: receiver.certPem }));

  it('secret set from stdin or a file, list shows names only, rm needs --yes off a terminal; bad names refused before any call', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'secret-cli', enroll: false });
    const set = await swarmNode(['secret', 'set', 'OPENAI_API_KEY'], { env: node.env, input: `${VALUE}\n` });
    expect(set.exitCode, set.stderr).toBe(0);
    expect(set.stdout).toBe('Set OPENAI_API_KEY: runs of agents that declare it get it from now on.');
    const file = join(tempDir('secret-file-'), 'smtp');
    writeFileSync(file, 'smtp-password-1\r\n', { mode: 0o600 });
    const fromFile = await swarmNode(['--json', 'secret', 'set', 'SMTP_PASSWORD', '--value-file', file], { env: node.env });
    expect(fromFile.json).toMatchObject({ name: 'SMTP_PASSWORD', created: true });
    const listed = await swarmNode(['secret', 'list'], { env: node.env });
    expect(listed.stdout).toMatch(/^NAME\s+CREATED\s+UPDATED\nOPENAI_API_KEY\s+\d{4}-\d\d-\d\d .*\nSMTP_PASSWORD\s+/);
    for (const output of [set, fromFile, listed]) expect(output.stdout + output.stderr).not.toMatch(/LEAKCHECK|smtp-password/);
    // The value was the line without its ending.
    expect(
      service.ctx.vault.open(
        service.db
          .prepare("SELECT key_id, nonce, ciphertext FROM user_secrets WHERE name = 'SMTP_PASSWORD' AND user_id = ?")
          .get(node.email) as never,
        `user-secret\u0000${node.email}\u0000SMTP_PASSWORD`,
      ),
    ).toBe('smtp-password-1');

    const unconfirmed = await swarmNode(['secret', 'rm', 'SMTP_PASSWORD'], { env: node.env });
    expect(unconfirmed.exitCode).toBe(2);
    expect(unconfirmed.stderr).toContain(`Add --yes: ${asPrinted(node, 'swarm-node secret rm SMTP_PASSWORD --yes')}`);
    expect((await swarmNode(['secret', 'rm', 'SMTP_PASSWORD', '--yes'], { env: node.env })).stdout).toBe('Removed SMTP_PASSWORD.');
    const missing = await swarmNode(['secret', 'rm', 'SMTP_PASSWORD', '--yes'], { env: node.env });
    expect(missing.exitCode).toBe(5);

    const badName = await swarmNode(['secret', 'set', 'lower-case'], {
      env: { ...node.env, SVC_BASE_URL: 'http://127.0.0.1:9' },
      input: VALUE,
    });
    expect(badName.exitCode).toBe(2);
    expect(badName.stderr).toContain('capital letters');
    const tooShort = await swarmNode(['--json', 'secret', 'set', 'SHORT'], { env: node.env, input: 'abc' });
    expect(tooShort.exitCode).toBe(2);
    expect(tooShort.json.error).toMatchObject({ code: 'invalid_request' });
  });

  it('budget set, list and rm; usage as a table and JSON equal to the runs charged; no bars off a terminal', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'usage-cli', fundCents: 100 });
    expect((await swarmNode(['register', OPS], { env: node.env })).exitCode).toBe(0);
    for (let i = 0; i < 3; i += 1) expect((await swarmNode(['run', OPS], { env: node.env })).exitCode).toBe(0);
    const set = await swarmNode(['budget', 'set', '--daily', '5', '--monthly', '50.25'], { env: node.env });
    expect(set.exitCode, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      /^Daily cap on all agents: \$5\.00 \(\$0\.12 spent; resets .*\)\.\nMonthly cap on all agents: \$50\.25 \(\$0\.12 spent; resets .*\)\.$/,
    );
    expect((await swarmNode(['budget', 'list'], { env: node.env })).stdout).toMatch(/all agents\s+day\s+\$5\.00\s+\$0\.12/);
    expect((await swarmNode(['budget', 'set', '--daily', 'lots'], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['budget', 'set'], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['budget', 'set', '--daily', '1', '--agent', 'agent_nope_001'], { env: node.env })).exitCode).toBe(5);
    expect((await swarmNode(['budget', 'rm', '--monthly'], { env: node.env })).stdout).toBe('Removed monthly cap on all agents.');

    const usage = await swarmNode(['usage'], { env: node.env });
    expect(usage.exitCode, usage.stderr).toBe(0);
    expect(usage.stdout).toMatch(
      /: 3 runs, \$0\.12 charged, \$0\.00 refunded, \$0\.12 paid\n\nAGENT\s+RUNS\s+CHARGED\s+REFUNDED\s+PAID\nagent_ops_monitor_004\s+3\s+\$0\.12\s+\$0\.00\s+\$0\.12$/,
    );
    expect(usage.stdout).not.toMatch(/[▁▂▃▄▅▆▇█]/);
    const json = await swarmNode(['--json', 'usage', '--days', '7', '--by', 'node'], { env: node.env });
    expect(json.json.totals).toEqual({ runs: 3, charged_cents: 12, refunded_cents: 0, net_cents: 12 });
    expect(json.json.days).toHaveLength(7);
    expect((await swarmNode(['usage', '--from', '2025-02-30'], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['usage', '--by', 'month'], { env: node.env })).exitCode).toBe(2);
  });

  it('draws a line of bars per day on a terminal, its height each day’s share of the most', () => {
    expect(sparkline([0, 1, 2, 4, 8, 0])).toBe('▁▂▃▅█▁');
    expect(sparkline([0, 0])).toBe('▁▁');
    const usage = {
      from: '2025-01-01',
      to: '2025-01-03',
      totals: { runs: 2, charged_cents: 8, refunded_cents: 0, net_cents: 8 },
      days: [0, 4, 4].map((net, i) => ({
        date: `2025-01-0${i + 1}`,
        runs: net === 0 ? 0 : 1,
        charged_cents: net,
        refunded_cents: 0,
        net_cents: net,
      })),
      by_agent: [],
      by_node: [],
      rows: [],
    };
    expect(renderUsage(usage, 'day', true).split('\n')[1]).toBe('▁██  per day');
    expect(renderUsage(usage, 'day', false)).not.toContain('per day');
  });

  it('webhook add shows the secret once or writes it 0600, list, deliveries, resend, rotate and rm', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'webhook-cli', fundCents: 100 });
    const added = await swarmNode(['webhook', 'add', `${receiver.url}/cli`, '--events', 'succeeded'], { env: node.env });
    expect(added.exitCode, added.stderr).toBe(0);
    const secret = /Signing secret \(shown once; verify Svc-Signature with it\): (whsec_\S+)/.exec(added.stdout)![1]!;
    const id = /^Added (\S+):/.exec(added.stdout)![1]!;
    const file = join(tempDir('whsec-'), 'whsec');
    const second = await swarmNode(['--json', 'webhook', 'add', `${receiver.url}/cli-2`, '--secret-file', file], { env: node.env });
    expect(second.json).toMatchObject({
      signing_secret_file: file,
      events: ['queued', 'started', 'succeeded', 'failed', 'cancelled', 'schedule.paused', 'schedule.resumed', 'schedule.skipping'],
    });
    expect(second.stdout).not.toContain('whsec_');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toMatch(/^whsec_\S+\n$/);
    expect((await swarmNode(['webhook', 'list'], { env: node.env })).stdout).toMatch(
      new RegExp(`${id}\\s+${receiver.url}/cli\\s+succeeded\\s`),
    );
    expect((await swarmNode(['webhook', 'add', 'http://example.com/x'], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['webhook', 'add', `${receiver.url}/x`, '--events', 'exploded'], { env: node.env })).exitCode).toBe(2);

    expect((await swarmNode(['register', OPS], { env: node.env })).exitCode).toBe(0);
    expect((await swarmNode(['run', OPS], { env: node.env })).exitCode).toBe(0);
    await waitFor(async () => (receiver.received.some((request) => request.path === '/cli') ? true : undefined), 'the delivery');
    const deliveries = await waitFor(async () => {
      const listed = await swarmNode(['--json', 'webhook', 'deliveries', id], { env: node.env });
      return listed.json.deliveries[0]?.status === 'delivered' ? listed.json.deliveries : undefined;
    }, 'the delivery recorded');
    const eventId = deliveries[0].event_id as string;
    const detail = await swarmNode(['webhook', 'deliveries', id, eventId], { env: node.env });
    expect(detail.stdout).toMatch(
      /^succeeded of run \S+: delivered after 1 attempt\n#\s+AT\s+STATUS\s+ERROR\s+MS\n1\s+\S+ \S+\s+200\s+\d+/,
    );
    const resent = await swarmNode(['webhook', 'resend', id, eventId], { env: node.env });
    expect(resent.stdout).toMatch(/^Sending succeeded of run \S+ to \S+ again\.$/);
    await waitFor(
      async () => (receiver.received.filter((request) => request.path === '/cli').length === 2 ? true : undefined),
      'the re-sent delivery',
    );

    const rotated = await swarmNode(['webhook', 'rotate', id, '--previous-for', '1h'], { env: node.env });
    expect(rotated.exitCode, rotated.stderr).toBe(0);
    expect(rotated.stdout).not.toContain(secret);
    expect(rotated.stdout).toMatch(/Signing secret \(shown once; verify Svc-Signature with it\): whsec_/);
    expect((await swarmNode(['webhook', 'rm', id], { env: node.env })).exitCode).toBe(2);
    expect((await swarmNode(['webhook', 'rm', id, '--yes'], { env: node.env })).stdout).toBe(`Removed ${id}.`);
    expect((await swarmNode(['webhook', 'rm', id, '--yes'], { env: node.env })).exitCode).toBe(5);
  });
});
