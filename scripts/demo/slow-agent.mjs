// An operator's own bundle for the demo (docs/sections/agent-upload.md "Agent bundle"): <home>/agents/<agent_id>/
// takes precedence over the package's reference agent of that id. This one reads its input like any agent, then
// works for a long minute before it answers, long enough to kill its node while it runs; run again under the same
// run id (the service retries a run lost with its node), it finishes in a few seconds.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SLOW_AGENT = 'agent_dev_review_012';
/** What the demo asks it to review: any repository will do, it only waits. */
export const SLOW_INPUT = { repo: '/srv/app' };
/** How long its first attempt works: far past the lease, so only a kill ends it in the demo. */
const WORK_SECONDS = 90;
/** How long an attempt after the first works: the demo waits for it. */
const RETRY_SECONDS = 4;

const MANIFEST = {
  agent_id: SLOW_AGENT,
  version: '0.0.1-demo',
  entry: ['node', 'main.mjs'],
  // The catalog agent's input, as the service checks it before the charge: the field names are the contract.
  input_schema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    additionalProperties: false,
    required: ['repo'],
    properties: { repo: { type: 'string', pattern: '^/' }, rev: { type: 'string' } },
  },
  description: `The demo's slow review: it works for ${WORK_SECONDS} s (${RETRY_SECONDS} s when its run is retried), then answers.`,
};

const MAIN = `// The demo's slow review: reads its input, works, answers with one JSON document. Its state directory (kept
// between runs on this node) remembers the runs it started: a run it meets again is a retry, and is quick.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
let input = '';
for await (const chunk of process.stdin) input += chunk;
const { run_id } = JSON.parse(input);
const seen = join(process.env.SWARM_STATE_DIR, run_id + '.started');
const retried = existsSync(seen);
writeFileSync(seen, '');
const seconds = retried ? ${RETRY_SECONDS} : ${WORK_SECONDS};
for (let second = 1; second <= seconds; second += 1) {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  process.stderr.write('reviewed ' + second + ' of ' + seconds + ' s\\n');
}
// What it found, as a file of the run's artifacts: uploaded once it ends, downloaded with swarm-node artifacts.
writeFileSync(join(process.env.SWARM_ARTIFACTS_DIR, 'review.txt'), 'run ' + run_id + ': nothing flagged in /srv/app\\n');
process.stdout.write(JSON.stringify({ summary: retried ? 'reviewed, on a second attempt' : 'reviewed, slowly', run_id }) + '\\n');
`;

/** Writes the bundle under the node's home; readable by every run's user (each run has a uid of its own). */
export function writeSlowBundle(home) {
  const dir = join(home, 'agents', SLOW_AGENT);
  mkdirSync(dir, { recursive: true });
  for (const path of [join(home, 'agents'), dir]) chmodSync(path, 0o755);
  const files = [
    [join(dir, 'agent.json'), `${JSON.stringify(MANIFEST, null, 2)}\n`],
    [join(dir, 'main.mjs'), MAIN],
  ];
  for (const [path, text] of files) {
    writeFileSync(path, text);
    chmodSync(path, 0o644);
  }
  return { dir, main: join(dir, 'main.mjs'), manifest: MANIFEST, source: MAIN };
}
