// Signed webhooks of run events (docs/api.md "Webhooks"): what a user registers, what is sent, how it is retried.
// Deliveries are signed as the service's payment webhooks are (Svc-Signature: t=…,v1=HMAC-SHA256 of "t.body").
import { Type, type Static } from '@sinclair/typebox';
import { PageLimit } from './page-limit.js';
import {
  MAX_PREVIOUS_SECRET_SECONDS,
  MAX_WEBHOOK_URL_CHARS,
  WEBHOOK_EVENTS,
  type RunWebhookEvent,
  type ScheduleWebhookEvent,
} from './webhook-limits.js';
export * from './webhook-limits.js';

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });
const strict = { additionalProperties: false } as const;
const Event = Type.Union(WEBHOOK_EVENTS.map((event) => Type.Literal(event)));
const EndpointId = Type.String({ pattern: '^[0-9a-f-]{36}$' });

export const WebhookParams = Type.Object({ endpoint_id: Type.String({ maxLength: 64 }) });
export type WebhookParams = Static<typeof WebhookParams>;
export const DeliveryParams = Type.Object({ endpoint_id: Type.String({ maxLength: 64 }), event_id: Type.String({ maxLength: 64 }) });
export type DeliveryParams = Static<typeof DeliveryParams>;

// POST /v1/swarm/webhooks
export const WebhookRequest = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: MAX_WEBHOOK_URL_CHARS }),
    /** Absent: every event. */
    events: Type.Optional(Type.Array(Event, { minItems: 1, maxItems: WEBHOOK_EVENTS.length, uniqueItems: true })),
    description: Type.Optional(Type.String({ maxLength: 200 })),
  },
  strict,
);
export type WebhookRequest = Static<typeof WebhookRequest>;

export const WebhookEndpoint = Type.Object({
  endpoint_id: EndpointId,
  url: Type.String(),
  events: Type.Array(Event),
  description: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  /** Until when the secret before the last rotation still signs beside the current one; null: only the current. */
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()]),
});
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;
/** The signing secret is shown when it is made (a new endpoint, a rotation), never again. */
export const WebhookCreated = Type.Composite([WebhookEndpoint, Type.Object({ signing_secret: Type.String() })]);
export type WebhookCreated = Static<typeof WebhookCreated>;
export const WebhooksResponse = Type.Object({ webhooks: Type.Array(WebhookEndpoint) });
export type WebhooksResponse = Static<typeof WebhooksResponse>;
export const WebhookRemoved = Type.Object({ endpoint_id: Type.String(), removed: Type.Literal(true) });

// POST /v1/swarm/webhooks/{endpoint_id}/rotate-secret
export const RotateRequest = Type.Object(
  { previous_secret_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PREVIOUS_SECRET_SECONDS })) },
  strict,
);
export type RotateRequest = Static<typeof RotateRequest>;

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export const WebhookDelivery = Type.Object({
  event_id: Type.String(),
  endpoint_id: Type.String(),
  event_type: Type.String(),
  /** The run of a run event; null for a schedule's. */
  run_id: Type.Union([Type.String(), Type.Null()]),
  /** The schedule of a schedule event; null for a run's. */
  schedule_id: Type.Union([Type.String(), Type.Null()]),
  status: Type.Union(DELIVERY_STATUSES.map((status) => Type.Literal(status))),
  attempts: Type.Integer(),
  created_at: Timestamp,
  last_attempt_at: Type.Union([Timestamp, Type.Null()]),
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  next_attempt_at: Type.Union([Timestamp, Type.Null()]),
  delivered_at: Type.Union([Timestamp, Type.Null()]),
});
export type WebhookDelivery = Static<typeof WebhookDelivery>;
export const WebhookAttempt = Type.Object({
  attempt: Type.Integer(),
  at: Timestamp,
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  response_excerpt: Type.Union([Type.String(), Type.Null()]),
  duration_ms: Type.Integer(),
});
export type WebhookAttempt = Static<typeof WebhookAttempt>;
export const WebhookDeliveryDetail = Type.Composite([
  WebhookDelivery,
  Type.Object({ payload: Type.Unknown(), attempt_log: Type.Array(WebhookAttempt) }),
]);
export type WebhookDeliveryDetail = Static<typeof WebhookDeliveryDetail>;
export const DeliveriesQuery = Type.Object({
  limit: PageLimit(100, 20),
  before: Type.Optional(Type.String({ pattern: '^[0-9a-f-]{36}$' })),
});
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;
export const DeliveriesResponse = Type.Object({
  deliveries: Type.Array(WebhookDelivery),
  next_before: Type.Union([Type.String(), Type.Null()]),
});
export type DeliveriesResponse = Static<typeof DeliveriesResponse>;

/** What a delivery's body holds: the run as it stood at the event, never its output (GET /v1/swarm/runs/{id} has it). */
/** A schedule event's body: the schedule as it is after the change, and for `schedule.skipping` the new record. */
export interface ScheduleEventPayload {
  id: string;
  type: ScheduleWebhookEvent;
  /** Unix seconds. */
  created: number;
  data: {
    schedule: {
      schedule_id: string;
      agent_id: string;
      node_id: string | null;
      paused: boolean;
      pause_reason: string | null;
      next_fire_at: string | null;
    };
    skip: { reason: string; count: number; first_at: string; last_at: string } | null;
  };
}

export interface RunEventPayload {
  id: string;
  type: `run.${RunWebhookEvent}`;
  /** Unix seconds. */
  created: number;
  data: {
    run: {
      run_id: string;
      agent_id: string;
      status: string;
      attempt: number;
      charged_cents: number;
      node_id: string | null;
      started_at: string;
      finished_at: string | null;
      error: { code: string; message: string } | null;
    };
  };
}
