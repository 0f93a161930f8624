// The runner where a checkout lives in a directory other users may not enter (root's 0700 home, a mkdtemp): the
// sandbox binds what the agent needs (its bundle, the docs, the package's node_modules, the node's runtime) at their
// own paths into directories it may pass, as an installed node's release is laid out for it, so the run under the
// agent's own uid works without opening anything on the host.
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalRunner } from '../../src/node/runner/run-local.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { openDir, removeOpenDirs, sandboxAvailable } from './sandbox-support.js';

afterAll(() => {
  removeTempDirs();
  removeOpenDirs();
});

const aRun = (agentId: string, input: unknown) => ({
  run_id: randomUUID(),
  agent_id: agentId,
  user_id: 'runner@example.com',
  tier: 'svc_starter_agents',
  input,
});

describe.skipIf(!sandboxAvailable)('createLocalRunner under bubblewrap, with the package and the home in closed directories', () => {
  it('runs the built-in agents as their own users, the RAG agent keeping its index in its state', async () => {
    const closed = tempDir('closed-'); // mkdtemp: 0700, as a home directory or a scratch directory is
    expect(statSync(closed).mode & 0o777).toBe(0o700);
    // The package as a checkout in there: the agents, the docs, and the node_modules the RAG agent imports from.
    const packageDir = join(closed, 'checkout');
    mkdirSync(join(packageDir, 'docs'), { recursive: true });
    cpSync(join(REPO_ROOT, 'agents'), join(packageDir, 'agents'), { recursive: true });
    cpSync(join(REPO_ROOT, 'docs', 'sections'), join(packageDir, 'docs', 'sections'), { recursive: true });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(packageDir, 'node_modules'));
    const home = join(closed, 'node');
    mkdirSync(home);
    // The corpus where a host keeps data: a directory every user may read.
    const corpus = openDir('closed-corpus-');
    writeFileSync(join(corpus, 'tides.md'), '# Tides\n\nThe harbour closes two hours before low tide.\n');

    const runner = createLocalRunner({
      home,
      varDir: join(home, 'var'),
      packageDir,
      isolation: 'bubblewrap',
      limits: { timeoutMs: 60_000 },
    });
    const monitor = await runner.run(aRun('agent_ops_monitor_004', {}));
    expect(monitor.status, JSON.stringify(monitor)).toBe('succeeded');
    const first = await runner.run(aRun('agent_research_rag_015', { corpus, question: 'When does the harbour close?' }));
    expect(first, JSON.stringify(first)).toMatchObject({
      status: 'succeeded',
      output: { passages: [{ citation: 'tides.md:1-3' }], index: { kept_between_runs: true } },
    });
    const tutor = await runner.run(aRun('agent_svc_skills_005', { question: 'What is a node?' }));
    expect(tutor.status, JSON.stringify(tutor)).toBe('succeeded');
  });
});
