// Colour is decided for stdout and stderr each on its own: a result piped to a file holds no escape codes while
// the terminal's lines keep their colour, and the other way round. NO_COLOR and FORCE_COLOR rule both.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { swarmNode } from '../helpers/cli.js';
import { spawnPty, stagedSwarmNodeBin, type PtySession } from '../helpers/pty.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { ESC } from './fixtures.js';

// Nothing listens on port 9 (discard): `agents` warns on stderr (yellow) and prints the built-in catalog on stdout
// (names dim), so both streams have something to colour.
const UNREACHABLE = 'http://127.0.0.1:9';
const YELLOW = `${ESC}[33m`;
const DIM = `${ESC}[2m`;

const sessions: PtySession[] = [];
afterAll(() => {
  for (const session of sessions) session.kill();
  removeTempDirs();
});

/** `swarm-node agents` in a pty, with one of its streams sent through a pipe into `file` by the shell. */
async function agentsWithPipedStream(
  stream: 'stdout' | 'stderr',
  extraEnv: Record<string, string> = {},
): Promise<{ terminal: string; piped: string }> {
  const dir = tempDir('colour-');
  const file = join(dir, `${stream}.txt`);
  const redirect = stream === 'stdout' ? '"$@" | cat > "$PIPED_FILE"' : '{ "$@" 2>&1 1>&3 | cat > "$PIPED_FILE"; } 3>&1';
  const session = spawnPty('/bin/sh', ['-c', redirect, 'sh', process.execPath, stagedSwarmNodeBin(), 'agents'], {
    SWARM_NODE_HOME: join(dir, 'home'),
    SVC_BASE_URL: UNREACHABLE,
    PIPED_FILE: file,
    ...extraEnv,
  });
  sessions.push(session);
  const exit = await session.waitForExit(30_000);
  expect(exit.exitCode, session.screen()).toBe(0);
  return { terminal: session.raw(), piped: readFileSync(file, 'utf8') };
}

describe('colour per stream', () => {
  it('stdout piped: the result holds no escape codes, the warning on the terminal is yellow', async () => {
    const { terminal, piped } = await agentsWithPipedStream('stdout');
    expect(piped).toContain('agent_ops_monitor_004');
    expect(piped).not.toContain(ESC);
    expect(terminal).toContain(`${YELLOW}warning: cannot reach the service`);
  });

  it('stderr piped: the warning holds no escape codes, the result on the terminal is coloured', async () => {
    const { terminal, piped } = await agentsWithPipedStream('stderr');
    expect(piped).toContain('warning: cannot reach the service');
    expect(piped).not.toContain(ESC);
    expect(terminal).toContain(`${DIM}Ops monitor agent`);
  });

  it('NO_COLOR turns both off on a terminal', async () => {
    const { terminal, piped } = await agentsWithPipedStream('stdout', { NO_COLOR: '1' });
    expect(piped).not.toContain(ESC);
    expect(terminal).toContain('warning: cannot reach the service');
    expect(terminal).not.toMatch(/\u001b\[[0-9;]*m/);
  });

  it('FORCE_COLOR colours both streams, even piped; --no-color wins over it', async () => {
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      SWARM_NODE_HOME: tempDir('colour-home-'),
      SVC_BASE_URL: UNREACHABLE,
      FORCE_COLOR: '1',
    };
    const forced = await swarmNode(['agents'], { env, extendEnv: false });
    expect(forced.exitCode, forced.stderr).toBe(0);
    expect(forced.stdout).toContain(`${DIM}Ops monitor agent`);
    expect(forced.stderr).toContain(`${YELLOW}warning:`);
    const off = await swarmNode(['--no-color', 'agents'], { env, extendEnv: false });
    expect(off.stdout + off.stderr).not.toContain(ESC);
  });
});
