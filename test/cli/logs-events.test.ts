// swarm-node logs RUN --events (docs/api.md "Run events"): the built binary follows a run's structured events from
// the real svc-api, one a line with its type and data, until the run ends; --json gives each event's document and
// the end. The events are sent by the test's own protocol node, which holds the run until the test finishes it.
import { afterAll, describe, expect, it } from 'vitest';
import type { RunEventEntry } from '../../src/contract/run-events.js';
import { swarmNode } from '../helpers/cli.js';
import { httpRequest } from '../helpers/http.js';
import { SWARM_NODE_BIN, useSvcApi } from '../helpers/svc-api.js';
import { execa } from 'execa';
import { waitFor } from '../helpers/wait.js';
import { heldRun } from '../api/held-run.js';
import { stopNodes, TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { signedInNode } from './fixtures.js';

describe('swarm-node logs --events', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });
  afterAll(stopNodes);

  it('follows the events as they come, each on one line, until the run ends; --json each whole, then the end', async () => {
    const user = await signedInNode(service.baseUrl, { fundCents: 100, label: 'logs-events', enroll: false });
    const held = await heldRun(service, user);
    const post = (events: RunEventEntry[]) =>
      httpRequest(`${service.baseUrl}/v1/swarm/runs/${held.run.run_id}/events`, {
        method: 'POST',
        token: held.credential,
        body: { lease_id: held.run.lease_id, events },
      });
    const at = new Date().toISOString();
    expect((await post([{ seq: 0, attempt: 1, type: 'progress', at, data: { done: 0.5 } }])).status).toBe(200);
    const following = execa('node', [SWARM_NODE_BIN, 'logs', held.run.run_id, '--events'], {
      env: user.env,
      reject: false,
      stdin: 'ignore',
      timeout: 60_000,
    });
    // The second event once the first came through the follow: it can only come live.
    const stdout: string[] = [];
    following.stdout.on('data', (chunk: Buffer) => stdout.push(chunk.toString()));
    await waitFor(async () => (stdout.join('').includes('[progress] {"done":0.5}') ? true : undefined), 'the first event printed');
    // An agent's text with a terminal escape in it prints escaped.
    await post([{ seq: 1, attempt: 1, type: 'custom', name: 'step.done', at, data: { note: 'x\u001b[31my' } }]);
    await waitFor(async () => (stdout.join('').includes('[custom:step.done]') ? true : undefined), 'the second event printed');
    held.finish();
    const done = await following;
    expect(done.exitCode, done.stderr).toBe(0);
    // The escape is shown, never sent to the terminal: made visible (\u001b), then written as JSON.
    expect(String(done.stdout).split('\n')).toEqual(['[progress] {"done":0.5}', '[custom:step.done] {"note":"x\\\\u001b[31my"}']);
    expect(String(done.stdout)).not.toContain('\u001b');
    expect(done.stderr).toContain(`Run ${held.run.run_id} succeeded.`);

    const json = await swarmNode(['--json', 'logs', held.run.run_id, '--events'], { env: user.env });
    const lines = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ seq: 0, type: 'progress', data: { done: 0.5 } }),
      expect.objectContaining({ seq: 1, type: 'custom', name: 'step.done' }),
      { end: { run_id: held.run.run_id, status: 'succeeded', truncated: false, next_after: 1, error: null } },
    ]);
  });
});
