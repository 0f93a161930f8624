// svc-api --sandbox's outbox: every message the sandbox sends, kept so that `svc-api sandbox mail --to ADDRESS`
// (GET /sandbox/mail) shows a developer the sign-in code without a mail relay. Sandbox only: it shows anyone the
// codes of any address, exactly as the sandbox's payments confirm anyone's checkout.
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { MailMessage } from './mail-message.js';

export interface OutboxMessage extends MailMessage {
  sent_at: number;
}

export interface SandboxOutbox {
  keep(message: MailMessage): Promise<void>;
  /** The newest `limit` messages to `address`, newest first. */
  to(address: string, limit: number): Promise<OutboxMessage[]>;
}

export function createSandboxOutbox(store: Store, clock: Clock): SandboxOutbox {
  return {
    async keep(message) {
      const now = clock.now();
      await store.db
        .insertInto('sandbox_outbox')
        .values({
          message_id: timeOrderedId(now),
          to_address: message.to.toLowerCase(),
          subject: message.subject,
          text_body: message.text,
          sent_at: now,
        })
        .execute();
    },
    async to(address, limit) {
      const rows = await store.db
        .selectFrom('sandbox_outbox')
        .select(['to_address', 'subject', 'text_body', 'sent_at'])
        .where('to_address', '=', address.toLowerCase())
        .orderBy('message_id', 'desc')
        .limit(limit)
        .execute();
      return rows.map((row) => ({ to: row.to_address, subject: row.subject, text: row.text_body, sent_at: row.sent_at }));
    },
  };
}
