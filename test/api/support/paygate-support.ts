// Shared by the pay gate, auth, webhook and sandbox tests: a snapshot of the service's whole database (to show a
// rejected request changed nothing) and a payment provider's signed webhook delivery made by hand.
import { randomBytes } from 'node:crypto';
import type { TestService } from '../../helpers/svc-api.js';
import type { SqliteDatabase } from '../../../src/lib/sqlite.js';
import { signWebhookBody } from '../../../src/api/payments/webhook-signature.js';
import { httpRequest, type ApiResponse } from '../../helpers/http.js';
import { MERCHANT_ID } from '../../helpers/funnel.js';

/** Every row of every table, so "nothing changed" covers tables this test never thought of. */
export function dbSnapshot(db: SqliteDatabase): Record<string, unknown[]> {
  const tables = db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all();
  return Object.fromEntries(tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all()]));
}

export function rowCount(db: SqliteDatabase, table: string): number {
  return (db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
}

export interface PaymentData {
  payment_id: string;
  status: string;
  customer_email: string;
  offer_id: string;
  merchant_id: string;
  amount_cents: number;
}

export function paymentData(overrides: Partial<PaymentData> = {}): PaymentData {
  return {
    payment_id: `pay_${randomBytes(8).toString('hex')}`,
    status: 'CONFIRMED',
    customer_email: 'someone@example.com',
    offer_id: 'svc_starter_agents',
    merchant_id: MERCHANT_ID,
    amount_cents: 4900,
    ...overrides,
  };
}

export function confirmedEvent(data: unknown, id = `evt_${randomBytes(8).toString('hex')}`): Record<string, unknown> {
  return { id, type: 'payment.confirmed', created: Math.floor(Date.now() / 1000), data };
}

/** POSTs the event as the provider would: raw JSON body, Svc-Signature over it with the service's secret. */
export function deliverWebhook(
  service: TestService,
  event: unknown,
  options: { secret?: string; nowMs?: number; signature?: string; rawBody?: string | Buffer } = {},
): Promise<ApiResponse> {
  const rawBody = options.rawBody ?? JSON.stringify(event);
  const signature =
    options.signature ??
    signWebhookBody(options.secret ?? service.secrets.webhookSecret, rawBody, options.nowMs ?? service.ctx.clock.now());
  return httpRequest(`${service.baseUrl}/v1/payments/webhook`, {
    method: 'POST',
    rawBody,
    headers: { 'content-type': 'application/json', 'svc-signature': signature },
  });
}

/**
 * The provider confirms but its webhook never arrives: the sandbox provider's own books are changed, as the
 * external provider's would be, and nothing is sent to the service.
 */
export function confirmAtProviderOnly(db: SqliteDatabase, paymentId: string): void {
  const changed = db
    .prepare("UPDATE sandbox_payments SET status = 'CONFIRMED', confirmed_at = ?, webhook_event_id = ? WHERE payment_id = ?")
    .run(Date.now(), `evt_lost_${randomBytes(6).toString('hex')}`, paymentId).changes;
  if (changed !== 1) throw new Error(`no sandbox payment ${paymentId}`);
}

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A provider's delivery to a service in another process: the signature and body are returned to look for in logs. */
export async function deliverWebhookSigned(
  baseUrl: string,
  secret: string,
  email: string,
): Promise<{ response: ApiResponse; body: string; signature: string }> {
  const body = JSON.stringify({
    id: `evt_${randomBytes(8).toString('hex')}`,
    type: 'payment.confirmed',
    created: Math.floor(Date.now() / 1000),
    data: {
      payment_id: `pay_${randomBytes(8).toString('hex')}`,
      status: 'CONFIRMED',
      customer_email: email,
      offer_id: 'dev_portal_execution_billing',
      merchant_id: MERCHANT_ID,
      amount_cents: 2900,
    },
  });
  const signature = signWebhookBody(secret, body, Date.now());
  const response = await httpRequest(`${baseUrl}/v1/payments/webhook`, {
    method: 'POST',
    rawBody: body,
    headers: { 'content-type': 'application/json', 'svc-signature': signature },
  });
  return { response, body, signature };
}
