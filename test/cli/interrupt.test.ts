// Ctrl+C while a command waits under a spinner exits 130 through the CLI's cleanup, not by the signal.
import { describe, expect, it } from 'vitest';
import { apiClient } from '../helpers/http.js';
import { createPayment, payAndConfirm } from '../helpers/funnel.js';
import { loginByMail } from './fixtures.js';
import { KEY, spawnSwarmNodePty } from '../helpers/pty.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';

describe('Ctrl+C during a spinner', () => {
  const service = useSvcApi();

  it('activate waiting for an unconfirmed payment exits 130, and the payment stays usable', async () => {
    const email = uniqueEmail('interrupt');
    const home = { SWARM_NODE_HOME: tempDir('interrupt-home-'), SVC_BASE_URL: service.baseUrl };
    await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', email);
    expect((await loginByMail({ ...home, NO_COLOR: '1' }, email)).exitCode).toBe(0);
    const paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const session = spawnSwarmNodePty(
      ['activate', '--tier', 'svc_starter_agents', '--email', email, '--payment', paymentId, '--wait', '60'],
      home,
    );
    await session.waitFor(/not confirmed|waiting|Activating/i, 15_000);
    session.press(KEY.ctrlC);
    const exit = await session.waitForExit(10_000);
    expect(exit.exitCode).toBe(130);
    expect(exit.signal || undefined, 'ended by the signal instead of by the CLI').toBeUndefined();
    // Nothing was consumed: the payment is still pending at the provider, free to activate later.
    const payment = await apiClient(service.baseUrl).get(`/sandbox/payments/${paymentId}`);
    expect(payment.body.status).toBe('PENDING');
  });
});
