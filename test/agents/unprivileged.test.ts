// The agents as a node runs them: as an unprivileged user that owns neither the files it reads nor anything of
// the node. Needs root to switch user (setpriv), so it runs where the tests run as root.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { runAgentProcess } from './agent-process.js';

const NOBODY = { uid: 65534, gid: 65534 };
const canSwitchUser = process.getuid?.() === 0 && existsSync('/usr/bin/setpriv');

afterAll(() => removeTempDirs());

/** A temp directory others may read (mkdtemp makes it 0700), as a repository or a wiki on a host usually is. */
function readableDir(prefix: string): string {
  const dir = tempDir(prefix);
  chmodSync(dir, 0o755);
  return dir;
}

describe.skipIf(!canSwitchUser)('the agents as an unprivileged user', () => {
  it("agent_dev_review_012 reviews a repository it does not own (git's safe.directory is waived for it)", async () => {
    const repo = readableDir('unpriv-repo-');
    const git = (...args: string[]) => execa('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.com', ...args], { cwd: repo, env: { HOME: repo } });
    await git('init', '-q');
    writeFileSync(join(repo, 'run.sh'), '#!/bin/sh\n# FIXME quote this\nrm -rf $1/*\n');
    await git('add', '.');
    await git('commit', '-q', '-m', 'script');
    const run = await runAgentProcess('agent_dev_review_012', { repo }, { asUser: NOBODY });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.counts).toMatchObject({ todo: 1, secret: 0 });
    expect(run.json.tools.shellcheck.checked).toBe(1);
  });

  it('agent_research_rag_015 keeps its index in a state directory it owns, with better-sqlite3 loaded as the release loads it', async () => {
    const corpus = readableDir('unpriv-corpus-');
    writeFileSync(join(corpus, 'a.md'), '# Tides\n\nThe harbour closes two hours before low tide.\n');
    const stateDir = join(readableDir('unpriv-state-'), 'state');
    mkdirSync(stateDir);
    chownSync(stateDir, NOBODY.uid, NOBODY.gid);
    const run = await runAgentProcess('agent_research_rag_015', { corpus, question: 'When does the harbour close?' }, { asUser: NOBODY, stateDir });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.answer).toMatchObject({ found: true, citations: [{ citation: 'a.md:1-3' }] });
    expect(run.json.index.kept_between_runs).toBe(true);
  });

  it('agent_ops_monitor_004 sizes a node database it may not read', async () => {
    const nodeHome = readableDir('unpriv-home-');
    mkdirSync(join(nodeHome, 'var'), { mode: 0o711 });
    writeFileSync(join(nodeHome, 'var', 'swarm-node.db'), Buffer.alloc(4096), { mode: 0o600 });
    const run = await runAgentProcess('agent_ops_monitor_004', {}, { asUser: NOBODY, nodeHome });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.database).toMatchObject({ size_bytes: 4096 });
  });
});
