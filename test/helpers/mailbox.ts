// The mail the services under test sent, as the run's SMTP server received it (smtp-global-setup.ts): each message a
// JSON file in its directory. A test waits for the message it expects to an address, never for a time.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { waitFor } from './wait.js';

export interface ReceivedMail {
  envelope_to: string[];
  to: string[];
  from: string | null;
  subject: string;
  text: string;
  headers: Record<string, string>;
  received_at: string;
  /** The file's name: arrival order. */
  id: string;
}

/** The URL the services under test send mail to (SVC_SMTP_URL). */
export function smtpUrl(): string {
  return inject('smtpUrl');
}

/** Every message to `address` received so far, oldest first. */
export function mailTo(address: string): ReceivedMail[] {
  const dir = inject('mailDir');
  const wanted = address.toLowerCase();
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => ({ ...(JSON.parse(readFileSync(join(dir, name), 'utf8')) as Omit<ReceivedMail, 'id'>), id: name }))
    .filter((mail) => mail.envelope_to.includes(wanted));
}

/**
 * The first message to `address` that arrives after the messages in `seenBefore` (ids) and matches `match`, waited
 * for up to 20 s.
 */
export async function nextMailTo(
  address: string,
  options: { after?: Iterable<string>; match?: (mail: ReceivedMail) => boolean } = {},
): Promise<ReceivedMail> {
  const seen = new Set(options.after ?? []);
  return waitFor(
    async () => mailTo(address).find((mail) => !seen.has(mail.id) && (options.match?.(mail) ?? true)),
    `a mail to ${address}`,
    20_000,
  );
}

/** The ids of the messages to `address` so far: pass as `after` to wait for the next one. */
export function mailIdsTo(address: string): string[] {
  return mailTo(address).map((mail) => mail.id);
}

/** The one-time sign-in code of a sign-in mail (docs/api.md "Sign-in: a verified inbox"). */
export function signInCodeOf(mail: ReceivedMail): string {
  const match = /\b(\d{4}-\d{4})\b/.exec(mail.text);
  if (match === null) throw new Error(`no sign-in code in the mail "${mail.subject}"`);
  return match[1]!;
}
