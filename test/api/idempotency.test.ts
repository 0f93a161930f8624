import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import type { TestService } from '../helpers/svc-api.js';
import { MovableClock } from '../helpers/clock.js';
import { openDatabaseOf, spawnSvcApi, startSvcApi } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { enrollNode, serve, type Answer } from '../helpers/protocol-node.js';
import { TEST_RUN_TIMING, credit, entriesOf, execute, ledgerSnapshot, paidUserWithNode, runsOf, stopNodes } from './execute-fixtures.js';

const HOUR_MS = 60 * 60 * 1000;

describe('Idempotency-Key on execute', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startSvcApi({ runTiming: TEST_RUN_TIMING });
  });
  afterAll(async () => {
    await stopNodes();
    await service.close();
    removeTempDirs();
  });

  it('replays the first response byte for byte and charges once', async () => {
    const user = await paidUserWithNode(service, 50);
    const key = randomUUID();
    const body = {
      user_id: user.email,
      agent_id: 'agent_sales_outreach_008',
      input: { leads: '/srv/leads.csv', template: 'Hello {{name}}' },
    };
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
    expect(await service.ctx.ledger.balance(user.email)).toBe(42);
    expect(runsOf(service, user.email)).toHaveLength(1);
  });

  it('refuses the same key with a different body with 422 and changes nothing', async () => {
    const user = await paidUserWithNode(service, 50);
    const key = randomUUID();
    const first = await execute(
      service,
      user.token,
      { user_id: user.email, agent_id: 'agent_sales_outreach_008', input: { leads: '/srv/leads.csv', template: 'Hello {{name}}' } },
      key,
    );
    expect(first.status).toBe(200);
    const before = ledgerSnapshot(service);
    const reused = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
    expect(reused.status).toBe(422);
    expect(reused.body).toMatchObject({ code: 'idempotency_key_reuse', status: 422 });
    expect(ledgerSnapshot(service)).toEqual(before);
  });

  it('charges once when the same key arrives 20 times at once: every one answers with the one run', async () => {
    const user = await paidUserWithNode(service, 100);
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_dev_review_012', input: { repo: '/srv/app' } };
    const responses = await Promise.all(Array.from({ length: 20 }, () => execute(service, user.token, body, key)));
    expect(responses.map((response) => response.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(new Set(responses.map((response) => response.text)).size).toBe(1);
    expect(responses.filter((response) => response.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await service.ctx.ledger.balance(user.email)).toBe(88);
    expect(runsOf(service, user.email)).toHaveLength(1);
    expect(entriesOf(service, user.email).filter((entry) => entry.kind === 'debit')).toHaveLength(1);
  });

  it('keys belong to a user: two users may send the same key', async () => {
    const alice = await paidUserWithNode(service, 20);
    const bob = await paidUserWithNode(service, 20);
    const key = randomUUID();
    const a = await execute(service, alice.token, { user_id: alice.email, agent_id: 'agent_ops_monitor_004' }, key);
    const b = await execute(service, bob.token, { user_id: bob.email, agent_id: 'agent_ops_monitor_004' }, key);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.run_id).not.toBe(b.body.run_id);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
  });

  it('does not keep a key refused for want of money: after funding, the same key runs', async () => {
    const user = await paidUserWithNode(service, 5);
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_dev_review_012', input: { repo: '/srv/app' } };
    const refused = await execute(service, user.token, body, key);
    expect(refused.status).toBe(402);
    await credit(service, user.email, 10);
    const retried = await execute(service, user.token, body, key);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body).toMatchObject({ status: 'succeeded', charged_cents: 12, balance_cents: 3 });
    const replay = await execute(service, user.token, body, key);
    expect(replay.text).toBe(retried.text);
  });

  it('does not keep a key of a request refused as invalid', async () => {
    const user = await paidUserWithNode(service, 20);
    const key = randomUUID();
    const unknown = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_unknown' }, key);
    expect(unknown.status).toBe(404);
    const valid = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
    expect(valid.status).toBe(200);
  });
});

describe('Idempotency-Key while the first request runs', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startSvcApi({ runTiming: TEST_RUN_TIMING });
  });
  afterAll(async () => {
    await stopNodes();
    await service.close();
    removeTempDirs();
  });

  it('answers with the run as it stands (202), never a second run, then replays the first final answer', async () => {
    const started: AssignedRun[] = [];
    let release!: (answer: Answer) => void;
    const user = await paidUserWithNode(service, 20, {
      answer: (run) => {
        started.push(run);
        return new Promise((resolve) => (release = resolve));
      },
    });
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_ops_monitor_004' };
    const first = execute(service, user.token, body, key);
    await waitFor(async () => (started.length > 0 ? true : undefined), 'the run to start on the node');
    expect(runsOf(service, user.email)).toMatchObject([{ status: 'running', charged_cents: 4 }]);
    expect(await service.ctx.ledger.balance(user.email)).toBe(16);

    const meanwhile = await execute(service, user.token, body, key, { prefer: 'respond-async' });
    expect(meanwhile.status).toBe(202);
    expect(meanwhile.body).toMatchObject({ run_id: started[0]!.run_id, status: 'running' });
    expect(meanwhile.headers.get('idempotent-replayed')).toBe('true');
    const reused = await execute(service, user.token, { ...body, agent_id: 'agent_svc_skills_005' }, key);
    expect(reused.status).toBe(422);

    release({ status: 'succeeded', output: { gated: true } });
    const done = await first;
    expect(done.status).toBe(200);
    expect(done.body.output).toEqual({ gated: true });
    const replay = await execute(service, user.token, body, key);
    expect(replay.text).toBe(done.text);
    expect(await service.ctx.ledger.balance(user.email)).toBe(16);
    expect(runsOf(service, user.email)).toHaveLength(1);
  });
});

