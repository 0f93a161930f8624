// The sandbox provider delivers its confirmation the way a real provider does: a signed POST over real HTTP to
// the service's webhook URL, retried with backoff until the service acknowledges it with a 2xx, or until the
// service shuts down. Every attempt sends the same event (same id) with a fresh signature timestamp.
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { linkedSignal } from '../../lib/linked-signal.js';
import { runInBackground, type ServiceContext } from '../context.js';
import type { SandboxBooks, SandboxPaymentRow } from './sandbox-books.js';
import { PAYMENT_CONFIRMED_EVENT } from './webhook-receiver.js';
import { WEBHOOK_SIGNATURE_HEADER, signWebhookBody } from './webhook-signature.js';

export const WEBHOOK_PATH = '/v1/payments/webhook';
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;
const ATTEMPT_TIMEOUT_MS = 10_000;

export interface WebhookDeliveries {
  /** Starts delivering the payment's webhook in the background unless it is delivered or already on its way. */
  start(paymentId: string): void;
}

export function createWebhookDeliveries(ctx: ServiceContext, books: SandboxBooks): WebhookDeliveries {
  const inFlight = new Set<string>();

  async function deliver(paymentId: string): Promise<void> {
    for (let attempt = 0; !ctx.shutdownSignal.aborted; attempt += 1) {
      const row = await books.find(paymentId);
      if (row === undefined || row.webhook_delivered_at !== null || row.webhook_event_id === null) return;
      // The base URL is known only once the service listens; deliveries resumed at start wait for it.
      if (ctx.urls.baseUrl !== '') {
        const delivered = await postEvent(ctx, row);
        if (ctx.shutdownSignal.aborted && !delivered) return;
        await books.recordDeliveryAttempt(paymentId, delivered);
        if (delivered) return;
      }
      await sleep(Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempt, 10)), ctx.shutdownSignal);
    }
  }

  return {
    start(paymentId) {
      if (inFlight.has(paymentId)) return;
      inFlight.add(paymentId);
      runInBackground(
        ctx,
        deliver(paymentId).finally(() => inFlight.delete(paymentId)),
      );
    },
  };
}

/** The event body of a confirmed sandbox payment: fixed per payment, so every retry is byte-for-byte the same. */
export function confirmationEventOf(row: SandboxPaymentRow): string {
  return JSON.stringify({
    id: row.webhook_event_id,
    type: PAYMENT_CONFIRMED_EVENT,
    created: Math.floor((row.confirmed_at ?? row.created_at) / 1000),
    data: {
      payment_id: row.payment_id,
      status: PAYMENT_CONFIRMED,
      customer_email: row.customer_email,
      offer_id: row.offer_id,
      merchant_id: row.merchant_id,
      amount_cents: row.amount_cents,
    },
  });
}

async function postEvent(ctx: ServiceContext, row: SandboxPaymentRow): Promise<boolean> {
  const body = confirmationEventOf(row);
  // Linked, not AbortSignal.any: the shutdown signal lives as long as the process and would keep an entry per attempt.
  const stop = linkedSignal([ctx.shutdownSignal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]);
  try {
    const response = await fetch(`${ctx.urls.baseUrl}${WEBHOOK_PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [WEBHOOK_SIGNATURE_HEADER]: signWebhookBody(ctx.secrets.webhookSecret, body, ctx.clock.now()),
      },
      body,
      signal: stop.signal,
    });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    // Refused, reset or timed out: the next attempt follows the backoff.
    return false;
  } finally {
    stop.release();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
