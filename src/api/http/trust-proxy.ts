// svc-api --trust-proxy (docs/api.md "Rate limit"): which peers may name the client in X-Forwarded-For. Without it
// the header is ignored, so a client cannot pick its own address and escape its rate-limit budget; behind a proxy,
// though, every client would then share the proxy's one budget, which is why the operator names the proxy here.
import { isIP } from 'node:net';

/** What fastify's `trustProxy` takes, in the forms we accept. */
export type TrustProxy = boolean | string[];

/** proxy-addr's names for whole ranges (fastify hands the list to it). */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * `true`, `false`, or a comma-separated list of addresses, CIDRs and range names. A hop count is refused: it trusts
 * whichever peer connects, so a client reaching the port directly could forge its address (fastify ignores hop
 * counts for that reason, which would leave the flag silently doing nothing).
 */
export function parseTrustProxy(value: string): TrustProxy {
  const text = value.trim();
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (/^\d+$/.test(text)) {
    throw new Error(
      `--trust-proxy takes the proxy's address, not a hop count (${text}): a hop count would trust any client that connects directly; name the proxy, for example --trust-proxy 127.0.0.1`,
    );
  }
  const entries = text.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (!isTrustedPeer(entry)) {
      throw new Error(
        `--trust-proxy: ${JSON.stringify(entry)} is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal`,
      );
    }
  }
  return entries;
}

function isTrustedPeer(entry: string): boolean {
  if (RANGE_NAMES.has(entry)) return true;
  const slash = entry.indexOf('/');
  if (slash === -1) return isIP(entry) !== 0;
  const version = isIP(entry.slice(0, slash));
  const prefix = entry.slice(slash + 1);
  if (version === 0 || !/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (version === 4 ? 32 : 128);
}