describe('Idempotency-Key lifetime', () => {
  it('forgets a key after 24 hours: the same key then runs again, even with another body', async () => {
    const clock = new MovableClock();
    const service = await startSvcApi({ clock, runTiming: TEST_RUN_TIMING });
    const user = await paidUserWithNode(service, 50);
    try {
      const key = randomUUID();
      const first = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
      expect(first.status).toBe(200);
      clock.advance(23 * HOUR_MS);
      const replay = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, key);
      expect(replay.text).toBe(first.text);
      clock.advance(HOUR_MS);
      // A day on, the node is online again once it has polled.
      await waitFor(
        async () =>
          (await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token: user.token })).body.nodes[0]?.online ? true : undefined,
        'the node online',
      );
      const fresh = await execute(
        service,
        user.token,
        { user_id: user.email, agent_id: 'agent_svc_skills_005', input: { question: 'What is a node?' } },
        key,
      );
      expect(fresh.status).toBe(200);
      expect(fresh.headers.get('idempotent-replayed')).toBeNull();
      expect(fresh.body.run_id).not.toBe(first.body.run_id);
      expect(await service.ctx.ledger.balance(user.email)).toBe(50 - 4 - 5);
      expect(service.db.prepare('SELECT COUNT(*) AS n FROM idempotency_keys').get()).toEqual({ n: 1 });
    } finally {
      await user.node.stop();
      await service.close();
      removeTempDirs();
    }
  });
});

describe('a crash of the service while a node runs the run', () => {
  it('the run goes on: its result reaches the restarted service, charged once, and the key replays it', async () => {
    const dataDir = tempDir('svc-api-crash-');
    const port = await freePort();
    const args = ['--port', String(port), '--lease-seconds', '30'];
    const first = await spawnSvcApi({ dataDir, args });
    const user = await paidUserOver(first.baseUrl, dataDir);
    const started: AssignedRun[] = [];
    let release!: (answer: Answer) => void;
    const node = await serve(first.baseUrl, await enrollNode(first.baseUrl, user.email), {
      agents: ['agent_research_rag_015'],
      answer: (run) => {
        started.push(run);
        return new Promise((resolve) => (release = resolve));
      },
    });
    try {
      const key = randomUUID();
      const body = {
        user_id: user.email,
        agent_id: 'agent_research_rag_015',
        input: { corpus: '/srv/docs', question: 'Where are the backups?' },
      };
      const send = () =>
        fetch(`${first.baseUrl}/v1/swarm/execute`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'idempotency-key': key },
          body: JSON.stringify(body),
        });
      const lost = send().catch((error: unknown) => error);
      await waitFor(async () => (started.length > 0 ? true : undefined), 'the node to take the run');
      first.process.kill('SIGKILL');
      await first.process;
      expect(await lost).toBeInstanceOf(Error);

      const restarted = await spawnSvcApi({ dataDir, args });
      try {
        // The restart fails nothing a node still holds; the node's result comes in as if nothing happened.
        const observer = await openDatabaseOf(dataDir);
        expect(observer.db.prepare('SELECT status, charged_cents FROM runs').all()).toEqual([{ status: 'running', charged_cents: 15 }]);
        await observer.close();
        release({ status: 'succeeded', output: { answer: 'after the crash' } });
        const retry = await waitFor(async () => {
          const response = await send();
          return response.status === 200 ? response : undefined;
        }, 'the result through the restarted service');
        expect(retry.headers.get('idempotent-replayed')).toBe('true');
        expect(await retry.json()).toMatchObject({
          run_id: started[0]!.run_id,
          status: 'succeeded',
          charged_cents: 15,
          balance_cents: 15,
          output: { answer: 'after the crash' },
        });
        const check = await openDatabaseOf(dataDir);
        expect(
          check.db.prepare('SELECT kind, amount_cents FROM ledger_entries WHERE user_id = ? ORDER BY entry_id').all(user.email),
        ).toEqual([
          { kind: 'credit', amount_cents: 30 },
          { kind: 'debit', amount_cents: 15 },
        ]);
        await check.close();
      } finally {
        await node.stop();
        await restarted.stop();
      }
    } finally {
      removeTempDirs();
    }
  });
});

/** A port nothing listens on now, for a service that must come back at the same address. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A paid user of the service at `baseUrl` over HTTP: a JWT with a payment id, and a funded wallet. */
async function paidUserOver(baseUrl: string, _dataDir: string): Promise<{ email: string; token: string }> {
  const { signIn, fundWallet } = await import('../helpers/funnel.js');
  const { uniqueEmail } = await import('../helpers/temp.js');
  const email = uniqueEmail('crash');
  const token = await signIn(baseUrl, email);
  await fundWallet(baseUrl, email, 30);
  return { email, token };
}
