// Secrets through a real daemon (docs/api.md "Secrets"): the built swarm-node daemon against the real svc-api, an
// uploaded agent that declares one secret of the user's two. Its run gets the declared one as an environment
// variable and not the other; a failing run that prints its secret (as it is, in base64, URL-encoded) has every form
// redacted in the error the service keeps; neither the node's database (its journal, WAL included), nor its log,
// nor the service's runs hold a value in clear.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { archiveOf } from '../helpers/agent-archives.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { DaemonProcess, executeOverHttp, register, signedInNode, waitUntilServing } from './support.js';

const AGENT = 'agent_svc_skills_005';
const DECLARED = 'sk_live_LEAKCHECK_42';
const UNDECLARED = 'undeclared_LEAKCHECK_99';

/** Reports what it got; with input.fail, prints its secret in three forms on stderr and fails. */
const PROGRAM = `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  const run = JSON.parse(input);
  const value = process.env.DECLARED_KEY;
  // Artifacts: one plain, one whose name holds the secret (never uploaded, never listed).
  require('node:fs').writeFileSync(process.env.SWARM_ARTIFACTS_DIR + '/plain.txt', 'kept');
  require('node:fs').writeFileSync(process.env.SWARM_ARTIFACTS_DIR + '/key-' + value + '.txt', 'named after it');
  if (run.input.fail) {
    process.stderr.write('using token ' + value + ' / ' + Buffer.from('Bearer ' + value).toString('base64') + ' / ?key=' + encodeURIComponent(value + '&x') + '\\n');
    process.exit(1);
  }
  process.stdout.write(JSON.stringify({
    declared_matches: require('node:crypto').createHash('sha256').update(String(value)).digest('hex') === run.input.expected_sha256,
    undeclared_present: 'UNDECLARED_KEY' in process.env,
    echoed: 'token ' + value,
  }));
});
`;

describe('secrets through a real daemon', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });

  it('hands the declared secret only, as an environment variable, and redacts every form of it from what the run wrote', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'secrets' });
    const manifest = {
      agent_id: AGENT,
      version: '1.0.0',
      entry: ['node', 'main.mjs'],
      input_schema: { type: 'object' },
      secrets: ['DECLARED_KEY'],
    };
    const upload = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/versions`, {
      method: 'POST',
      token: node.token,
      headers: { 'content-type': 'application/gzip' },
      rawBody: await archiveOf([
        { name: 'agent.json', data: JSON.stringify(manifest) },
        { name: 'main.mjs', data: PROGRAM },
      ]),
    });
    expect(upload.status, upload.text).toBe(201);
    for (const [name, value] of [
      ['DECLARED_KEY', DECLARED],
      ['UNDECLARED_KEY', UNDECLARED],
    ]) {
      const set = await httpRequest(`${service.baseUrl}/v1/swarm/secrets/${name}`, { method: 'PUT', token: node.token, body: { value } });
      expect(set.status, set.text).toBe(200);
    }
    await register(node, AGENT, '--input', 'expected=unused');
    const daemon = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, AGENT);

    // The run is told the value's digest, never the value: its input is stored as it is.
    const ok = await executeOverHttp(service.baseUrl, node, AGENT, {
      input: { expected_sha256: createHash('sha256').update(DECLARED).digest('hex') },
    });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.output).toEqual({ declared_matches: true, undeclared_present: false, echoed: 'token ***' });
    const artifacts = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${ok.body.run_id}/artifacts`, { token: node.token });
    expect(artifacts.status, artifacts.text).toBe(200);
    expect(artifacts.body.artifacts.map((artifact: { name: string }) => artifact.name)).toEqual(['plain.txt']);

    const failed = await executeOverHttp(service.baseUrl, node, AGENT, { input: { fail: true } });
    expect(failed.status, failed.text).toBe(200);
    expect(failed.body).toMatchObject({ status: 'failed', charged_cents: 0 });
    expect(failed.body.output.message).toMatch(/using token \*\*\* \/ QmVhcmVy\S*\*\*\*\S* \/ \?key=\*\*\*%26x/);
    // The run's log, as the service keeps it and hands it out: the stderr line is there, every form hidden.
    const log = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${failed.body.run_id}/logs`, { token: node.token });
    expect(log.status, log.text).toBe(200);
    expect(log.text).toMatch(/using token \*\*\* \//);

    // Nowhere in clear: the service's runs, the node's database and its write-ahead log, the daemon's log.
    const forms = (value: string) => [value, Buffer.from(value).toString('base64').slice(2, 20), encodeURIComponent(value)];
    const stored = JSON.stringify([
      service.db.prepare('SELECT output_json, input_json FROM runs WHERE user_id = ?').all(node.email),
      service.db.prepare('SELECT text FROM run_log_entries').all(),
      service.db.prepare('SELECT name FROM run_artifacts').all(),
    ]);
    expect(await daemon.stop()).toBe(0);
    const nodeFiles = [node.databaseFile, `${node.databaseFile}-wal`]
      .filter((file) => existsSync(file))
      .map((file) => readFileSync(file).toString('latin1'));
    for (const value of [DECLARED, UNDECLARED]) {
      for (const form of forms(value)) {
        expect(stored).not.toContain(form);
        for (const bytes of nodeFiles) expect(bytes).not.toContain(form);
        expect(daemon.output + daemon.stderr).not.toContain(form);
      }
    }
  });
});
