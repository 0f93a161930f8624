// What an agent writes never reaches the operator's terminal as control characters (docs/operations.md "Terminal
// output"): a hostile agent's summary and stderr clear the screen, retitle the window and write the clipboard
// (OSC 52) when printed raw. The built binary against the real svc-api, the agent a bundle of the node's own; every
// human rendering of it (run, its error, the wizard, doctor) shows the characters as visible \uXXXX escapes.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { swarmNode } from '../helpers/cli.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { signedInNode } from './fixtures.js';
import { signedInNode as signedInUser } from '../wizard/fixtures.js';

const AGENT = 'agent_ops_monitor_004';
const service = useSvcApi();

/** Clear the screen, home the cursor, set the window title, write "pwned" to the clipboard; C1 CSI, DEL, RLO. */
const HOSTILE = '\u001b[2J\u001b[H\u001b]0;owned\u0007\u001b]52;c;cHduZWQ=\u0007\u009b31m\u007f\u202eevil';
/** Any control character a terminal acts on, but newline and tab. */
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function expectEscaped(text: string): void {
  expect(text).not.toMatch(RAW_CONTROL);
  expect(text).toContain('\\u001b]52;c;cHduZWQ=\\u0007');
  expect(text).toContain('\\u009b31m\\u007f\\u202eevil');
}

describe("an agent's words on the operator's terminal", () => {
  it('swarm-node run: the summary of a run that succeeded', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'escapes-run' });
    installTestBundle(
      node.home,
      AGENT,
      agentProgram(`process.stdout.write(JSON.stringify({ summary: 'line one\\n' + ${JSON.stringify(HOSTILE)} }));`),
    );
    const result = await swarmNode(['run', AGENT], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(0);
    expectEscaped(result.stdout);
    // Lines stay lines.
    expect(result.stdout).toMatch(/\nline one\n/);
    // --json is for programs: JSON's own escapes, the same text once parsed.
    const json = await swarmNode(['--json', 'run', AGENT], { env: node.env });
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.json.output.summary).toBe(`line one\n${HOSTILE}`);
  });

  it('swarm-node run: an artifact name holding a newline and an escape, shown as one line of ours, escaped', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'escapes-artifact' });
    const name = `report.txt\nerror: the forged line ${HOSTILE}`;
    installTestBundle(
      node.home,
      AGENT,
      agentProgram(
        `(await import('node:fs')).writeFileSync(process.env.SWARM_ARTIFACTS_DIR + '/' + ${JSON.stringify(name)}, 'x'); process.stdout.write('{}');`,
      ),
    );
    const result = await swarmNode(['run', AGENT], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(0);
    const warning = result.stderr.split('\n').filter((line) => line.includes('not kept'));
    expect(warning, result.stderr).toHaveLength(1);
    expect(warning[0]).toContain('report.txt\\u000aerror: the forged line \\u001b[2J');
    expect(result.stderr).not.toMatch(/^error: the forged line/m);
    expectEscaped(result.stderr);
  });

  it('swarm-node run: the stderr tail in the error of a run that failed', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'escapes-fail' });
    installTestBundle(node.home, AGENT, agentProgram(`process.stderr.write(${JSON.stringify(HOSTILE)}); process.exit(3);`));
    const result = await swarmNode(['run', AGENT], { env: node.env });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^error: the run of .* exited with code 3: /m);
    expectEscaped(result.stderr);
  });

  it('swarm-node wizard: the result line of its first run', async () => {
    const node = await signedInUser(service.baseUrl, 'escapes-wizard', 100);
    installTestBundle(node.home, AGENT, agentProgram(`process.stdout.write(JSON.stringify({ summary: ${JSON.stringify(HOSTILE)} }));`));
    const result = await swarmNode(['wizard', '--agent', AGENT, '--yes'], { env: node.env });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/Result: \\u001b\[2J/);
    expectEscaped(result.stderr);
    expect(result.stdout).not.toMatch(RAW_CONTROL);
  });

  it('swarm-node doctor: a path it reports, made of the same characters', async () => {
    // doctor reports paths and what it read from the node's files; a name with control characters in it (here the
    // install root's own) is shown escaped, in the report and in the error that lists the failed checks.
    const root = join(tempDir('escapes-doctor-'), `root${HOSTILE}`);
    mkdirSync(root);
    const result = await swarmNode(['doctor', '--root', root], { env: { NO_COLOR: '1', SVC_BASE_URL: service.baseUrl } });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(/FAIL layout/);
    expectEscaped(result.stdout);
    expectEscaped(result.stderr);
  });
});
