// The runner on a host where each run gets a user of its own (root, or the unit's two capabilities): a run whose
// user could not reach its directory fails at once and says which directory to open, instead of a mkdir error.
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalRunner } from '../../src/node/runner/run-local.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

const canSwitchUsers = process.getuid?.() === 0 && existsSync('/usr/bin/setpriv');

afterAll(() => removeTempDirs());

const aRun = () => ({ run_id: randomUUID(), agent_id: 'agent_ops_monitor_004', user_id: 'runner@example.com', tier: 'svc_starter_agents', input: {} });

describe.skipIf(!canSwitchUsers)('createLocalRunner, each run under a uid of its own', () => {
  it('a home under a directory closed to other users: the run fails naming it and the remedy; once opened, it runs', async () => {
    const closed = tempDir('closed-'); // mkdtemp: 0700, as a home directory or a scratch directory is
    const home = join(closed, 'node');
    mkdirSync(home, { mode: 0o755 });
    const runner = createLocalRunner({ home, varDir: join(home, 'var'), packageDir: REPO_ROOT, isolation: 'uid' });

    const refused = await runner.run(aRun());
    expect(refused).toEqual({
      status: 'failed',
      output: { error: 'spawn', message: expect.stringContaining(`${closed} (mode 0700) lets no other user pass; chmod o+x ${closed} (passing, not listing)`) },
    });

    // Opened the way the message says, without a new runner (a daemon need not restart).
    chmodSync(closed, 0o711);
    const ran = await runner.run(aRun());
    expect(ran.status, JSON.stringify(ran)).toBe('succeeded');
  });
});
