// Mail over SMTP with nodemailer, the maintained Node mailer: STARTTLS when the relay offers it, smtps:// for TLS
// from the start, the URL's user and password for AUTH. One pooled transport for the life of the service.
import nodemailer from 'nodemailer';
import type { MailMessage } from './mail-message.js';

export interface SmtpTransport {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

/** How long one message may take, connection included: a relay that hangs must not hold a sign-in for minutes. */
const SMTP_TIMEOUT_MS = 15_000;

export function createSmtpTransport(url: string, from: string): SmtpTransport {
  const transport = nodemailer.createTransport({
    url,
    pool: true,
    maxConnections: 4,
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
  } as Parameters<typeof nodemailer.createTransport>[0]);
  return {
    async send(message) {
      await transport.sendMail({ from, to: message.to, subject: message.subject, text: message.text });
    },
    close() {
      transport.close();
    },
  };
}

/** Whether `value` names an SMTP relay svc-api can use: smtp:// or smtps://, a host, no path. */
export function smtpUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL such as smtp://user:password@mail.example.com:587 or smtps://mail.example.com:465';
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') return `must be an smtp:// or smtps:// URL (got ${url.protocol}//…)`;
  if (url.hostname === '') return 'must name the relay host';
  return undefined;
}
