// Hostile agents against a real node and the real svc-api, under bubblewrap as root (docs/operations.md "Agent
// isolation"): a run that fills its state fails disk_quota and is refunded, and the node goes on with every other
// agent; a daemon killed with SIGKILL mid-run leaves no process of the run behind, however it tried to escape.
import { afterAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAgent } from '../../src/node/runs/run-agent.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { fundWallet, waitFor } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { processesOf, sandboxAvailable, testNodeCaller } from '../node/sandbox-support.js';
import { DaemonProcess, register, signedInNode } from './support.js';

const HOSTILE = 'agent_ops_monitor_004'; // 4 cents
const OTHER = 'agent_svc_skills_005'; // 5 cents
const MiB = 1024 * 1024;

const service = useSvcApi();
afterAll(() => removeTempDirs());

describe.skipIf(!sandboxAvailable)('hostile agents on a node under bubblewrap, as root', () => {
  it('a run that fills its state fails disk_quota, is refunded, and the node runs the next agent', async () => {
    const email = uniqueEmail('disk');
    const enrolled = await enrollNode(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const home = tempDir('sandbox-node-');
    const { caller, db, client, deps } = testNodeCaller(service.baseUrl, home, enrolled, {
      isolation: 'bubblewrap',
      limits: { stateBytes: 4 * MiB, timeoutMs: 60_000 },
    });
    const balance = () =>
      apiClient(service.baseUrl)
        .get('/v1/swarm/wallet', caller.bearer)
        .then((answer) => answer.body.balance_cents as number);
    installTestBundle(
      home,
      HOSTILE,
      agentProgram(`const fs = await import('node:fs');
        let written = 0;
        try { for (let i = 0; ; i += 1) { fs.writeFileSync(process.env.SWARM_STATE_DIR + '/fill-' + i, Buffer.alloc(${MiB}, 1)); written += ${MiB}; } }
        catch (error) { process.stdout.write(JSON.stringify({ summary: 'wrote ' + written + ' bytes, then ' + error.code })); }`),
    );

    const filled = await runAgent(deps, HOSTILE);
    expect(filled, JSON.stringify(filled)).toMatchObject({
      kind: 'settled',
      result: { status: 'failed', charged_cents: 0, output: { error: 'disk_quota' } },
    });
    expect(await balance()).toBe(100);
    // The node's database, in the same var/, still takes its writes, and another agent runs.
    const next = await runAgent(deps, OTHER, { question: 'What is a node?' });
    expect(next, JSON.stringify(next)).toMatchObject({ kind: 'settled', result: { status: 'succeeded', charged_cents: 5 } });
    expect(await balance()).toBe(95);
    db.close();
    await client.close();
  });

  it('SIGKILL of the daemon mid-run leaves no process of the run, double forks and new sessions included', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'orphans' });
    node.env.SWARM_AGENT_ISOLATION = 'bubblewrap';
    installTestBundle(
      node.home,
      HOSTILE,
      agentProgram(`const { spawn } = await import('node:child_process');
        spawn('setsid', ['sh', '-c', 'trap "" TERM HUP; sleep 600 & sleep 600'], { detached: true, stdio: 'ignore' }).unref();
        spawn('sh', ['-c', '(sleep 600 &) ; sleep 600'], { detached: true, stdio: 'ignore' }).unref();
        setInterval(() => {}, 1000);`),
    );
    await register(node, HOSTILE, '--every', '1h');
    const daemon = DaemonProcess.start(node);
    const marker = `SWARM_NODE_HOME=${node.home}`;
    // The agent, its two escapees and their sleeps: every process of the run carries the run's environment.
    const agentProcesses = () => processesOf(marker).filter((pid) => pid !== daemon.pid);
    await waitFor(async () => (agentProcesses().length >= 6 ? true : undefined), 'the run and its escapees to start', 30_000);
    expect(await daemon.stop('SIGKILL')).toBe('SIGKILL');
    await waitFor(
      async () => (agentProcesses().length === 0 ? true : undefined),
      `the run's processes to be gone (left: ${agentProcesses().join(', ')})`,
      30_000,
    );
    // Nor its artifacts tmpfs: never mounted on the host, and its holder went with the daemon.
    const artifacts = join(node.home, 'var', 'artifacts');
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(artifacts);
    await waitFor(
      async () => (processesNaming(artifacts).length === 0 ? true : undefined),
      "the holder of the run's artifacts tmpfs to be gone",
      30_000,
    );
  });
});

/** The processes whose command line names `path`. */
function processesNaming(path: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(path)) found.push(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
