// Sends the outbox (docs/api.md "Webhooks"), apart from any request: every sweep (1 s) it claims the deliveries that
// are due and sends each in the background, at most MAX_IN_FLIGHT at once, so a slow receiver delays no other and
// never a run. Each attempt is signed afresh (Svc-Signature: t=…,v1=…, and a second v1 with the previous secret while
// a rotation's overlap lasts) and its answer recorded; a failed one is tried again after the backoff of
// contract/webhooks.ts. Deliveries past their retention are purged hourly.
import { computeWebhookSignature } from '../payments/webhook-signature.js';
import { WEBHOOK_HEADERS } from '../../contract/webhooks.js';
import { repeatByServiceClock, repeatInBackground, runInBackground, type ServiceContext } from '../context.js';
import { postEvent } from './deliver.js';
import { createDeliveryStore, type DeliveryRow } from './delivery-store.js';
import { createEndpointStore } from './endpoint-store.js';

const MAX_IN_FLIGHT = 32;
const PURGE_EVERY_MS = 60 * 60 * 1000;

interface WorkerLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

export function scheduleWebhookDelivery(ctx: ServiceContext, log: WorkerLog): void {
  const deliveries = createDeliveryStore(ctx.store);
  const endpoints = createEndpointStore(ctx.store, ctx.vault, ctx.clock);
  let inFlight = 0;

  const attempt = async (row: DeliveryRow): Promise<void> => {
    const endpoint = await ctx.store.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('endpoint_id', '=', row.endpoint_id)
      .executeTakeFirst();
    if (endpoint === undefined) return; // removed meanwhile: its deliveries went with it
    const at = ctx.clock.now();
    const t = Math.floor(at / 1000);
    const signature = [
      `t=${t}`,
      ...endpoints.signingSecrets(endpoint, at).map((secret) => `v1=${computeWebhookSignature(secret, t, row.payload_json)}`),
    ].join(',');
    const headers = {
      [WEBHOOK_HEADERS.signature]: signature,
      [WEBHOOK_HEADERS.eventId]: row.event_id,
      [WEBHOOK_HEADERS.eventType]: `run.${row.event_type}`,
      [WEBHOOK_HEADERS.attempt]: String(row.attempts),
    };
    const result = await postEvent(endpoint.url, row.payload_json, headers, ctx.webhookDelivery, ctx.shutdownSignal);
    // An attempt cut short by the service stopping is not one: the delivery is claimed again after the restart.
    if (ctx.shutdownSignal.aborted) return;
    // The user reads one text for every missing connection; the operator may read why (a user's receiver, so info).
    if (result.unreachable !== undefined) {
      const details = { endpoint_id: row.endpoint_id, event_id: row.event_id, reason: result.unreachable };
      log.info(details, 'a webhook delivery had no HTTPS connection to its receiver');
    }
    await deliveries.recordAttempt(row, result, at);
  };

  const round = async (): Promise<void> => {
    if (inFlight >= MAX_IN_FLIGHT) return;
    for (const row of await deliveries.claimDue(ctx.clock.now(), MAX_IN_FLIGHT - inFlight)) {
      inFlight += 1;
      runInBackground(
        ctx,
        attempt(row)
          .catch((error: unknown) =>
            log.warn({ err: error, event_id: row.event_id, endpoint_id: row.endpoint_id }, 'a webhook delivery attempt could not be made'),
          )
          .finally(() => (inFlight -= 1)),
      );
    }
  };
  repeatInBackground(ctx, round, ctx.runTiming.sweepMs, 'webhook delivery', log);
  repeatByServiceClock(ctx, PURGE_EVERY_MS, async (now) => (await deliveries.purge(now), false), 'webhook delivery purge', log);
}
