import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { AgentRunInput, AgentRuntime } from '../../src/api/context.js';
import type { RunningService } from '../../src/api/server.js';
import { MovableClock } from '../helpers/clock.js';
import { spawnSvcApi, startSvcApi } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/funnel.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { credit, entriesOf, execute, ledgerSnapshot, paidUser, runsOf } from './execute-fixtures.js';

const HOUR_MS = 60 * 60 * 1000;

/** A runtime whose runs finish when the test says so: the window in which a key is in progress. */
class GatedRuntime implements AgentRuntime {
  readonly started: AgentRunInput[] = [];
  readonly #waiting: Array<() => void> = [];
  run(input: AgentRunInput): Promise<unknown> {
    this.started.push(input);
    return new Promise((resolve) => this.#waiting.push(() => resolve({ gated: true, run_id: input.run_id })));
  }
  releaseAll(): void {
    for (const release of this.#waiting.splice(0)) release();
  }
}

describe('Idempotency-Key on execute', () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startSvcApi();
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it('replays the first response byte for byte and charges once', async () => {
    const user = await paidUser(service, 50);
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_sales_outreach_008' };
    const first = await execute(service, user.token, body, key);
    expect(first.status).toBe(200);
    const before = ledgerSnapshot(service);
    const again = await execute(service, user.token, body, key);
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    // The same request in another letter case is the same request.
    const upper = await execute(service, user.token, { ...body, user_id: user.email.toUpperCase() }, key);
    expect(upper.text).toBe(first.text);
    expect(ledgerSnapshot(service)).toEqual(before);
    expect(service.ctx.ledger.balance(user.email)).toBe(42);
    expect(runsOf(service, user.email)).toHaveLength(1);
  });

  it('refuses the same key with a different body with 422 and changes nothing', async () => {
    const user = await paidUser(service, 50);
    const key = randomUUID();
    const first = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_sales_outreach_008' }, key);
    expect(first.status).toBe(200);
    const before = ledgerSnapshot(service);
    const reused = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
    expect(reused.status).toBe(422);
    expect(reused.body).toMatchObject({ code: 'idempotency_key_reuse', status: 422 });
    expect(ledgerSnapshot(service)).toEqual(before);
  });

  it('charges once when the same key arrives 20 times at once', async () => {
    const user = await paidUser(service, 100);
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_dev_review_012' };
    const responses = await Promise.all(Array.from({ length: 20 }, () => execute(service, user.token, body, key)));
    const ok = responses.filter((response) => response.status === 200);
    const busy = responses.filter((response) => response.status === 409);
    expect(ok.length + busy.length).toBe(20);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((response) => response.body.run_id)).size).toBe(1);
    for (const response of busy) {
      expect(response.body).toMatchObject({ code: 'request_in_progress' });
      expect(response.headers.get('retry-after')).toBe('1');
    }
    expect(service.ctx.ledger.balance(user.email)).toBe(88);
    expect(runsOf(service, user.email)).toHaveLength(1);
    expect(entriesOf(service, user.email).filter((entry) => entry.kind === 'debit')).toHaveLength(1);
  });

  it('keys belong to a user: two users may send the same key', async () => {
    const alice = await paidUser(service, 20);
    const bob = await paidUser(service, 20);
    const key = randomUUID();
    const a = await execute(service, alice.token, { user_id: alice.email, agent_id: 'agent_ops_monitor_004' }, key);
    const b = await execute(service, bob.token, { user_id: bob.email, agent_id: 'agent_ops_monitor_004' }, key);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.run_id).not.toBe(b.body.run_id);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
  });

  it('does not keep a key refused for want of money: after funding, the same key runs', async () => {
    const user = await paidUser(service, 5);
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_dev_review_012' };
    const refused = await execute(service, user.token, body, key);
    expect(refused.status).toBe(402);
    credit(service, user.email, 10);
    const retried = await execute(service, user.token, body, key);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body).toMatchObject({ status: 'succeeded', charged_cents: 12, balance_cents: 3 });
    const replay = await execute(service, user.token, body, key);
    expect(replay.text).toBe(retried.text);
  });

  it('does not keep a key of a request refused as invalid', async () => {
    const user = await paidUser(service, 20);
    const key = randomUUID();
    const unknown = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_unknown' }, key);
    expect(unknown.status).toBe(404);
    const valid = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
    expect(valid.status).toBe(200);
  });
});

