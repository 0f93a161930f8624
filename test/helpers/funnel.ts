// The paid funnel through the sandbox provider, over real HTTP, for tests that need a paid user: checkout,
// confirmation, and the sign-in by the code mailed to the address (read from the run's SMTP server: mailbox.ts).
import { expect } from 'vitest';
import { apiClient } from './http.js';
import { nextMailTo, signInCodeOf } from './mailbox.js';
import { waitFor } from './wait.js';

export { waitFor };

export const MERCHANT_ID = 'merchant_local';

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

/** A sign-in code mailed to `email` (POST /v1/auth/email-code), as its inbox received it: the mail of this challenge. */
export async function mailedCode(baseUrl: string, email: string): Promise<{ challenge_id: string; code: string }> {
  const response = await apiClient(baseUrl).post('/v1/auth/email-code', { email });
  expect(response.status, response.text).toBe(202);
  const challengeId = response.body.challenge_id as string;
  const mail = await nextMailTo(email, { match: (each) => each.text.includes(`reference ${challengeId.slice(0, 8)}`) });
  return { challenge_id: challengeId, code: signInCodeOf(mail) };
}

/** issue-token with a code mailed to `email` just now: the user's JWT, for an offer the address paid for. */
export async function signInPaid(baseUrl: string, email: string, offer_id = 'svc_starter_agents'): Promise<string> {
  const { challenge_id, code } = await mailedCode(baseUrl, email);
  const response = await apiClient(baseUrl).post('/v1/auth/issue-token', {
    status: 'CONFIRMED',
    offer_id,
    customer_email: email,
    merchant_id: MERCHANT_ID,
    challenge_id,
    code,
  });
  expect(response.status, response.text).toBe(201);
  return response.body.jwtToken as string;
}

/** A confirmed payment for the offer, then the sign-in by mail: the user's JWT. */
export async function signIn(baseUrl: string, email: string, offer_id = 'svc_starter_agents'): Promise<string> {
  await payAndConfirm(baseUrl, offer_id, email);
  return signInPaid(baseUrl, email, offer_id);
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
  // Activation needs the session user's JWT from a recent sign-in (docs/api.md "activate"): one sign-in serves the
  // user's activations, as a person's does, and it signs in again when the service asks for a recent one.
  const activate = (token: string) =>
    api.post('/v1/swarm/paygate/activate', { session_id: session.body.session_id, payment_id }, { token });
  let activation = await activate(await recentToken(baseUrl, email, tier_id));
  if (activation.status === 401 && activation.body.code === 'step_up_required')
    activation = await activate(await recentToken(baseUrl, email, tier_id, true));
  expect(activation.status, activation.text).toBe(200);
  return { session_id: session.body.session_id, deploy_token: activation.body.deploy_token, payment_id };
}

const recentTokens = new Map<string, Promise<string>>();

/**
 * A JWT of `email` from a sign-in by mail, shared by the helper's calls for that user (`renew`: sign in again). One
 * sign-in a user, not one a call: the service bounds the codes mailed to an address an hour.
 */
export function recentToken(baseUrl: string, email: string, offer_id: string, renew = false): Promise<string> {
  const key = `${baseUrl} ${email.toLowerCase()}`;
  let token = renew ? undefined : recentTokens.get(key);
  if (token === undefined) {
    token = signInPaid(baseUrl, email, offer_id);
    recentTokens.set(key, token);
    token.catch(() => recentTokens.delete(key));
  }
  return token;
}
