// The spinner on terminals that report 0 or 1 columns (serial consoles, `script`), in a real pty against a real
// svc-api: the command finishes, the spinner never leaves its line, and Ctrl+C under it exits 130.
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { contractInputFlags, heldAgentProgram, installTestBundle } from '../helpers/bundles.js';
import { join } from 'node:path';
import { KEY, spawnSwarmNodePty, type PtySession } from '../helpers/pty.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { swarmNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { runsOf } from '../wizard/fixtures.js';
import { signedInNode, walletBalance } from './fixtures.js';

const AGENT = 'agent_ops_monitor_004';
/** Its bundle here answers only once the test releases it, so a command waits under its spinner as long as needed. */
const HELD_AGENT = 'agent_research_rag_015';
/** Cursor up (ESC[nA) or to a previous line (ESC[nF): a one-line spinner has no business above its line. */
const CURSOR_UP = /\u001b\[\d*[AF]/;

const release = join(tempDir('held-agent-'), 'release');
const sessions: PtySession[] = [];
const service = useSvcApi();

afterAll(() => {
  for (const session of sessions) session.kill();
  writeFileSync(release, '');
});

function swarmNodeIn(columns: number, args: string[], env: Record<string, string>): PtySession {
  // Colour on, as on a person's terminal: the spinner's own sequences are the point here.
  const { NO_COLOR: _off, ...coloured } = env;
  const session = spawnSwarmNodePty(args, coloured, { columns });
  sessions.push(session);
  return session;
}

describe.each([0, 1])('a terminal of %i column(s)', (columns) => {
  it('swarm-node run shows its spinner, finishes with exit 0, and never moves the cursor up', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: `spinner-${columns}` });
    const session = swarmNodeIn(columns, ['run', AGENT], node.env);
    const exit = await session.waitForExit(20_000);
    expect(exit, session.screen()).toEqual({ exitCode: 0, signal: undefined });
    expect(session.screen()).toContain(`✔ Running ${AGENT}`);
    expect(session.screen()).toMatch(new RegExp(`✓ ${AGENT} ran on node \\S+ \\(run \\S+\\): charged \\$0\\.04, balance \\$0\\.96`));
    expect(session.raw()).not.toMatch(CURSOR_UP);
    // Shown again after being hidden for the spinner.
    expect(session.raw().lastIndexOf('\u001b[?25h')).toBeGreaterThan(session.raw().lastIndexOf('\u001b[?25l'));
    expect(await walletBalance(service.baseUrl, node.token)).toBe(96);
  });

  it('Ctrl+C while swarm-node run waits under its spinner exits 130 through the cleanup', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: `spinner-int-${columns}` });
    // A deadline of 10 minutes: Ctrl+C must drop the call in flight, not wait for its answer.
    expect((await swarmNode(['config', 'set', 'timeout_seconds', '600'], { env: node.env })).exitCode).toBe(0);
    installTestBundle(node.home, HELD_AGENT, heldAgentProgram(release));
    const session = swarmNodeIn(columns, ['run', HELD_AGENT, ...contractInputFlags(HELD_AGENT)], node.env);
    await session.waitFor('⠋ Running agent', 15_000);
    // The next frame: the spinner is redrawing (the moment ora, given 0 columns, stopped answering anything).
    await session.waitFor('⠙', 10_000);
    session.press(KEY.ctrlC);
    const exit = await session.waitForExit(10_000);
    expect(exit.exitCode, session.screen()).toBe(130);
    expect(exit.signal || undefined, 'ended by the signal instead of by the CLI').toBeUndefined();
    expect(session.raw().lastIndexOf('\u001b[?25h')).toBeGreaterThan(session.raw().lastIndexOf('\u001b[?25l'));
    // Ctrl+C stopped the agent here: the run is failed and refunded, or (its report cut short by the exit) pending
    // in the journal for the next run to settle by its key. Never charged.
    expect(runsOf(node.home)).toEqual([
      { agent_id: HELD_AGENT, source: 'cli', status: expect.stringMatching(/^(pending|failed)$/), charged_cents: 0 },
    ]);
  });
});

describe('the wizard on a terminal of 0 columns', () => {
  it('runs the agent once under its spinner and finishes with exit 0', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'spinner-wizard' });
    const session = swarmNodeIn(0, ['wizard', '--agent', AGENT, '--yes', '--no-register'], node.env);
    const exit = await session.waitForExit(20_000);
    expect(exit, session.screen()).toEqual({ exitCode: 0, signal: undefined });
    expect(session.screen()).toContain('Done.');
    expect(session.raw()).not.toMatch(CURSOR_UP);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(96);
  });
});
