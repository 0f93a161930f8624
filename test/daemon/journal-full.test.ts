// A node whose var/ is full (docs/operations.md "A full var/"): it cannot journal a run before its agent starts, so it
// takes none, says why in its log, `status` and /healthz, and resumes by itself once space is freed; the user's other
// node takes the runs meanwhile, none of them waiting out a lease on the full one. var/ is a real 16 MiB tmpfs the
// test fills (root only: mount); the daemons are the built binary, the service the real svc-api.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { fillFilesystem, putOnTmpfs, releaseTmpfs } from '../helpers/tmpfs.js';
import { agentEvents } from './agents.js';
import {
  cli,
  DaemonProcess,
  executeOverHttp,
  register,
  runEnded,
  runOf as runOfService,
  signedInNode,
  waitUntilServing,
  type TestNode,
} from './support.js';

const OPS = 'agent_ops_monitor_004';
const EVENT_MS = 30_000;
const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)('swarm-node daemon: a full var/', () => {
  const service = useSvcApi({
    runTiming: { leaseMs: 20_000, pollHoldMs: 2_000, sweepMs: 100, executeWaitMs: 10_000, queueTimeoutMs: 120_000 },
  });
  const runOf = (node: TestNode, runId: string) => runOfService(service.baseUrl, node, runId, 5);
  const ended = (node: TestNode, runId: string) => runEnded(service.baseUrl, node, runId, EVENT_MS);

  it('takes no run while its journal cannot be written, says why, and resumes by itself', async () => {
    const full = await signedInNode(service.baseUrl, { fundCents: 200, label: 'full' });
    const healthy = await signedInNode(service.baseUrl, { email: full.email, token: full.token, label: 'healthy' });
    await register(full, OPS);
    await register(healthy, OPS);
    const varDir = putOnTmpfs(join(full.home, 'var'), '16m');
    const daemon = DaemonProcess.start(full, ['--tick-ms', '100', '--health-addr', '0']);
    const other = DaemonProcess.start(healthy, ['--tick-ms', '100']);
    try {
      const health = `http://${(await daemon.waitForEvent('health_listening')).addr}/healthz`;
      await waitUntilServing(service.baseUrl, full, OPS);
      await daemon.waitForEvent('agents_served');

      const filler = fillFilesystem(varDir);
      const unwritable = await daemon.waitForEvent('journal_unwritable', () => true, EVENT_MS);
      expect(unwritable).toMatchObject({ level: 'error', reason: 'disk_full' });
      expect(unwritable.remedy).toContain(varDir);

      // Said where an operator looks: status (read on the full disk) and the health endpoint.
      const status = await cli(full, ['--json', 'status']);
      expect(status.exitCode, status.stderr).toBe(0);
      const shown = JSON.parse(status.stdout);
      expect(shown.journal_fault).toMatchObject({ reason: 'disk_full', pid: daemon.pid });
      expect(shown.daemon.running).toBe(true);
      expect(shown.problems.join('\n')).toContain('cannot write its journal');
      const checked = await fetch(health);
      expect(checked.status).toBe(503);
      expect(await checked.json()).toMatchObject({ healthy: false, journal_writable: false });

      // The user's runs meanwhile go to the healthy node, each at its first attempt: none waits out a lease here.
      const runs = await Promise.all([1, 2, 3, 4].map(() => executeOverHttp(service.baseUrl, full, OPS, { prefer: 'respond-async' })));
      for (const run of runs)
        expect(await ended(full, run.body.run_id)).toMatchObject({ status: 'succeeded', attempt: 1, node_id: expect.any(String) });
      for (const run of runs) expect((await runOf(full, run.body.run_id)).body.node_id).not.toBe(shown.node.node_id);
      expect(agentEvents(full, 'start')).toEqual([]);

      // Space again: it resumes by itself, and takes the next run once it is the only node left.
      rmSync(filler);
      const writable = await daemon.waitForEvent('journal_writable', () => true, EVENT_MS);
      expect(writable.after).toBe('disk_full');
      await waitFor(async () => ((await fetch(health)).status === 200 ? true : undefined), 'the health endpoint healthy again', EVENT_MS);
      expect(JSON.parse((await cli(full, ['--json', 'status'])).stdout).journal_fault).toBeNull();
      expect(await other.stop()).toBe(0);
      const next = await executeOverHttp(service.baseUrl, full, OPS, { prefer: 'respond-async' });
      expect(await ended(full, next.body.run_id)).toMatchObject({ status: 'succeeded', attempt: 1 });
      expect(agentEvents(full, 'start').map((event) => event.run_id)).toEqual([next.body.run_id]);
      expect(await daemon.stop()).toBe(0);
    } finally {
      await Promise.all([daemon.stop('SIGKILL'), other.stop('SIGKILL')]);
      releaseTmpfs(varDir);
    }
  });
});
