// The pay gate (spec §3, §4; docs/api.md "Endpoints of spec §4"): a session for a tier and a checkout e-mail, activated
// by a CONFIRMED payment of that e-mail, tier and merchant, which yields a deploy token for the node install.
import { randomUUID } from 'node:crypto';
import { DEPLOY_MODE, INSTALL_PATH, PAYMENT_CONFIRMED, PENDING_SESSION_LIFETIME_SECONDS } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import {
  normalizeEmail,
  type ActivateRequest,
  type ActivateResponse,
  type SessionRequest,
  type SessionResponse,
} from '../../contract/schemas.js';
import { TIERS, TIER_IDS, type TierId } from '../../contract/tiers.js';
import { isoTime } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import type { Tables } from '../store/tables.js';
import { createPaymentRecords, type PaymentRecord } from '../payments/payment-records.js';
import { createDeployTokens } from './deploy-tokens.js';
import type { ClientSeen } from '../mail/messages.js';

/** How long a client waits before asking again whether the provider confirmed (spec §7 "wait ... and retry"). */
export const PAYMENT_RETRY_AFTER_SECONDS = 5;

/** A session as stored (store/tables.ts), its tier one of the catalog's. */
type SessionRow = Omit<Tables['sessions'], 'tier_id'> & { tier_id: TierId };

export interface Paygate {
  createSession(input: SessionRequest): Promise<SessionResponse>;
  /**
   * `userId`: the subject of the caller's JWT, from a recent sign-in (the route's step-up): activation mints a deploy
   * token, which enrols a node into the account, so it needs the proof of the inbox, never ids alone.
   */
  activateSession(input: ActivateRequest, userId: string, client: ClientSeen): Promise<ActivateResponse>;
}

