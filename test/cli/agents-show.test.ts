// swarm-node agents show (docs/api.md "Agents"): one agent as the user's run would execute it, with each input its
// input_schema takes and a run to start from. The built binary against the real svc-api: the schema is the one the
// service checks a run's input against (the package's bundle, or the user's current upload), and the example the
// command prints passes that check and runs as printed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_IDS } from '../../src/contract/agents.js';
import { compileInputSchema } from '../../src/contract/input-schema.js';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { SWARM_NODE_BIN, useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { signedInNode, walletBalance } from './fixtures.js';
import { runAsPrinted } from './remedy-runner.js';

const service = useSvcApi();
const PACKAGE = join(SWARM_NODE_BIN, '..', '..');

function manifestOf(agentId: string): { version: string; input_schema: Record<string, unknown> } {
  return JSON.parse(readFileSync(join(PACKAGE, 'agents', agentId, 'agent.json'), 'utf8'));
}

describe('swarm-node agents show', () => {
  it('prints each input the schema takes, what it is, and a run to start from; --json has the whole schema', async () => {
    const node = nodeEnv(service.baseUrl);
    const shown = await swarmNode(['agents', 'show', 'agent_research_rag_015'], { env: node.env });
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('$0.15 a run · version 1.0.0 (the built-in agent)');
    expect(shown.stdout).toMatch(/^ {2}corpus +string, required +Absolute path of a folder of Markdown/m);
    expect(shown.stdout).toMatch(/^ {2}question +string, required +The question, in plain words/m);
    expect(shown.stdout).toContain(
      "run agent_research_rag_015 --input corpus=/srv/docs --input 'question=How do I rotate the deploy token?'",
    );
    const defaults = await swarmNode(['agents', 'show', 'agent_dev_review_012'], { env: node.env });
    expect(defaults.stdout).toMatch(/^ {2}rev +string, default "HEAD" +A commit/m);

    const json = await swarmNode(['--json', 'agents', 'show', 'agent_research_rag_015'], { env: node.env });
    expect(json.exitCode).toBe(0);
    expect(json.json).toMatchObject({
      agent_id: 'agent_research_rag_015',
      price_cents: 15,
      source: 'built_in',
      digest: null,
      version: manifestOf('agent_research_rag_015').version,
      input_schema: manifestOf('agent_research_rag_015').input_schema,
      example_input: { corpus: '/srv/docs', question: 'How do I rotate the deploy token?' },
    });
  });

  it("every built-in agent's example meets the schema the service checks its input against", async () => {
    const node = nodeEnv(service.baseUrl);
    for (const agentId of AGENT_IDS) {
      const shown = await swarmNode(['--json', 'agents', 'show', agentId], { env: node.env });
      expect(shown.exitCode, shown.stderr).toBe(0);
      expect(compileInputSchema(shown.json.input_schema).problems(shown.json.example_input), agentId).toEqual([]);
    }
  });

  it('the printed example runs as printed, billed at the price shown', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'agents-show' });
    const shown = await swarmNode(['agents', 'show', 'agent_svc_skills_005'], { env: node.env });
    expect(shown.stdout).toContain('It needs at least 1 of these.');
    const example = /^Example:\n {2}(.+)$/m.exec(shown.stdout)?.[1];
    expect(example).toContain("swarm-node run agent_svc_skills_005 --input 'question=How do I register an agent on my node?'");
    const ran = await runAsPrinted(`${example!} --json`);
    expect(ran.exitCode, ran.stderr).toBe(0);
    expect(ran.json).toMatchObject({ agent_id: 'agent_svc_skills_005', status: 'succeeded', charged_cents: 5 });
    expect(await walletBalance(service.baseUrl, node.token)).toBe(95);
  });

  it("an agent of one's own shows its current upload to its user, and to no one else; an unknown id is exit 5", async () => {
    const node = await signedInNode(service.baseUrl, { label: 'agents-show-own', enroll: false });
    const dir = join(tempDir('agents-show-'), 'mine');
    expect((await swarmNode(['agent', 'init', dir, '--id', 'shown_agent'], { env: node.env })).exitCode).toBe(0);
    const upload = await swarmNode(['--json', 'agent', 'upload', dir], { env: node.env });
    expect(upload.exitCode, upload.stderr).toBe(0);
    const mine = await swarmNode(['--json', 'agents', 'show', 'shown_agent'], { env: node.env });
    expect(mine.exitCode, mine.stderr).toBe(0);
    expect(mine.json).toMatchObject({
      agent_id: 'shown_agent',
      own: true,
      source: 'upload',
      digest: upload.json.digest,
      version: '0.1.0',
      input_schema: JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8')).input_schema,
    });
    const human = await swarmNode(['agents', 'show', 'shown_agent'], { env: node.env });
    expect(human.stdout).toContain(`(your upload, digest ${upload.json.digest.slice(0, 12)})`);

    const stranger = nodeEnv(service.baseUrl);
    const hidden = await swarmNode(['agents', 'show', 'shown_agent'], { env: stranger.env });
    expect(hidden.exitCode).toBe(5);
    expect(hidden.stderr).toContain('swarm-node agents');
    expect((await swarmNode(['agents', 'show', 'agent_nope'], { env: stranger.env })).exitCode).toBe(5);
  });

  it("offline, a catalog agent shows this node's own bundle of it, with a warning", async () => {
    const offline = nodeEnv('http://127.0.0.1:9');
    const shown = await swarmNode(['--json', 'agents', 'show', 'agent_dev_review_012'], { env: offline.env });
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stderr).toContain("showing this node's own bundle of agent_dev_review_012");
    expect(shown.json.input_schema).toEqual(manifestOf('agent_dev_review_012').input_schema);
  });
});
