// svc-api's flags for webhook deliveries (docs/api.md "Webhooks"): whether private addresses may be delivered to,
// and which certificates besides the system's are trusted. Parsed here, apart from main.ts; a file that cannot be
// read or holds no certificate is a usage error naming the flag.
import { readFileSync } from 'node:fs';
import type { ServiceOptions } from '../service-options.js';

export const WEBHOOK_FLAGS = {
  'webhook-allow-private': { type: 'boolean' },
  'webhook-ca-file': { type: 'string' },
} as const;

export function parseWebhookFlags(values: {
  'webhook-allow-private'?: boolean;
  'webhook-ca-file'?: string;
}): Pick<ServiceOptions, 'webhookAllowPrivate' | 'webhookCa'> {
  let ca: string | undefined;
  const file = values['webhook-ca-file'];
  if (file !== undefined) {
    try {
      ca = readFileSync(file, 'utf8');
    } catch (error) {
      throw new Error(`--webhook-ca-file cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`--webhook-ca-file ${file} holds no PEM certificate`);
  }
  return {
    ...(values['webhook-allow-private'] === true ? { webhookAllowPrivate: true } : {}),
    ...(ca === undefined ? {} : { webhookCa: ca }),
  };
}
