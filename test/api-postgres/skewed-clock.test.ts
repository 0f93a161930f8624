// Two svc-api instances on one PostgreSQL database, one of them with its wall clock two minutes ahead (libfaketime):
// every lease, online and sweep decision is taken on the database's clock (docs/operations.md "Time on PostgreSQL"),
// so the skewed instance neither fails the other's runs node_lost mid-run, nor refuses executes for want of an
// online node, nor fails a claimed run not_picked_up. Real processes; the node is the protocol played over HTTP.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes, type Answer } from '../helpers/protocol-node.js';
import { spawnSvcApi, type SpawnedSvcApi } from '../helpers/svc-api.js';
import { syncPostgres, type SyncPostgres } from '../helpers/sync-postgres.js';
import { postgresDatabaseFor } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { LIBFAKETIME } from '../helpers/faketime.js';

const AGENT = 'agent_ops_monitor_004';
const LEASE_SECONDS = 5;

describe('an svc-api instance whose clock is two minutes ahead, beside one whose clock is right', () => {
  let reader: SyncPostgres;
  let db: SqliteDatabase;
  let right: SpawnedSvcApi;
  let ahead: SpawnedSvcApi;

  beforeAll(async () => {
    const url = await postgresDatabaseFor(tempDir('svc-pg-skew-'));
    const shared = {
      SVC_JWT_SECRET: randomBytes(32).toString('base64url'),
      SVC_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64url')}`,
      SVC_DATABASE_URL: url,
    };
    const args = ['--lease-seconds', String(LEASE_SECONDS)];
    right = await spawnSvcApi({ env: shared, args });
    // Its wall clock only (the monotonic clock is the host's), as on a host whose time is simply wrong.
    ahead = await spawnSvcApi({
      env: { ...shared, LD_PRELOAD: LIBFAKETIME, FAKETIME: '+2m', FAKETIME_DONT_FAKE_MONOTONIC: '1', FAKETIME_DONT_RESET: '1' },
      args,
    });
    reader = syncPostgres(url);
    db = reader.db;
  });
  afterAll(async () => {
    await stopServingNodes();
    await Promise.all([right?.stop(), ahead?.stop()]);
    await reader?.close();
    removeTempDirs();
  });

  const runRow = (runId: string) =>
    db.prepare('SELECT status, node_id, lease_expires_at FROM runs WHERE run_id = ?').get(runId) as {
      status: string;
      node_id: string | null;
      lease_expires_at: number | null;
    };

  it('takes executes for a node polling the other instance, and never sweeps a run whose node renews it', async () => {
    const email = uniqueEmail('skew');
    const token = await signIn(right.baseUrl, email);
    await fundWallet(right.baseUrl, email, 100);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const taken: AssignedRun[] = [];
    const answer = async (run: AssignedRun): Promise<Answer> => {
      taken.push(run);
      await released;
      return { status: 'succeeded', output: { run_id: run.run_id } };
    };
    // The node polls the instance whose clock is right, and renews its lease there at every poll.
    await serve(right.baseUrl, await enrollNode(right.baseUrl, email), { agents: [AGENT], answer, waitSeconds: 1 });

    // The instance ahead counts that node online: the run is queued for it, not refused no_node_available.
    const started = await httpRequest(`${ahead.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token,
      headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
      body: { user_id: email, agent_id: AGENT },
    });
    expect(started.status, started.text).toBe(202);
    const runId = started.body.run_id as string;
    await waitFor(async () => (taken.some((run) => run.run_id === runId) ? true : undefined), 'the node to take the run');
    const firstLeaseEnd = runRow(runId).lease_expires_at!;

    // Both instances sweep every second; the run outlives its first lease by two more, renewed by the node's polls.
    await waitFor(
      async () => {
        const row = runRow(runId);
        if (row.status !== 'running') return row;
        return Date.now() > firstLeaseEnd + 2 * LEASE_SECONDS * 1000 ? row : undefined;
      },
      'the run to outlive its first lease by two more',
      30_000,
    );
    expect(runRow(runId).status).toBe('running');

    release();
    await waitFor(async () => (runRow(runId).status === 'succeeded' ? true : undefined), 'the run to succeed', 15_000);
    const entries = db.prepare('SELECT kind FROM ledger_entries WHERE run_id = ? ORDER BY entry_id').all(runId) as { kind: string }[];
    expect(entries.map((entry) => entry.kind)).toEqual(['debit']);
    const shown = await httpRequest(`${ahead.baseUrl}/v1/swarm/runs/${runId}`, { token });
    expect(shown.body).toMatchObject({ status: 'succeeded', attempt: 1 });
  });
});
