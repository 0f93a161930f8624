// Webhooks' events and bounds without TypeBox (docs/api.md "Webhooks"): the CLI's command tree loads these for its
// help, and must stay light at start; webhooks.ts adds the schemas.
/** The run events: a delivery's type is `run.<event>`. */
export const RUN_WEBHOOK_EVENTS = ['queued', 'started', 'succeeded', 'failed', 'cancelled'] as const;
export type RunWebhookEvent = (typeof RUN_WEBHOOK_EVENTS)[number];
/** A schedule's changes of state (docs/api.md "Schedules"), named as their deliveries' types. */
export const SCHEDULE_WEBHOOK_EVENTS = ['schedule.paused', 'schedule.resumed', 'schedule.skipping'] as const;
export type ScheduleWebhookEvent = (typeof SCHEDULE_WEBHOOK_EVENTS)[number];
/**
 * Every event, each one bit of an endpoint's subscription (webhook_endpoints.event_mask), in this order for good:
 * an endpoint's bits are stored.
 */
export const WEBHOOK_EVENTS = [...RUN_WEBHOOK_EVENTS, ...SCHEDULE_WEBHOOK_EVENTS] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export function eventBit(event: WebhookEvent): number {
  return 1 << WEBHOOK_EVENTS.indexOf(event);
}

export function eventMaskOf(events: readonly WebhookEvent[]): number {
  return events.reduce((mask, event) => mask | eventBit(event), 0);
}

export function eventsOfMask(mask: number): WebhookEvent[] {
  return WEBHOOK_EVENTS.filter((event) => (mask & eventBit(event)) !== 0);
}

/** Endpoints one user may register. */
export const MAX_WEBHOOK_ENDPOINTS = 10;
export const MAX_WEBHOOK_URL_CHARS = 2048;
/**
 * The waits after each failed attempt of a series (seconds): 8 attempts, the last about 21 hours after the first,
 * so a receiver down for a night still gets its events; then the delivery is `failed` until re-sent.
 */
export const WEBHOOK_RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200, 21_600, 43_200] as const;
export const WEBHOOK_MAX_TRIES = WEBHOOK_RETRY_DELAYS_SECONDS.length + 1;
/** One attempt's bound: connecting, TLS, and the answer's first bytes. */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10_000;
/** After a rotation the old secret still signs (a second v1) for this long by default, and at most this long. */
export const DEFAULT_PREVIOUS_SECRET_SECONDS = 24 * 3600;
export const MAX_PREVIOUS_SECRET_SECONDS = 7 * 24 * 3600;
/** Deliveries, with their attempts, are kept this long. */
export const WEBHOOK_DELIVERY_RETENTION_DAYS = 30;
/**
 * What an attempt records when it had no HTTPS connection, whatever the cause: a name that does not resolve, an address
 * deliveries may not reach, a port closed or silent, a TLS handshake that failed. One text, so that the delivery log
 * cannot be read as a scan of ports and names; the operator's log says which.
 */
export const WEBHOOK_NO_CONNECTION_ERROR = 'no HTTPS connection to the receiver';
/** Re-sends of one endpoint's deliveries in a minute (429 rate_limited beyond). */
export const WEBHOOK_RESENDS_PER_MINUTE = 10;
/** The part of an answer's body an attempt records. */
export const WEBHOOK_RESPONSE_EXCERPT_CHARS = 1024;

/** The headers of a delivery (lowercase, as Node reads them). */
export const WEBHOOK_HEADERS = {
  signature: 'svc-signature',
  eventId: 'svc-event-id',
  eventType: 'svc-event-type',
  attempt: 'svc-delivery-attempt',
} as const;
