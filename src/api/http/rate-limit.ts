// `rate_limited`, docs/api.md "Rate limit": ONE budget per client address, shared by every route
// that opts in (`config: { rateLimited: true }`: auth, paygate, enroll, the wallet page's sign-in and funding), so
// spreading a flood over several endpoints buys nothing. Counted in fixed one-minute windows aligned on the clock,
// so that several service instances sharing one store (a later database-backed one) agree on the window without
// talking to each other. Headers: draft-ietf-httpapi-ratelimit-headers, structured-field form.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Counts the request against its client address's shared budget (src/api/rate-limit.ts). */
    rateLimited?: boolean;
  }
}

export const RATE_LIMIT_WINDOW_MS = 60_000;
const POLICY_NAME = 'default';

/** Counts hits per key and window. In memory now; the interface is what a store shared by several instances implements. */
export interface RateLimitStore {
  /** Adds one hit to `key` in the window that starts at `windowStartMs`; returns that window's count, this hit included. */
  hit(key: string, windowStartMs: number): number | Promise<number>;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** Requests left in this window (0 once refused). */
  remaining: number;
  /** Whole seconds until the window resets: `t` of the RateLimit header and Retry-After. */
  resetSeconds: number;
}

export function windowStartOf(nowMs: number): number {
  return nowMs - (nowMs % RATE_LIMIT_WINDOW_MS);
}

/** The verdict on the `count`th request of the window that started at `windowStartMs`. */
export function decide(count: number, limit: number, nowMs: number, windowStartMs: number): RateLimitDecision {
  return {
    allowed: count <= limit,
    remaining: Math.max(0, limit - count),
    // Never 0: a client told "retry in 0 s" at the very end of a window would spin.
    resetSeconds: Math.max(1, Math.ceil((windowStartMs + RATE_LIMIT_WINDOW_MS - nowMs) / 1000)),
  };
}

/** `policy` names a budget other than the per-address one (the re-sends of a webhook endpoint's deliveries). */
export function rateLimitHeaders(limit: number, decision: RateLimitDecision, policy = POLICY_NAME): Record<string, string> {
  return {
    'ratelimit-policy': `"${policy}";q=${limit};w=${RATE_LIMIT_WINDOW_MS / 1000}`,
    ratelimit: `"${policy}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

export interface MemoryRateLimitStore extends RateLimitStore {
  hit(key: string, windowStartMs: number): number;
  /** Keys held across the windows kept, to show that memory stays bounded. */
  size(): number;
}

/**
 * Counts in memory, per window. A window is dropped as soon as a later one gets its first hit (no request can
 * count in a past window any more), so memory holds one minute's distinct addresses, however long the service runs.
 */
export function createMemoryRateLimitStore(): MemoryRateLimitStore {
  const windows = new Map<number, Map<string, number>>();
  return {
    size() {
      let keys = 0;
      for (const counts of windows.values()) keys += counts.size;
      return keys;
    },
    hit(key, windowStartMs) {
      let counts = windows.get(windowStartMs);
      if (counts === undefined) {
        for (const start of windows.keys()) if (start < windowStartMs) windows.delete(start);
        windows.set(windowStartMs, (counts = new Map()));
      }
      const count = (counts.get(key) ?? 0) + 1;
      counts.set(key, count);
      return count;
    },
  };
}

export interface RateLimitOptions {
  limitPerMinute: number;
  clock: Clock;
  store: RateLimitStore;
}

/**
 * An onRequest hook for the root instance: it runs before the body is read, so oversized, malformed and refused
 * requests all count. The headers go on every response of a limited route, errors included; a refusal is thrown as
 * `rate_limited` so that each scope's own error handler renders it (problem+json, or the wallet page's HTML page).
 */
export function rateLimitHook(options: RateLimitOptions): onRequestHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config?.rateLimited !== true) return;
    const now = options.clock.now();
    const windowStart = windowStartOf(now);
    // request.ip is the socket's peer unless svc-api --trust-proxy names the proxy in front (docs/api.md).
    const count = await options.store.hit(request.ip, windowStart);
    const decision = decide(count, options.limitPerMinute, now, windowStart);
    reply.headers(rateLimitHeaders(options.limitPerMinute, decision));
    if (!decision.allowed) {
      throw new SvcError('rate_limited', `more than ${options.limitPerMinute} requests a minute from this address`, {
        retryAfterSeconds: decision.resetSeconds,
      });
    }
  };
}
