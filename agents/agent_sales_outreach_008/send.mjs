// Sending the drafts through the SMTP server the node names in its secret SMTP_URL (nodemailer), only when the
// input asks for it: at a rate, each message with List-Unsubscribe and, for an https link, RFC 8058's one-click
// List-Unsubscribe-Post, and each address written to the campaign's sent log in the agent's state as soon as it
// is accepted, so a run cut short, or run again, never mails anyone twice.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError, declaredSecret } from './agent-io.mjs';
import { addressKey, addressProblem } from './address.mjs';

export const DEFAULT_RATE_PER_MINUTE = 60;
export const MAX_RATE_PER_MINUTE = 600;

/** What `send: true` needs, checked before any lead is read: a sender, a way to unsubscribe, the SMTP secret. */
export function sendingPlan(input) {
  if (input.send !== true) return null;
  if (typeof input.from !== 'string' || addressProblem(input.from.replace(/^.*<([^>]+)>\s*$/, '$1')) !== null) throw new InputError('from: sending needs the sender\'s address ("Ada <ada@example.com>" or ada@example.com)');
  const unsubscribe = input.unsubscribe;
  if (typeof unsubscribe !== 'string' || !/^(?:https:\/\/[^\s<>]+|mailto:[^\s<>]+)$/.test(unsubscribe)) {
    throw new InputError('unsubscribe: sending needs a way to unsubscribe: an https:// link (one-click, RFC 8058) or a mailto: address; {{email}} in it is the lead\'s address');
  }
  const rate = input.rate_per_minute ?? DEFAULT_RATE_PER_MINUTE;
  if (!Number.isInteger(rate) || rate < 1 || rate > MAX_RATE_PER_MINUTE) throw new InputError(`rate_per_minute: must be a whole number from 1 to ${MAX_RATE_PER_MINUTE}`);
  const smtpUrl = declaredSecret('SMTP_URL');
  if (smtpUrl === null) throw new InputError('send: needs the secret SMTP_URL (smtp://user:password@host:587 or smtps://…), which the node gives this agent when it is set for it');
  if (!/^smtps?:\/\//i.test(smtpUrl)) throw new InputError('send: the secret SMTP_URL must be an smtp:// or smtps:// URL');
  return { smtpUrl, from: input.from, unsubscribe, ratePerMinute: rate };
}

/** The addresses a campaign has mailed, from its log in the state directory (none without one). */
export function sentLog(stateDir, campaign) {
  const path = stateDir ? join(stateDir, `sent-${campaign}.log`) : null;
  const sent = new Set(path && existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []);
  return {
    kept: path !== null,
    has: (address) => sent.has(addressKey(address)),
    add(address) {
      sent.add(addressKey(address));
      if (path) appendFileSync(path, `${addressKey(address)}\n`);
    },
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A sender that keeps to the plan's rate and stops taking messages at `deadline` (a Date.now() value). */
export async function createSender(plan, deadline) {
  const { nodemailer } = await import('./vendor/nodemailer.mjs');
  const transport = nodemailer.createTransport(plan.smtpUrl, { pool: true, maxConnections: 1 });
  const interval = 60_000 / plan.ratePerMinute;
  let last = 0;
  return {
    /** `{status: 'sent', message_id}`, `{status: 'failed', error}`, or `{status: 'deferred'}` past the deadline. */
    async send(draft) {
      const wait = last + interval - Date.now();
      if (Date.now() + Math.max(0, wait) >= deadline) return { status: 'deferred' };
      if (wait > 0) await sleep(wait);
      last = Date.now();
      const unsubscribe = plan.unsubscribe.replace(/\{\{\s*email\s*\}\}/g, encodeURIComponent(draft.to));
      const headers = { 'List-Unsubscribe': `<${unsubscribe}>`, ...(unsubscribe.startsWith('https://') ? { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } : {}) };
      try {
        const info = await transport.sendMail({
          from: plan.from,
          to: draft.to,
          subject: draft.subject ?? '',
          text: `${draft.body.replace(/\s+$/, '')}\n\n--\nTo receive no more of these messages: ${unsubscribe}\n`,
          headers,
        });
        return { status: 'sent', message_id: info.messageId };
      } catch (error) {
        return { status: 'failed', error: `${error.code ?? 'error'}: ${error.message}`.slice(0, 300), connection: ['ECONNECTION', 'ESOCKET', 'ETIMEDOUT', 'EAUTH', 'EDNS'].includes(error.code) };
      }
    },
    close: () => transport.close(),
  };
}
