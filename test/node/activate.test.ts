// activateNode against the real svc-api with a clock that the test moves: the waits are exact and instant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SvcError } from '../../src/contract/errors.js';
import { activateNode } from '../../src/node/identity/activate.js';
import { ServiceClient } from '../../src/node/service/service-client.js';
import { MovableClock } from '../helpers/clock.js';
import { confirmPayment, createPayment, signIn } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

describe('activateNode', () => {
  const service = useSvcApi();
  let client: ServiceClient;
  beforeAll(() => {
    client = new ServiceClient({ baseUrl: service.baseUrl });
  });
  afterAll(async () => {
    await client.close();
  });

  it("waits at least the service's Retry-After while the payment is not confirmed, then activates", async () => {
    const email = uniqueEmail('wait');
    // Signed in already (a wallet top-up of theirs is confirmed), the user buys a node and activates at once.
    const token = await signIn(service.baseUrl, email, 'svc_pay_wallet_fund');
    const payment = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const clock = new MovableClock();
    const waits: number[] = [];
    const activation = await activateNode(
      {
        client,
        token,
        clock,
        sleep: async (ms) => {
          waits.push(ms);
          clock.advance(ms);
          if (waits.length === 2) await confirmPayment(service.baseUrl, payment);
        },
      },
      { tierId: 'svc_starter_agents', email, paymentId: payment, waitSeconds: 120 },
    );
    expect(activation).toMatchObject({ status: 'active', install_path: '/opt/svc/swarm-node', deploy_mode: 'bare_metal', attempts: 3 });
    // svc-api answers 409 with Retry-After: 5; the client's own backoff (1 s, 2 s, jittered) is shorter, so 5 s wins.
    expect(waits).toEqual([5000, 5000]);
  });

  it('gives up at the deadline with payment_not_confirmed, the session to resume and the spec remedy; --wait 0 tries once', async () => {
    const email = uniqueEmail('deadline');
    const token = await signIn(service.baseUrl, email, 'svc_pay_wallet_fund');
    const payment = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const clock = new MovableClock();
    const waits: number[] = [];
    const sleep = async (ms: number): Promise<void> => {
      waits.push(ms);
      clock.advance(ms);
    };
    const failure = await activateNode(
      { client, token, clock, sleep },
      { tierId: 'svc_starter_agents', email, paymentId: payment, waitSeconds: 12 },
    ).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(SvcError);
    const error = failure as SvcError;
    expect(error.code).toBe('payment_not_confirmed');
    // The last wait is cut to the deadline, and one last try lands on it.
    expect(waits.slice(0, 2)).toEqual([5000, 5000]);
    expect(waits).toHaveLength(3);
    expect(waits[2]).toBeGreaterThan(1500);
    expect(waits[2]).toBeLessThanOrEqual(2000);
    expect(error.extensions).toMatchObject({ payment_id: payment, session_id: expect.any(String) });
    expect(error.remedy).toMatch(/^Wait for the payment provider to confirm the payment, then retry activation/);

    waits.length = 0;
    const once = await activateNode(
      { client, token, clock, sleep },
      { sessionId: error.extensions.session_id as string, paymentId: payment, waitSeconds: 0 },
    ).catch((e: unknown) => e);
    expect((once as SvcError).code).toBe('payment_not_confirmed');
    expect(waits).toEqual([]);
  });

  it('does not wait on other errors: an unknown session is session_not_found at once', async () => {
    const waits: number[] = [];
    const token = await signIn(service.baseUrl, uniqueEmail('unknown'), 'svc_pay_wallet_fund');
    const failure = await activateNode(
      { client, token, clock: new MovableClock(), sleep: async (ms) => void waits.push(ms) },
      { sessionId: '00000000-0000-4000-8000-000000000000', paymentId: 'pay_x', waitSeconds: 60 },
    ).catch((e: unknown) => e);
    expect((failure as SvcError).code).toBe('session_not_found');
    expect(waits).toEqual([]);
  });
});
