// An agent on the kit, run on a node (docs/api.md "The kit's channel", "Run events"): the built binary scaffolds it,
// uploads it and runs it against the real svc-api. Its events reach the service beside its log and `logs --events`
// shows them; the file it writes is the run's artifact; a partial result is charged as a result and marked partial; a failure of its own is refunded, both
// checked in the wallet; a secret it puts in an event, its log, a refused call and its failure is in nothing the
// service keeps.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { swarmNode } from '../helpers/cli.js';
import { apiClient } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { testEngine } from '../helpers/test-engine.js';
import { tempDir } from '../helpers/temp.js';
import { signedInNode, walletBalance } from './fixtures.js';

const OWN_PRICE = 3;
const SECRET = 'kitleak_Zq81_value';

const AGENT = `import * as kit from './swarm_kit/kit.mjs';
await kit.runAgent(async (input) => {
  const token = process.env.KIT_TOKEN;
  kit.log('the token is ' + token);
  await kit.progress(1, 2, 'half');
  await kit.event('custom', { token }, 'leak.try');
  let refusal = 'accepted';
  try { await kit.event(token, {}); } catch (error) { refusal = error.message; }
  if (input.mode === 'fail') throw new Error('gave up holding ' + token);
  kit.artifact('report.md', '# Half done\\n');
  let badName = 'accepted';
  try { kit.artifact('../escape.md', 'x'); } catch (error) { badName = error.message; }
  await kit.partial({ summary: 'half done', refusal, badName });
});
`;

describe('an agent on the kit, on a node', () => {
  let dataDir = '';
  const service = useSvcApi(() => ({ ownAgentPriceCents: OWN_PRICE, dataDir: (dataDir = tempDir('kit-runs-svc-')) }));

  it('streams its events beside its log; a partial result is charged, its own failure refunded; its secret stays on the node', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'kit-runs' });
    const dir = join(tempDir('kit-runs-'), 'kit-agent');
    expect((await swarmNode(['agent', 'init', dir, '--id', 'kit_agent'], { env: node.env })).exitCode).toBe(0);
    writeFileSync(join(dir, 'main.mjs'), AGENT);
    const manifest = JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8'));
    writeFileSync(
      join(dir, 'agent.json'),
      JSON.stringify({ ...manifest, secrets: ['KIT_TOKEN'], input_schema: { type: 'object', properties: { mode: { type: 'string' } } } }),
    );
    expect((await swarmNode(['secret', 'set', 'KIT_TOKEN'], { env: node.env, input: `${SECRET}\n` })).exitCode).toBe(0);
    const upload = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    expect(upload.exitCode, upload.stderr).toBe(0);
    expect((await swarmNode(['register', 'kit_agent'], { env: node.env })).exitCode).toBe(0);

    const partial = await swarmNode(['--json', 'run', 'kit_agent'], { env: node.env });
    expect(partial.exitCode, partial.stdout).toBe(0);
    expect(partial.json).toMatchObject({ status: 'succeeded', charged_cents: OWN_PRICE, output: { summary: 'half done', partial: true } });
    // The node's refusal of the call names the rule and quotes nothing of what was sent.
    expect(partial.json.output.refusal).toMatch(/^kit_call_invalid: an event's type is one of /);
    expect(partial.json.output.refusal).not.toContain('***');
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - OWN_PRICE);
    expect(partial.json.output.badName).toContain('is not an artifact name');
    const artifacts = await apiClient(service.baseUrl).get(`/v1/swarm/runs/${partial.json.run_id}/artifacts`, node.token);
    expect(artifacts.body.artifacts.map((artifact: { name: string; size_bytes: number }) => [artifact.name, artifact.size_bytes])).toEqual([
      ['report.md', 12],
    ]);

    const events = await swarmNode(['--json', 'logs', partial.json.run_id, '--events'], { env: node.env });
    expect(events.exitCode, events.stderr).toBe(0);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.slice(0, 2).map(({ seq, attempt, type, name, data }) => ({ seq, attempt, type, name, data }))).toEqual([
      { seq: 0, attempt: 1, type: 'progress', name: null, data: { done: 1, total: 2, message: 'half' } },
      { seq: 1, attempt: 1, type: 'custom', name: 'leak.try', data: { token: '***' } },
    ]);
    const human = await swarmNode(['logs', partial.json.run_id, '--events'], { env: node.env });
    expect(human.stdout.split('\n')[0]).toBe('[progress] {"done":1,"total":2,"message":"half"}');

    const failed = await swarmNode(['--json', 'run', 'kit_agent', '--input', 'mode=fail'], { env: node.env });
    expect(failed.exitCode).toBe(1);
    const failedRun = await apiClient(service.baseUrl).get(`/v1/swarm/runs/${failed.json.error.run_id ?? failed.json.run_id}`, node.token);
    expect(failedRun.body).toMatchObject({ status: 'failed', charged_cents: 0 });
    expect(failedRun.body.output).toEqual({ error: 'declared_failure', message: 'gave up holding ***' });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - OWN_PRICE);

    // Nothing the service keeps holds the value: not its runs, logs or events, as the API serves them or on its disk.
    const api = apiClient(service.baseUrl);
    for (const runId of [partial.json.run_id, failedRun.body.run_id]) {
      for (const path of ['', '/logs', '/events']) {
        const kept = await api.get(`/v1/swarm/runs/${runId}${path}`, node.token);
        expect(kept.text).not.toContain(SECRET);
      }
    }
    expect((await api.get(`/v1/swarm/runs/${partial.json.run_id}/logs`, node.token)).text).toContain('the token is ***');
    if (testEngine() === 'sqlite') {
      const files = readdirSync(dataDir).filter((name) => name.startsWith('svc-api.db'));
      expect(files).toContain('svc-api.db');
      for (const file of files) expect(readFileSync(join(dataDir, file)).includes(SECRET), file).toBe(false);
    }
  });
});
