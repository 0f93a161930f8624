// How often one endpoint's deliveries may be re-sent (docs/api.md "Webhooks"): WEBHOOK_RESENDS_PER_MINUTE, the API's
// re-sends and the console's counting against one budget per endpoint, in one-minute windows aligned on the clock
// as the per-address budget's, per instance in memory for the same reasons (docs/api.md "Rate limit"). A re-send is a
// connection made when the user asks: unbounded, it would let any user have the service connect as fast as it asks.
import { SvcError } from '../../contract/errors.js';
import { WEBHOOK_RESENDS_PER_MINUTE } from '../../contract/webhooks.js';
import type { Clock } from '../../lib/clock.js';
import { createMemoryRateLimitStore, decide, rateLimitHeaders, windowStartOf } from '../http/rate-limit.js';

export interface ResendLimit {
  /**
   * Counts one re-send of `endpointId`'s deliveries and sets the RateLimit headers on its answer; throws 429
   * rate_limited (with Retry-After) beyond the minute's budget.
   */
  take(endpointId: string, reply: { headers(values: Record<string, string>): unknown }): void;
}

export function createResendLimit(clock: Clock): ResendLimit {
  const counts = createMemoryRateLimitStore();
  return {
    take(endpointId, reply) {
      const now = clock.now();
      const windowStart = windowStartOf(now);
      const decision = decide(counts.hit(endpointId, windowStart), WEBHOOK_RESENDS_PER_MINUTE, now, windowStart);
      reply.headers(rateLimitHeaders(WEBHOOK_RESENDS_PER_MINUTE, decision, 'webhook-resend'));
      if (!decision.allowed) {
        throw new SvcError('rate_limited', `more than ${WEBHOOK_RESENDS_PER_MINUTE} re-sends a minute of this endpoint's deliveries`, {
          retryAfterSeconds: decision.resetSeconds,
          remedy:
            `Wait ${decision.resetSeconds} seconds (Retry-After), then re-send; ` +
            'a delivery still pending is tried again by itself after its backoff.',
          extensions: { resends_per_minute: WEBHOOK_RESENDS_PER_MINUTE },
        });
      }
    },
  };
}