describe('Idempotency-Key while the first request runs', () => {
  const runtime = new GatedRuntime();
  let service: RunningService;
  beforeAll(async () => {
    service = await startSvcApi({ runtime });
  });
  afterEach(() => runtime.releaseAll());
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it('answers 409 with Retry-After, then replays once the first finished', async () => {
    const user = await paidUser(service, 20);
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_ops_monitor_004' };
    const first = execute(service, user.token, body, key);
    await waitFor(async () => (runtime.started.some((input) => input.user_id === user.email) ? true : undefined), 'the run to start');
    expect(runsOf(service, user.email)).toMatchObject([{ status: 'running', charged_cents: 4 }]);
    expect(service.ctx.ledger.balance(user.email)).toBe(16);

    const busy = await execute(service, user.token, body, key);
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ code: 'request_in_progress' });
    expect(busy.headers.get('retry-after')).toBe('1');
    const reused = await execute(service, user.token, { ...body, agent_id: 'agent_svc_skills_005' }, key);
    expect(reused.status).toBe(422);

    runtime.releaseAll();
    const done = await first;
    expect(done.status).toBe(200);
    expect(done.body.output).toEqual({ gated: true, run_id: done.body.run_id });
    const replay = await execute(service, user.token, body, key);
    expect(replay.text).toBe(done.text);
    expect(service.ctx.ledger.balance(user.email)).toBe(16);
  });
});

describe('Idempotency-Key lifetime', () => {
  it('forgets a key after 24 hours: the same key then runs again, even with another body', async () => {
    const clock = new MovableClock();
    const service = await startSvcApi({ clock });
    try {
      const user = await paidUser(service, 50);
      const key = randomUUID();
      const first = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
      expect(first.status).toBe(200);
      clock.advance(23 * HOUR_MS);
      const replay = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
      expect(replay.text).toBe(first.text);
      clock.advance(HOUR_MS);
      const fresh = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_svc_skills_005' }, key);
      expect(fresh.status).toBe(200);
      expect(fresh.headers.get('idempotent-replayed')).toBeNull();
      expect(fresh.body.run_id).not.toBe(first.body.run_id);
      expect(service.ctx.ledger.balance(user.email)).toBe(50 - 4 - 5);
      expect(service.db.prepare('SELECT COUNT(*) AS n FROM idempotency_keys').get()).toEqual({ n: 1 });
    } finally {
      await service.close();
      removeTempDirs();
    }
  });
});

describe('a crash between debit and finish', () => {
  it('keeps the key: the restart fails and refunds the run, and a retry with the key replays that', async () => {
    const dataDir = tempDir('svc-api-crash-');
    const scripts = tempDir('agent-');
    const pidFile = join(scripts, 'agent.pid');
    const hangingAgent = join(scripts, 'hang.mjs');
    writeFileSync(hangingAgent, `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(pidFile)}, String(process.pid));\nsetTimeout(() => {}, 20000);\n`);

    // Fund the user in the data dir first, then hand that data dir to the real binary.
    const setup = await startSvcApi({ dataDir });
    const user = await paidUser(setup, 30);
    await setup.close();

    const api = await spawnSvcApi({ dataDir, args: ['--agent-command', process.execPath, '--agent-command', hangingAgent] });
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_research_rag_015' };
    const lost = fetch(`${api.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'idempotency-key': key },
      body: JSON.stringify(body),
    }).catch((error: unknown) => error);
    const agentPid = await waitFor(async () => {
      try {
        return Number(readFileSync(pidFile, 'utf8'));
      } catch {
        return undefined;
      }
    }, 'the agent to start');
    const observer = new Database(join(dataDir, 'svc-api.db'), { readonly: true });
    try {
      expect(observer.prepare('SELECT status, charged_cents FROM runs').all()).toEqual([{ status: 'running', charged_cents: 15 }]);
      expect(observer.prepare('SELECT balance_cents FROM wallets').get()).toEqual({ balance_cents: 15 });
    } finally {
      observer.close();
    }
    api.process.kill('SIGKILL');
    await api.process;
    expect(await lost).toBeInstanceOf(Error);
    process.kill(agentPid, 'SIGKILL');

    const restarted = await startSvcApi({ dataDir });
    try {
      const [run] = runsOf(restarted, user.email);
      expect(run).toMatchObject({ status: 'failed', charged_cents: 0 });
      expect(restarted.ctx.ledger.balance(user.email)).toBe(30);
      expect(entriesOf(restarted, user.email).map((entry) => [entry.kind, entry.amount_cents])).toEqual([
        ['credit', 30],
        ['debit', 15],
        ['refund', 15],
      ]);
      const retry = await execute(restarted, user.token, body, key);
      expect(retry.status).toBe(200);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body).toMatchObject({
        run_id: run!.run_id,
        status: 'failed',
        charged_cents: 0,
        balance_cents: 30,
        output: { error: 'interrupted' },
      });
      const fresh = await execute(restarted, user.token, body, randomUUID());
      expect(fresh.body).toMatchObject({ status: 'succeeded', charged_cents: 15, balance_cents: 15 });
    } finally {
      await restarted.close();
      removeTempDirs();
    }
  });
});
