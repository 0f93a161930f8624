// Agents of one's own (docs/api.md "Agents of one's own"): scaffolded with `agent init --id`, tried with
// `agent run-local`, uploaded, then in the catalog its user sees and run on their nodes at the operator's price; no
// one else can run it. The built binary against the real svc-api.
import { execa } from 'execa';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { swarmNode } from '../helpers/cli.js';
import { apiClient } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { signedInNode, walletBalance } from './fixtures.js';

/** The operator's price for agents of one's own in this service: not the default, so the test sees it is used. */
const OWN_PRICE = 3;
const service = useSvcApi({ ownAgentPriceCents: OWN_PRICE });

describe('agents of your own', () => {
  it('init --id scaffolds a JavaScript agent on the kit (no sed) that runs as it is, or a TypeScript or a Python one', async () => {
    const parent = tempDir('own-init-');
    const js = await swarmNode(['--json', 'agent', 'init', join(parent, 'greeter'), '--id', 'greeter'], { env: { HOME: parent } });
    expect(js.exitCode, js.stderr).toBe(0);
    expect(js.json).toMatchObject({
      agent_id: 'greeter',
      own: true,
      lang: 'js',
      files: ['README.md', 'agent.json', 'main.mjs', 'swarm_kit/'],
    });
    const dir = join(parent, 'greeter');
    expect(JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8'))).toMatchObject({
      agent_id: 'greeter',
      version: '0.1.0',
      entry: ['node', 'main.mjs'],
    });
    for (const file of ['main.mjs', 'swarm_kit/kit.mjs']) expect(readFileSync(join(dir, file), 'utf8')).not.toMatch(/\bsed\b/);
    // Without a node's channel (run by hand) the kit answers on stdout, as an agent without it does.
    const direct = await execa(process.execPath, [join(dir, 'main.mjs')], { input: '{"run_id": "r-1", "input": {"name": "Ada"}}' });
    expect(JSON.parse(direct.stdout)).toMatchObject({ summary: expect.stringMatching(/^Hello, Ada, from greeter on /), run_id: 'r-1' });

    const py = await swarmNode(['--json', 'agent', 'init', join(parent, 'snake'), '--id', 'snake', '--lang', 'py'], {
      env: { HOME: parent },
    });
    expect(py.exitCode, py.stderr).toBe(0);
    expect(py.json.files).toEqual(['README.md', 'agent.json', 'main.py', 'swarm_kit/']);
    expect(JSON.parse(readFileSync(join(parent, 'snake', 'agent.json'), 'utf8')).entry).toEqual(['python3', 'main.py']);
    const snake = await execa('python3', [join(parent, 'snake', 'main.py')], { input: '{"run_id": "r-2", "input": {"name": "Bo"}}' });
    expect(JSON.parse(snake.stdout)).toMatchObject({ summary: expect.stringMatching(/^Hello, Bo, from snake on /), run_id: 'r-2' });
    // As a node runs it: packed with the kit, its progress event on the channel.
    const local = await swarmNode(
      ['--json', 'agent', 'run-local', join(parent, 'snake'), '--input', 'name=Cy', '--home', join(parent, 'rl')],
      {
        env: { HOME: parent },
      },
    );
    expect(local.exitCode, local.stderr).toBe(0);
    expect(local.json.output.summary).toMatch(/^Hello, Cy, from snake on /);
    expect(local.json.events).toMatchObject([{ type: 'progress', data: { done: 1, total: 1, message: 'greeted' } }]);

    const ts = await swarmNode(['--json', 'agent', 'init', join(parent, 'typed'), '--id', 'typed_agent', '--lang', 'ts'], {
      env: { HOME: parent },
    });
    expect(ts.exitCode, ts.stderr).toBe(0);
    expect(ts.json.files).toEqual(['README.md', 'agent.json', 'main.ts', 'swarm_kit/']);
    expect(readFileSync(join(parent, 'typed', 'main.ts'), 'utf8')).toMatch(/interface Input \{/);

    for (const [id, message] of [
      ['Bad-Name', 'is neither a catalog agent nor an id for an agent of your own'],
      ['agent_mine', 'is neither a catalog agent nor an id for an agent of your own'],
    ] as const) {
      const bad = await swarmNode(['agent', 'init', join(parent, id), '--id', id], { env: { HOME: parent } });
      expect(bad.exitCode).toBe(2);
      expect(bad.stderr).toContain(message);
    }
    expect((await swarmNode(['agent', 'init', join(parent, 'none')], { env: { HOME: parent } })).exitCode).toBe(2);
  });

  it('run-local runs a bundle here as a node would, unbilled: its input checked, its state kept, its failure shown', async () => {
    const parent = tempDir('own-local-');
    const dir = join(parent, 'counter');
    expect((await swarmNode(['agent', 'init', dir, '--id', 'counter'], { env: { HOME: parent } })).exitCode).toBe(0);
    // Counts its runs in its state directory, as an agent keeps state on a node.
    writeFileSync(
      join(dir, 'main.mjs'),
      [
        "import { readFileSync, writeFileSync } from 'node:fs';",
        "import { join } from 'node:path';",
        "import { runAgent } from './swarm_kit/kit.mjs';",
        'await runAgent(async (input) => {',
        "  if (input.name === 'fail') throw new Error('asked to fail');",
        "  const file = join(process.env.SWARM_STATE_DIR, 'count');",
        "  let count = 0; try { count = Number(readFileSync(file, 'utf8')); } catch {}",
        '  writeFileSync(file, String(count + 1));',
        '  return { summary: `run ${count + 1} for ${input.name}`, cwd: process.cwd(), home: process.env.HOME, agent_dir: process.env.SWARM_AGENT_DIR };',
        '});',
        '',
      ].join('\n'),
    );
    const home = join(parent, 'run-local-home');
    const first = await swarmNode(['--json', 'agent', 'run-local', dir, '--input', 'name=Ada', '--home', home], { env: { HOME: parent } });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.json).toMatchObject({
      agent_id: 'counter',
      version: '0.1.0',
      status: 'succeeded',
      output: { summary: 'run 1 for Ada' },
      state_dir: join(home, 'var', 'state', 'counter'),
    });
    // As on a node: a private run directory as its working directory and HOME, the bundle installed by digest.
    expect(first.json.output.cwd).toBe(first.json.output.home);
    expect(first.json.output.agent_dir).toBe(join(home, 'var', 'agents', 'counter', first.json.digest));
    const second = await swarmNode(['agent', 'run-local', dir, '--input', 'name=Bo', '--home', home], { env: { HOME: parent } });
    expect(second.exitCode, second.stderr).toBe(0);
    expect(second.stdout).toBe('Ran counter 0.1.0 here (not charged):\nrun 2 for Bo');

    const badInput = await swarmNode(['agent', 'run-local', dir, '--input', 'colour=red', '--home', home], { env: { HOME: parent } });
    expect(badInput.exitCode).toBe(2);
    expect(badInput.stderr).toContain("the input does not meet counter's input_schema: /input/colour is not a property of this input");
    const failing = await swarmNode(['agent', 'run-local', dir, '--input', 'name=fail', '--home', home], { env: { HOME: parent } });
    expect(failing.exitCode).toBe(1);
    expect(failing.stderr).toContain('counter 0.1.0 failed (declared_failure): asked to fail');
    writeFileSync(
      join(dir, 'agent.json'),
      JSON.stringify({
        agent_id: 'counter',
        version: '0.1.0',
        entry: ['node', 'main.mjs'],
        input_schema: { type: 'object' },
        colour: 'red',
      }),
    );
    const badBundle = await swarmNode(['agent', 'run-local', dir, '--home', home], { env: { HOME: parent } });
    expect(badBundle.exitCode).toBe(2);
    expect(badBundle.stderr).toContain('agent.json#/colour');
  });

  it("uploads under its own id, shows in its user's catalog at the operator's price, runs on their node, and no one else's", async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'own-agent' });
    const dir = join(tempDir('own-upload-'), 'my-agent');
    expect((await swarmNode(['agent', 'init', dir, '--id', 'my_agent'], { env: node.env })).exitCode).toBe(0);
    const api = apiClient(service.baseUrl);
    // Before any upload: nowhere in the catalog, and no run of it.
    expect((await api.get('/v1/swarm/agents', node.token)).body.map((agent: { agent_id: string }) => agent.agent_id)).not.toContain(
      'my_agent',
    );

    const upload = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    expect(upload.exitCode, upload.stderr).toBe(0);
    expect(upload.json).toMatchObject({ agent_id: 'my_agent', version: '0.1.0', created: true, current: true });

    const publicCatalog = await api.get('/v1/swarm/agents');
    expect(publicCatalog.body.map((agent: { agent_id: string }) => agent.agent_id)).not.toContain('my_agent');
    const mine = await api.get('/v1/swarm/agents', node.token);
    expect(mine.body.at(-1)).toEqual({ agent_id: 'my_agent', name: 'my_agent (your own agent)', price_cents: OWN_PRICE, own: true });
    expect(mine.body.find((agent: { agent_id: string }) => agent.agent_id === 'agent_ops_monitor_004')).toEqual({
      agent_id: 'agent_ops_monitor_004',
      name: 'Ops monitor agent',
      price_cents: 4,
    });
    const listed = await swarmNode(['agents'], { env: node.env });
    expect(listed.stdout).toMatch(/^my_agent\s+\$0\.03\s+my_agent \(your own agent\)$/m);

    const registered = await swarmNode(['register', 'my_agent'], { env: node.env });
    expect(registered.exitCode, registered.stderr).toBe(0);
    const ran = await swarmNode(['--json', 'run', 'my_agent', '--input', 'name=Ada'], { env: node.env });
    expect(ran.exitCode, ran.stderr).toBe(0);
    expect(ran.json).toMatchObject({
      agent_id: 'my_agent',
      status: 'succeeded',
      charged_cents: OWN_PRICE,
      bundle_digest: upload.json.digest,
    });
    expect(ran.json.output.summary).toMatch(/^Hello, Ada, from my_agent on /);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - OWN_PRICE);
    // Its runs in the service's history, by its own id: no "no agent" for the agent its owner just ran.
    const history = await swarmNode(['--json', 'runs', '--agent', 'my_agent'], { env: node.env });
    expect(history.exitCode, history.stderr).toBe(0);
    expect(history.json.runs).toMatchObject([{ agent_id: 'my_agent', run_id: ran.json.run_id }]);

    // Another user: the id means nothing to them (404, nothing charged), and their catalog does not show it.
    const other = await signedInNode(service.baseUrl, { fundCents: 100, label: 'own-agent-other', enroll: false });
    const refused = await api.post(
      '/v1/swarm/execute',
      { user_id: other.email, agent_id: 'my_agent' },
      { token: other.token, headers: { 'idempotency-key': 'k-own-1' } },
    );
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ code: 'agent_not_found' });
    expect(refused.body.detail).toContain('you have no current version of an agent of your own by that id');
    expect((await api.get('/v1/swarm/agents', other.token)).body.map((agent: { agent_id: string }) => agent.agent_id)).not.toContain(
      'my_agent',
    );
    expect(await walletBalance(service.baseUrl, other.token)).toBe(100);
    expect((await swarmNode(['--json', 'runs', '--agent', 'my_agent'], { env: other.env })).exitCode).toBe(5);

    // With no version current any more, the owner's runs of it are refused too, before any charge.
    expect((await swarmNode(['agent', 'rollback', 'my_agent', '--builtin'], { env: node.env })).exitCode).toBe(0);
    const gone = await swarmNode(['--json', 'run', 'my_agent'], { env: node.env });
    expect(gone.exitCode).toBe(5);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - OWN_PRICE);
  });
});
