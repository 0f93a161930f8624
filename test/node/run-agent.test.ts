// The run journal's settlement against the real svc-api and a real SQLite file: which pending rows are replayed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { systemClock } from '../../src/lib/clock.js';
import type { StoredJwt } from '../../src/node/credentials.js';
import { runAgent, settlePendingRuns, type RunDeps } from '../../src/node/run-agent.js';
import { succeededOrThrow } from '../../src/node/run-errors.js';
import { ServiceClient } from '../../src/node/service-client.js';
import { decodeClaims } from '../../src/node/token.js';
import { openNodeStore } from '../../src/node/store/database.js';
import { journalRunStarted } from '../../src/node/store/journal.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_svc_skills_005';
const PRICE = 5;

describe('settlePendingRuns', () => {
  const service = useSvcApi();
  let client: ServiceClient;
  beforeAll(() => {
    client = new ServiceClient({ baseUrl: service.baseUrl });
  });
  afterAll(async () => {
    await client.close();
  });

  async function signedIn(fundCents: number): Promise<StoredJwt> {
    const email = uniqueEmail('journal');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, fundCents);
    const claims = decodeClaims(token);
    return { token, sub: claims.sub, tier: claims.tier, exp: claims.exp, stored_at: new Date().toISOString() };
  }

  function balance(jwt: StoredJwt): Promise<number> {
    return apiClient(service.baseUrl).get('/v1/swarm/wallet', jwt.token).then((r) => r.body.balance_cents as number);
  }

  it("replays a row without owner or user (written before those columns) with the signed-in user's key; leaves another user's row alone", async () => {
    const jwt = await signedIn(100);
    const db = openNodeStore(join(tempDir(), 'node.db'));
    const deps: RunDeps = { db, client, clock: systemClock, jwt, source: 'cli', pid: process.pid };
    const legacy = randomUUID();
    const others = randomUUID();
    journalRunStarted(db, { idempotency_key: legacy, agent_id: AGENT, source: 'cli', price_cents: PRICE }, Date.now());
    journalRunStarted(db, { idempotency_key: others, agent_id: AGENT, source: 'cli', price_cents: PRICE, user_id: 'someone-else@example.com' }, Date.now());
    expect(await settlePendingRuns(deps)).toEqual({ settled: 1, expired: 0, left: 1 });
    const rows = new Map((db.prepare('SELECT idempotency_key, status, charged_cents FROM runs').all() as { idempotency_key: string; status: string; charged_cents: number }[]).map((r) => [r.idempotency_key, r]));
    expect(rows.get(legacy)).toMatchObject({ status: 'succeeded', charged_cents: PRICE });
    expect(rows.get(others)).toMatchObject({ status: 'pending', charged_cents: 0 });
    expect(await balance(jwt)).toBe(100 - PRICE);
    // Settling again changes nothing and charges nothing.
    expect(await settlePendingRuns(deps)).toEqual({ settled: 0, expired: 0, left: 1 });
    expect(await balance(jwt)).toBe(100 - PRICE);
    db.close();
  });

  it('stops at the first unreachable answer and leaves every row pending; runAgent then keeps its own row pending too', async () => {
    const jwt = await signedIn(100);
    const db = openNodeStore(join(tempDir(), 'node.db'));
    const offline = new ServiceClient({ baseUrl: 'http://127.0.0.1:9', deadlineMs: 2000 });
    const deps: RunDeps = { db, client: offline, clock: systemClock, jwt, source: 'daemon', pid: process.pid };
    for (let i = 0; i < 3; i += 1) journalRunStarted(db, { idempotency_key: randomUUID(), agent_id: AGENT, source: 'daemon', price_cents: PRICE, user_id: jwt.sub }, Date.now());
    expect(await settlePendingRuns(deps)).toEqual({ settled: 0, expired: 0, left: 1 });
    const failure = await runAgent(deps, AGENT).then(succeededOrThrow).catch((e: unknown) => e as { code: string; extensions: Record<string, unknown> });
    expect(failure).toMatchObject({ code: 'service_unreachable', extensions: { run_status: 'pending' } });
    expect((db.prepare("SELECT COUNT(*) AS n FROM runs WHERE status = 'pending'").get() as { n: number }).n).toBe(4);
    await offline.close();

    // Back online: all four are settled, each charged once.
    expect(await settlePendingRuns({ ...deps, client })).toEqual({ settled: 4, expired: 0, left: 0 });
    expect(await balance(jwt)).toBe(100 - 4 * PRICE);
    db.close();
  });
});
