// docs/decisions/0007-payment-provider.md: `Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over
// "<t>.<raw body>", keyed with the webhook secret's UTF-8 bytes, the scheme of the common payment providers.
// The timestamp is signed too, so a captured delivery can't be replayed after the tolerance.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SvcError } from '../../contract/errors.js';

/** The header the provider signs its deliveries in (lowercase: Node's request.headers). */
export const WEBHOOK_SIGNATURE_HEADER = 'svc-signature';
/** How far a delivery's timestamp may be from the service's clock, either way. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

const SIGNATURE_REMEDY = 'The payment provider must sign the raw body with the shared webhook secret (Svc-Signature: t=…,v1=…).';
const HEX_SHA256 = /^[0-9a-f]{64}$/;
const UNIX_SECONDS = /^\d{1,12}$/;

export function computeWebhookSignature(secret: string, timestampSeconds: number, rawBody: Buffer | string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestampSeconds}.`).update(rawBody).digest('hex');
}

/** The header value a provider sends with `rawBody` at `nowMs`. */
export function signWebhookBody(secret: string, rawBody: Buffer | string, nowMs: number): string {
  const timestampSeconds = Math.floor(nowMs / 1000);
  return `t=${timestampSeconds},v1=${computeWebhookSignature(secret, timestampSeconds, rawBody)}`;
}

/**
 * Accepts the delivery when one v1 signature matches and t is within the tolerance of `nowMs` either way;
 * otherwise 401. Several v1 entries are allowed, so a provider can sign with an old and a new secret while
 * they rotate it. The message never repeats the header.
 */
export function verifyWebhookSignature(secret: string, header: string | string[] | undefined, rawBody: Buffer, nowMs: number): void {
  if (header === undefined || header === '') throw signatureError('the Svc-Signature header is missing');
  if (Array.isArray(header)) throw signatureError('send exactly one Svc-Signature header');
  let timestamp: string | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const separator = part.indexOf('=');
    if (separator < 0) continue;
    const key = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (key === 't') timestamp = value;
    else if (key === 'v1') candidates.push(value.toLowerCase());
  }
  if (timestamp === undefined || !UNIX_SECONDS.test(timestamp) || candidates.length === 0) {
    throw signatureError('the Svc-Signature header must be "t=<unix seconds>,v1=<hex HMAC-SHA256>"');
  }
  const timestampSeconds = Number(timestamp);
  if (Math.abs(nowMs / 1000 - timestampSeconds) > WEBHOOK_TOLERANCE_SECONDS) {
    throw signatureError(`the Svc-Signature timestamp is more than ${WEBHOOK_TOLERANCE_SECONDS} s away from the service's clock`);
  }
  const expected = Buffer.from(computeWebhookSignature(secret, timestampSeconds, rawBody), 'hex');
  // Every candidate is compared in full, so the time taken does not tell which one came closest.
  let matched = false;
  for (const candidate of candidates) {
    if (!HEX_SHA256.test(candidate)) continue;
    const given = Buffer.from(candidate, 'hex');
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  if (!matched) throw signatureError('the Svc-Signature does not match the body');
}

function signatureError(message: string): SvcError {
  return new SvcError('unauthorized', message, { remedy: SIGNATURE_REMEDY });
}
