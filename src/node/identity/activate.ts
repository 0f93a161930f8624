// `activate` (spec §3, §4): create the pay gate session, then activate it with the payment, as the signed-in user
// (docs/api.md "activate": the JWT of a recent sign-in, since it mints a deploy token). Until the provider
// reports the payment CONFIRMED the service answers 409 payment_not_confirmed; spec §7's remedy is to wait for
// the webhook and retry, so we do, with backoff and the service's Retry-After, up to a deadline.
import type { ActivateResponse } from '../../contract/schemas.js';
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { ServiceClient } from '../service/service-client.js';

export interface ActivateInput {
  /** Resume a session created earlier; otherwise one is created for tier and email. */
  sessionId?: string;
  tierId?: string;
  email?: string;
  paymentId: string;
  /** How long to keep retrying while the payment is not confirmed; 0 tries once. */
  waitSeconds: number;
}

export interface ActivateDeps {
  client: ServiceClient;
  /** The signed-in user's JWT (docs/api.md "activate"): a payment in someone's name activates nothing for its payer. */
  token: string;
  clock: Clock;
  sleep?: (ms: number) => Promise<void>;
  /** Called before each wait with the attempt number, the delay and the deadline (ms since the epoch), for the spinner. */
  onWait?: (attempt: number, delayMs: number, deadline: number) => void;
  /** Called once the session is known (created or resumed): what resumes the wait if it is cut short. */
  onSession?: (sessionId: string) => void;
}

export interface Activation extends ActivateResponse {
  attempts: number;
}

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 10_000;

export async function activateNode(deps: ActivateDeps, input: ActivateInput): Promise<Activation> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let sessionId = input.sessionId;
  if (sessionId === undefined) {
    if (input.tierId === undefined || input.email === undefined) throw new SvcError('usage', 'give --tier and --email, or --session');
    sessionId = (await deps.client.createSession(input.tierId, input.email)).session_id;
  }
  deps.onSession?.(sessionId);
  const deadline = deps.clock.now() + input.waitSeconds * 1000;
  for (let attempt = 1; ; attempt += 1) {
    try {
      const activation = await deps.client.activate(deps.token, sessionId, input.paymentId);
      return { ...activation, attempts: attempt };
    } catch (error) {
      if (!(error instanceof SvcError) || error.code !== 'payment_not_confirmed') throw error;
      const remaining = deadline - deps.clock.now();
      if (remaining <= 0) throw notConfirmedInTime(error, sessionId, input);
      const backoff = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (attempt - 1));
      const jittered = Math.round(backoff / 2 + Math.random() * (backoff / 2));
      // The service's Retry-After is a floor; the deadline is a ceiling (one last try lands on it).
      const delay = Math.min(remaining, Math.max(jittered, (error.retryAfterSeconds ?? 0) * 1000));
      deps.onWait?.(attempt, delay, deadline);
      await sleep(delay);
    }
  }
}

function notConfirmedInTime(error: SvcError, sessionId: string, input: ActivateInput): SvcError {
  const waited = input.waitSeconds === 0 ? '' : ` after waiting ${input.waitSeconds}s`;
  return new SvcError('payment_not_confirmed', `payment ${input.paymentId} is not confirmed yet${waited}`, {
    // spec §7: wait for the webhook and retry activation; the session stays, so the retry resumes it.
    remedy:
      'Wait for the payment provider to confirm the payment, then retry activation: ' +
      `swarm-node activate --session ${sessionId} --payment ${input.paymentId}`,
    extensions: { ...error.extensions, session_id: sessionId, payment_id: input.paymentId },
  });
}
