// The paid funnel through the sandbox provider, over real HTTP, for tests that need a paid user.
import { expect } from 'vitest';
import { apiClient } from './http.js';

export const MERCHANT_ID = 'merchant_local';

export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Checkout at the sandbox provider; returns the payment id, still PENDING. */
export async function createPayment(baseUrl: string, offer_id: string, customer_email: string, amount_cents?: number): Promise<string> {
  const response = await apiClient(baseUrl).post('/sandbox/payments', {
    offer_id,
    customer_email,
    ...(amount_cents === undefined ? {} : { amount_cents }),
  });
  expect(response.status, response.text).toBe(201);
  return response.body.payment_id as string;
}

/** Confirms at the provider and waits until its signed webhook has reached the service. */
export async function confirmPayment(baseUrl: string, paymentId: string): Promise<void> {
  const api = apiClient(baseUrl);
  const confirmed = await api.post(`/sandbox/payments/${paymentId}/confirm`);
  expect(confirmed.status, confirmed.text).toBeLessThan(300);
  await waitFor(async () => {
    const payment = await api.get(`/sandbox/payments/${paymentId}`);
    return payment.body.webhook_delivered === true ? true : undefined;
  }, `the webhook of ${paymentId}`);
}

export async function payAndConfirm(baseUrl: string, offer_id: string, customer_email: string, amount_cents?: number): Promise<string> {
  const paymentId = await createPayment(baseUrl, offer_id, customer_email, amount_cents);
  await confirmPayment(baseUrl, paymentId);
  return paymentId;
}

/** A confirmed payment for the offer, then issue-token with its payment id (the proof of payment): the user's JWT. */
export async function signIn(baseUrl: string, email: string, offer_id = 'svc_starter_agents'): Promise<string> {
  const payment_id = await payAndConfirm(baseUrl, offer_id, email);
  const response = await apiClient(baseUrl).post('/v1/auth/issue-token', {
    status: 'CONFIRMED',
    offer_id,
    customer_email: email,
    merchant_id: MERCHANT_ID,
    payment_id,
  });
  expect(response.status, response.text).toBe(201);
  return response.body.jwtToken as string;
}

export async function fundWallet(baseUrl: string, email: string, amount_cents: number): Promise<void> {
  await payAndConfirm(baseUrl, 'svc_pay_wallet_fund', email, amount_cents);
}

/** Session, payment, activation: the deploy token of a purchase (starter agents unless told). */
export async function activatedSession(
  baseUrl: string,
  email: string,
  tier_id = 'svc_starter_agents',
): Promise<{ session_id: string; deploy_token: string; payment_id: string }> {
  const api = apiClient(baseUrl);
  const session = await api.post('/v1/swarm/paygate/session', { tier_id, user_id: email });
  expect(session.status, session.text).toBe(201);
  const payment_id = await payAndConfirm(baseUrl, tier_id, email);
  const activation = await api.post('/v1/swarm/paygate/activate', { session_id: session.body.session_id, payment_id });
  expect(activation.status, activation.text).toBe(200);
  return { session_id: session.body.session_id, deploy_token: activation.body.deploy_token, payment_id };
}
