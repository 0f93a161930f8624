// The service's mail (docs/api.md "Mail"): sign-in codes, and what a user is told about their account (a node
// enrolled, an agent uploaded, a sign-in from a new client). Over SMTP to the relay SVC_SMTP_URL names (nodemailer);
// svc-api --sandbox also keeps every message in its outbox (`svc-api sandbox mail --to ADDRESS`), so a sandbox
// without a relay still walks the whole funnel. A production service without a relay cannot sign anyone in, so
// svc-api refuses to start without SVC_SMTP_URL unless --sandbox (ops/env-config.ts).
import { SvcError, messageOf } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import { createSandboxOutbox } from './sandbox-outbox.js';
import { createSmtpTransport } from './smtp-transport.js';
import type { MailMessage } from './mail-message.js';

export type { MailMessage };

export interface Mailer {
  /** Sends it now; 503 service_unavailable when the relay does not take it (nothing was sent). */
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}

export interface MailerOptions {
  /** smtp://user:password@host:port or smtps://…; undefined: no relay (sandbox only). */
  smtpUrl: string | undefined;
  /** The From: of every message. */
  from: string;
  /** Keep a copy of each message in the sandbox outbox. */
  sandbox: boolean;
  store: Store;
  clock: Clock;
}

export function createMailer(options: MailerOptions): Mailer {
  const outbox = options.sandbox ? createSandboxOutbox(options.store, options.clock) : undefined;
  const smtp = options.smtpUrl === undefined ? undefined : createSmtpTransport(options.smtpUrl, options.from);
  return {
    async send(message) {
      await outbox?.keep(message);
      if (smtp === undefined) return;
      try {
        await smtp.send(message);
      } catch (error) {
        // The relay's words may name its host and user: they go to the log through the cause, never to the client.
        throw new SvcError('service_unavailable', 'the service could not send mail just now; nothing was sent', {
          retryAfterSeconds: 30,
          remedy: 'Try again in a minute.',
          cause: new Error(`SMTP: ${messageOf(error)}`),
        });
      }
    },
    async close() {
      smtp?.close();
    },
  };
}

/** The From: when SVC_MAIL_FROM is unset. */
export const DEFAULT_MAIL_FROM = 'svc <no-reply@localhost>';
