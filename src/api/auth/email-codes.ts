// Proof of an inbox (docs/api.md "Sign-in: a verified inbox"): a one-time code mailed to the address, which the
// caller types back. A payment proves that someone paid naming an address, never who reads it; this does.
// - The code is 8 digits (10^8), mailed as 1234-5678, valid CODE_LIFETIME_MINUTES, usable once.
// - Only an HMAC of it is kept, keyed by the service's secret: a copy of the database cannot test guesses offline.
// - Each challenge takes MAX_CODE_ATTEMPTS tries in all, and each address and each client address may ask for
//   a bounded number of codes an hour: guessing is bounded to a chance in millions a year for one address.
// - Asking for a code answers the same whatever the address: whether it is known, paid or new is not revealed.
import { createHmac, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';
import { normalizeEmail } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { Mailer } from '../mail/mailer.js';
import { signInCodeMail, type ClientSeen } from '../mail/messages.js';
import type { Store } from '../store/store.js';

export const CODE_LIFETIME_MINUTES = 10;
export const MAX_CODE_ATTEMPTS = 5;
/** Codes one address may be sent in CODE_WINDOW_MS: enough for a typo or two, too few to flood an inbox. */
export const CODES_PER_ADDRESS = 5;
/** Codes one client address may ask for in CODE_WINDOW_MS, across every e-mail (svc-api --sign-in-codes-per-client). */
export const CODES_PER_CLIENT = 30;
const CODE_WINDOW_MS = 60 * 60 * 1000;

/** A code as typed: 8 digits, with or without the dash or spaces between its halves. */
const TYPED_CODE = /^\s*(\d{4})[\s-]?(\d{4})\s*$/;

export interface EmailChallenge {
  challenge_id: string;
  expires_at: number;
}

export interface EmailCodes {
  /** Mails a fresh code to `email`; the challenge names it for the sign-in that follows. */
  send(email: string, client: ClientSeen): Promise<EmailChallenge>;
  /**
   * Checks a typed code against its challenge; a wrong code spends one of its attempts. 401 email_code_invalid (one
   * answer for every cause) unless it is the code mailed to `email` and still usable. A right code stays usable
   * until a token is issued with it: a sign-in refused for another reason (the payment not confirmed yet, another
   * offer) is retried with the same code.
   */
  check(challengeId: string, email: string, code: string): Promise<void>;
  /** Spends the challenge once a token was issued with it; false when another request spent it first. */
  use(challengeId: string): Promise<boolean>;
}

export function createEmailCodes(
  store: Store,
  clock: Clock,
  mailer: Mailer,
  key: Uint8Array,
  codesPerClient = CODES_PER_CLIENT,
): EmailCodes {
  // A key of its own, derived from the service's secret, so the codes' MAC never doubles as anything else's.
  const codeKey = createHmac('sha256', key).update('svc email-code v1').digest();
  const codeHash = (challengeId: string, digits: string): string =>
    createHmac('sha256', codeKey).update(`${challengeId}\n${digits}`).digest('hex');

  /** Refuses a code over either budget of the hour; call in the transaction that stores the code, under its locks. */
  async function refuseOverLimit(email: string, client: ClientSeen, now: number): Promise<void> {
    const since = now - CODE_WINDOW_MS;
    const count = async (column: 'email' | 'client_address', value: string): Promise<number> => {
      const row = await store.db
        .selectFrom('email_challenges')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(column, '=', value)
        .where('created_at', '>', since)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };
    const overAddress = (await count('email', email)) >= CODES_PER_ADDRESS;
    if (overAddress || (await count('client_address', client.client_address)) >= codesPerClient) {
      const whose = overAddress ? 'for this address' : 'from this client';
      throw new SvcError('rate_limited', `too many sign-in codes were asked for ${whose} in the last hour`, {
        retryAfterSeconds: 15 * 60,
        remedy: 'Use the newest code already mailed (it works for 10 minutes), or ask again later.',
      });
    }
  }

  return {
    async send(email, client) {
      const address = normalizeEmail(email);
      const now = clock.now();
      const challengeId = randomUUID();
      const digits = String(randomInt(0, 100_000_000)).padStart(8, '0');
      const expiresAt = now + CODE_LIFETIME_MINUTES * 60_000;
      // Both budgets are counted from the codes stored: the count and the insert after it are one step for the address
      // and for the client (docs/api.md "Counted limits under concurrency"), the address's lock always taken first.
      const locks = [`sign-in-codes:address:${address}`, `sign-in-codes:client:${client.client_address}`];
      await store.lockedTransaction(locks, async () => {
        await refuseOverLimit(address, client, now);
        const { client_address } = client;
        const code_hash = codeHash(challengeId, digits);
        await store.db
          .insertInto('email_challenges')
          .values({ challenge_id: challengeId, email: address, code_hash, client_address, created_at: now, expires_at: expiresAt })
          .execute();
      });
      // Mailed once the code is stored and the locks are let go: a slow relay holds up no other sign-in.
      await mailer.send(
        signInCodeMail(address, `${digits.slice(0, 4)}-${digits.slice(4)}`, challengeReference(challengeId), CODE_LIFETIME_MINUTES, client),
      );
      return { challenge_id: challengeId, expires_at: expiresAt };
    },

    async check(challengeId, email, code) {
      const typed = TYPED_CODE.exec(code);
      // One statement takes an attempt and reads the challenge, so concurrent guesses cannot share one; a right code
      // gives it back.
      const row = await store.statement(() =>
        store.db
          .updateTable('email_challenges')
          .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
          .where('challenge_id', '=', challengeId)
          .where('email', '=', normalizeEmail(email))
          .where('used_at', 'is', null)
          .where('expires_at', '>', clock.now())
          .where('attempts', '<', MAX_CODE_ATTEMPTS)
          .returning(['code_hash', 'attempts'])
          .executeTakeFirst(),
      );
      const expected = row === undefined ? undefined : Buffer.from(row.code_hash, 'hex');
      const given = typed === null ? undefined : Buffer.from(codeHash(challengeId, `${typed[1]}${typed[2]}`), 'hex');
      // The tries this challenge has left after this one: none when it is not a live challenge of this address.
      if (expected === undefined || given === undefined || !timingSafeEqual(expected, given))
        throw invalidCode(row === undefined ? 0 : MAX_CODE_ATTEMPTS - Number(row.attempts));
      await store.statement(() =>
        store.db
          .updateTable('email_challenges')
          .set((eb) => ({ attempts: eb('attempts', '-', 1) }))
          .where('challenge_id', '=', challengeId)
          .execute(),
      );
    },

    async use(challengeId) {
      const spent = await store.db
        .updateTable('email_challenges')
        .set({ used_at: clock.now() })
        .where('challenge_id', '=', challengeId)
        .where('used_at', 'is', null)
        .returning('challenge_id')
        .executeTakeFirst();
      return spent !== undefined;
    },
  };
}

/** What the mail and the client both show of a challenge: its first 8 hex digits. */
export function challengeReference(challengeId: string): string {
  return challengeId.slice(0, 8);
}

/**
 * `attemptsLeft`: the tries the challenge still takes (docs/decisions/0033-sign-in-code-attempts-left.md), so a
 * client re-asks a mistyped code instead of ending the sign-in; 0 for every other cause (expired, used, spent,
 * another address's), which stays one answer.
 */
export function invalidCode(attemptsLeft = 0): SvcError {
  return new SvcError('email_code_invalid', 'the sign-in code is wrong, expired, used, or was tried too many times', {
    remedy: `Type the code of the newest sign-in mail (it works once, for ${CODE_LIFETIME_MINUTES} minutes), or ask for a new one.`,
    extensions: { attempts_left: attemptsLeft },
  });
}
