// An agent on the kit under a real daemon (docs/api.md "The kit's channel", "Run events"): the daemon takes the run
// from the service, the agent's events reach the service as it emits them, `swarm-node logs --events` follows them
// live and ends with the run, and a follower that comes back with Last-Event-ID gets the rest without a gap or a
// repeat. The agent holds its second event until the test has seen the first through the follow.
import { execa } from 'execa';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { installKitBundle } from '../helpers/bundles.js';
import { waitFor } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { Follow } from '../api/held-run.js';
import { agentsDir } from './agents.js';
import { DaemonProcess, executeOverHttp, register, signedInNode, swarmNodeBin, waitUntilServing } from './support.js';

const OPS = 'agent_ops_monitor_004';

const AGENT = `import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as kit from './swarm_kit/kit.mjs';
await kit.runAgent(async (input, run) => {
  await kit.progress(1, 2, 'first half');
  const go = join(process.env.SWARM_NODE_HOME, 'test-agents', 'go-' + run.run_id);
  while (!existsSync(go)) await new Promise((resolve) => setTimeout(resolve, 20));
  await kit.event('output', { rows: [1, 2, 3] });
  return { summary: 'both halves' };
});
`;

describe('events of a kit agent on a real daemon', () => {
  const service = useSvcApi();

  it('reach the service as the agent emits them, followed live by logs --events and resumed after the last one seen', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'kit-daemon' });
    installKitBundle(node.home, OPS, { 'main.mjs': AGENT });
    await register(node, OPS);
    const daemon = DaemonProcess.start(node);
    try {
      await waitUntilServing(service.baseUrl, node, OPS);
      const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
      expect(started.status, started.text).toBe(202);
      const runId = started.body.run_id as string;

      const following = execa('node', [swarmNodeBin(), 'logs', runId, '--events'], { env: node.env, reject: false, stdin: 'ignore' });
      let seen = '';
      following.stdout!.on('data', (chunk: Buffer) => (seen += chunk.toString()));
      await waitFor(async () => (seen.includes('[progress]') ? true : undefined), 'the first event through the follow', 30_000);
      // A second follower that has the first event already asks for what came after it.
      const resumed = await Follow.open(`${service.baseUrl}/v1/swarm/runs/${runId}/events`, node.token, { 'last-event-id': '0' });
      mkdirSync(agentsDir(node), { recursive: true });
      writeFileSync(join(agentsDir(node), `go-${runId}`), '');
      const done = await following;
      expect(done.exitCode, done.stderr).toBe(0);
      expect(String(done.stdout).split('\n')).toEqual([
        '[progress] {"done":1,"total":2,"message":"first half"}',
        '[output] {"rows":[1,2,3]}',
      ]);
      await resumed.ended;
      expect(resumed.named<{ seq: number; attempt: number }>('run_event').map((event) => [event.seq, event.attempt])).toEqual([[1, 1]]);
      expect(resumed.end()).toMatchObject({ run_id: runId, status: 'succeeded', truncated: false });
    } finally {
      await daemon.stop();
    }
  });
});
