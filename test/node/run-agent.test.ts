// The run journal's settlement against the real svc-api and a real SQLite file: each pending row is settled by asking
// the service for its key's run (docs/api.md "Settling a pending run"), never by sending it again.
import { CONTRACT_INPUTS } from '../helpers/bundles.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { systemClock } from '../../src/lib/clock.js';
import { nodePaths } from '../../src/node/host/location.js';
import { runAgent, settlePendingRuns, type RunDeps } from '../../src/node/runs/run-agent.js';
import { succeededOrThrow } from '../../src/node/runs/run-errors.js';
import { ServiceClient } from '../../src/node/service/service-client.js';
import { openNodeStore } from '../../src/node/store/database.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import { nodeCaller, type NodeCaller } from '../../src/node/work/caller.js';
import { journalRunStarted } from '../../src/node/store/journal.js';
import { executionStarted, findExecution } from '../../src/node/store/executions.js';
import { TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { deadPid } from '../cli/fixtures.js';
import { fundWallet, waitFor } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';
const PRICE = 4;

describe('settlePendingRuns', () => {
  const service = useSvcApi();
  let client: ServiceClient;
  beforeAll(() => {
    client = new ServiceClient({ baseUrl: service.baseUrl });
  });
  afterAll(async () => {
    await client.close();
  });

  /** A funded user's enrolled node, its home and database fresh, running agents as this test's user. */
  async function enrolledNode(
    fundCents: number,
    first: ServiceClient = client,
  ): Promise<{ caller: NodeCaller; db: SqliteDatabase; callerOn: (client: ServiceClient) => NodeCaller }> {
    const email = uniqueEmail('journal');
    const node = await enrollNode(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, fundCents);
    const home = tempDir();
    const db = openNodeStore(join(home, 'var', 'swarm-node.db'));
    const enrollment = {
      node_id: node.node_id,
      user_id: email,
      tier_id: 'svc_starter_agents',
      enrolled_at: new Date().toISOString(),
      credential: node.credential,
    };
    const callerOn = (on: ServiceClient): NodeCaller =>
      nodeCaller({
        node: enrollment,
        client: on,
        db,
        clock: systemClock,
        pid: process.pid,
        version: 'test',
        paths: nodePaths(home),
        isolation: 'none',
        agentSocket: join(home, 'agent.sock'),
      });
    return { caller: callerOn(first), db, callerOn };
  }

  function balance(caller: NodeCaller): Promise<number> {
    return apiClient(service.baseUrl)
      .get('/v1/swarm/wallet', caller.bearer)
      .then((r) => r.body.balance_cents as number);
  }

  it("settles a row without owner or user (written before those columns) by asking with the signed-in user's credential; leaves another user's row alone", async () => {
    const { caller, db } = await enrolledNode(100);
    const deps: RunDeps = { db, client, clock: systemClock, caller, source: 'cli', pid: process.pid };
    const legacy = randomUUID();
    const others = randomUUID();
    journalRunStarted(db, { idempotency_key: legacy, agent_id: AGENT, source: 'cli', price_cents: PRICE }, Date.now());
    journalRunStarted(
      db,
      { idempotency_key: others, agent_id: AGENT, source: 'cli', price_cents: PRICE, user_id: 'someone-else@example.com' },
      Date.now(),
    );
    expect(await settlePendingRuns(deps)).toEqual({ reported: 0, lost: 0, settled: 1, expired: 0, left: 1 });
    const rows = new Map(
      (
        db.prepare('SELECT idempotency_key, status, charged_cents, error_code FROM runs').all() as {
          idempotency_key: string;
          status: string;
          charged_cents: number;
        }[]
      ).map((r) => [r.idempotency_key, r]),
    );
    // The service never had it: settled as never run, not run now.
    expect(rows.get(legacy), JSON.stringify(db.prepare('SELECT * FROM runs').all())).toMatchObject({
      status: 'failed',
      charged_cents: 0,
      error_code: 'never_ran',
    });
    expect(rows.get(others)).toMatchObject({ status: 'pending', charged_cents: 0 });
    expect(await balance(caller)).toBe(100);
    // Settling again changes nothing and charges nothing.
    expect(await settlePendingRuns(deps)).toEqual({ reported: 0, lost: 0, settled: 0, expired: 0, left: 1 });
    expect(await balance(caller)).toBe(100);
    db.close();
  });

  it('stops at the first unreachable answer and leaves every row pending; a run refused a connection was never sent, and never runs later', async () => {
    const offline = new ServiceClient({ baseUrl: 'http://127.0.0.1:9', deadlineMs: 2000 });
    const { caller, db, callerOn } = await enrolledNode(100, offline);
    const deps: RunDeps = { db, client: offline, clock: systemClock, caller, source: 'daemon', pid: process.pid };
    for (let i = 0; i < 3; i += 1)
      journalRunStarted(
        db,
        { idempotency_key: randomUUID(), agent_id: AGENT, source: 'daemon', price_cents: PRICE, user_id: caller.user_id },
        Date.now(),
      );
    expect(await settlePendingRuns(deps)).toEqual({ reported: 0, lost: 0, settled: 0, expired: 0, left: 1 });
    const failure = await runAgent(deps, AGENT)
      .then(succeededOrThrow)
      .catch((e: unknown) => e as { code: string; extensions: Record<string, unknown> });
    expect(failure).toMatchObject({ code: 'service_unreachable', extensions: { run_status: 'not_sent' } });
    expect((db.prepare("SELECT COUNT(*) AS n FROM runs WHERE status = 'pending'").get() as { n: number }).n).toBe(3);
    expect((db.prepare("SELECT COUNT(*) AS n FROM runs WHERE error_code = 'not_sent'").get() as { n: number }).n).toBe(1);
    await offline.close();

    // Back online: the three are settled by asking; the service never had them, so none runs and none is charged.
    expect(await settlePendingRuns({ ...deps, client, caller: callerOn(client) })).toEqual({
      reported: 0,
      lost: 0,
      settled: 3,
      expired: 0,
      left: 0,
    });
    expect(await balance(caller)).toBe(100);
    expect((db.prepare("SELECT COUNT(*) AS n FROM runs WHERE error_code = 'never_ran'").get() as { n: number }).n).toBe(3);
    const executions = db.prepare('SELECT COUNT(*) AS n FROM executions').get() as { n: number };
    expect(executions.n).toBe(0);
    db.close();
  });
});

const NOT_RETRIED = 'agent_sales_outreach_008';

describe('settlePendingRuns after the node was killed mid-run', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });

  it('a run whose lease ran out while the node was down is counted lost, not reported: refused, refunded, never run', async () => {
    const client = new ServiceClient({ baseUrl: service.baseUrl });
    const email = uniqueEmail('lost');
    const node = await enrollNode(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const home = tempDir();
    const db = openNodeStore(join(home, 'var', 'swarm-node.db'));
    const enrollment = {
      node_id: node.node_id,
      user_id: email,
      tier_id: 'svc_starter_agents',
      enrolled_at: new Date().toISOString(),
      credential: node.credential,
    };
    const caller = nodeCaller({
      node: enrollment,
      client,
      db,
      clock: systemClock,
      pid: process.pid,
      version: 'test',
      paths: nodePaths(home),
      isolation: 'none',
    });

    // The node's own run, leased to it and journaled as started by a process that then died (SIGKILL mid-run). Of an
    // agent that is not safe to run again (the outreach agent), so the lost lease ends it rather than queueing it again.
    const started = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token: node.credential,
      headers: { 'idempotency-key': randomUUID() },
      body: { user_id: email, agent_id: NOT_RETRIED, input: CONTRACT_INPUTS[NOT_RETRIED] },
    });
    expect(started.status, started.text).toBe(202);
    const runId = started.body.run_id as string;
    executionStarted(
      db,
      { run_id: runId, agent_id: NOT_RETRIED, user_id: email, lease_id: started.body.lease.lease_id, owner_pid: await deadPid() },
      Date.now(),
    );
    const row = service.db.prepare<[string], { status: string; output_json: string }>(
      'SELECT status, output_json FROM runs WHERE run_id = ?',
    );
    await waitFor(async () => (row.get(runId)?.status === 'failed' ? true : undefined), 'the run failed by the lease sweep');
    expect(JSON.parse(row.get(runId)!.output_json)).toMatchObject({ error: 'node_lost' });

    const deps: RunDeps = { db, client, clock: systemClock, caller, source: 'daemon', pid: process.pid };
    expect(await settlePendingRuns(deps)).toEqual({ reported: 0, lost: 1, settled: 0, expired: 0, left: 0 });
    expect(findExecution(db, runId)).toMatchObject({ status: 'lost' });
    expect(row.get(runId)!.status).toBe('failed');
    expect(
      await apiClient(service.baseUrl)
        .get('/v1/swarm/wallet', caller.bearer)
        .then((r) => r.body.balance_cents as number),
    ).toBe(100);
    // Nothing left to do: a second settlement reports nothing.
    expect(await settlePendingRuns(deps)).toEqual({ reported: 0, lost: 0, settled: 0, expired: 0, left: 0 });
    db.close();
    await client.close();
  });
});