export function createPaygate(ctx: ServiceContext): Paygate {
  const { store, clock } = ctx;
  const payments = createPaymentRecords(ctx);
  const deployTokens = createDeployTokens(store, clock);

  /**
   * spec §7 "Session not found": unknown, or pending past its 24 h. Locked (PostgreSQL) until the transaction ends,
   * so two activations of one session on two instances happen one after the other.
   */
  async function liveSession(sessionId: string, userId: string): Promise<SessionRow> {
    const session = (await store
      .forUpdate(store.db.selectFrom('sessions').selectAll().where('session_id', '=', sessionId))
      .executeTakeFirst()) as SessionRow | undefined;
    // Another user's session answers as no session: a session id tells a stranger nothing (spec §7's remedy stands).
    if (session === undefined || session.user_id !== userId || (session.status === 'pending' && session.expires_at <= clock.now())) {
      throw new SvcError('session_not_found', 'no such session of yours, or it expired unactivated after 24 hours');
    }
    return session;
  }

  async function resolvePayment(paymentId: string): Promise<PaymentRecord> {
    const payment = await payments.resolve(paymentId);
    if (payment === undefined) throw new SvcError('payment_not_found', `the payment provider has no payment ${paymentId}`);
    return payment;
  }

  // Everything after the provider's answer is one transaction: the session and payment are read again inside it,
  // so concurrent activations see each other's effect.
  const activateWithPayment = (sessionId: string, userId: string, payment: PaymentRecord, client: ClientSeen): Promise<ActivateResponse> =>
    store.transaction(async () => {
      const session = await liveSession(sessionId, userId);
      // Two sessions activated with one payment at once: the second waits, then finds the payment used.
      await store.lock(`payment-activation:${payment.payment_id}`);
      if (session.status === 'active') throw alreadyActive();
      if (payment.status !== PAYMENT_CONFIRMED) {
        throw new SvcError('payment_not_confirmed', `the payment is ${payment.status}, not yet ${PAYMENT_CONFIRMED}`, {
          retryAfterSeconds: PAYMENT_RETRY_AFTER_SECONDS,
        });
      }
      // spec §7: a payment of another e-mail means the session does not exist for the paying user.
      if (payment.customer_email !== session.user_id) {
        throw new SvcError('session_not_found', 'no such session for the e-mail this payment was made with');
      }
      if (payment.offer_id !== session.tier_id || payment.merchant_id !== ctx.merchantId) {
        throw new SvcError(
          'payment_mismatch',
          `the payment is for another ${payment.offer_id !== session.tier_id ? 'tier' : 'merchant'} than this session`,
          {
            extensions: { session_tier_id: session.tier_id, payment_offer_id: payment.offer_id },
          },
        );
      }
      if (!TIERS[session.tier_id].node_install) throw noNodeInstall(session.tier_id);
      const usedBy = await store.db
        .selectFrom('sessions')
        .select('session_id')
        .where('payment_id', '=', payment.payment_id)
        .executeTakeFirst();
      if (usedBy !== undefined) {
        throw new SvcError('payment_already_used', 'this payment already activated another session');
      }
      await store.db
        .updateTable('sessions')
        .set({ status: 'active', payment_id: payment.payment_id, activated_at: clock.now() })
        .where('session_id', '=', session.session_id)
        .where('status', '=', 'pending')
        .execute();
      await ctx.audit.record(userId, 'session_activated', client, { session_id: session.session_id, tier_id: session.tier_id });
      await ctx.audit.record(userId, 'deploy_token_issued', client, { session_id: session.session_id });
      return activationResult(session.session_id);
    });

  async function activationResult(sessionId: string): Promise<ActivateResponse> {
    const deployToken = await deployTokens.replaceForSession(sessionId);
    return {
      session_id: sessionId,
      status: 'active',
      deploy_token: deployToken.token,
      deploy_token_expires_at: isoTime(deployToken.expires_at),
      install_path: INSTALL_PATH,
      deploy_mode: DEPLOY_MODE,
    };
  }

  return {
    async createSession(input) {
      const now = clock.now();
      const sessionId = randomUUID();
      const userId = normalizeEmail(input.user_id);
      const expiresAt = now + PENDING_SESSION_LIFETIME_SECONDS * 1000;
      await store.db
        .insertInto('sessions')
        .values({
          session_id: sessionId,
          tier_id: input.tier_id,
          user_id: userId,
          status: 'pending',
          payment_id: null,
          created_at: now,
          expires_at: expiresAt,
          activated_at: null,
        })
        .execute();
      return { session_id: sessionId, tier_id: input.tier_id, user_id: userId, status: 'pending', expires_at: isoTime(expiresAt) };
    },

    async activateSession(input, userId, client) {
      const sessionId = input.session_id.toLowerCase();
      // Activation gives the deploy token once (docs/api.md "activate"): ids alone never mint another.
      if ((await liveSession(sessionId, userId)).status === 'active') throw alreadyActive();
      const payment = await resolvePayment(input.payment_id);
      return activateWithPayment(sessionId, userId, payment, client);
    },
  };
}

/**
 * An active session gave its deploy token when it was activated; another comes from the signed-in user's deploy-token
 * endpoint (a recent sign-in), never from the session's ids again.
 */
function alreadyActive(): SvcError {
  return new SvcError('session_already_active', 'this session is active already: its deploy token was given when it was activated', {
    remedy:
      'For another node, sign in (swarm-node login) and let the host ask for its deploy token (on it: swarm-node enroll, or sudo swarm-node install), or POST /v1/swarm/nodes/deploy-token.',
  });
}

function noNodeInstall(tierId: TierId): SvcError {
  const withNodes = TIER_IDS.filter((id) => TIERS[id].node_install);
  return new SvcError('forbidden', `a ${tierId} payment tops up the wallet and installs no node; ${withNodes.join(' and ')} do`, {
    remedy: `Its credit is already in the wallet; to install a node, buy ${withNodes.join(' or ')} and activate a session of that tier.`,
  });
}
