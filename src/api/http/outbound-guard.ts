// Where the service may connect when a URL comes from a user (docs/api.md "Webhooks", docs/operations.md "Webhooks"):
// public unicast addresses only, unless the operator allows private ones (svc-api --webhook-allow-private). Judged
// before connecting, never after: the name is resolved here, every address it has is judged, and the connection is
// handed only the allowed ones, so it goes to an address that was checked (no second resolution for DNS rebinding to
// answer) while the name stays the TLS server name and the Host. An address written in the URL is judged as written.
// Every connection to a URL a user gave goes through guardedConnection: node:https, tls.connect and an undici Agent's
// `connect` all take its `lookup`.
import { lookup as resolve, type LookupAddress, type LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface OutboundPolicy {
  /** Private, loopback and link-local addresses too: receivers on the service's own network, and tests. */
  allowPrivate: boolean;
}

/**
 * A connection refused before it was made. Its message names the address, for the operator's log; what a user is
 * shown must not tell it from a port that is closed (docs/api.md "Webhooks").
 */
export class OutboundRefused extends Error {
  readonly code = 'EOUTBOUNDREFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

/** Never a destination, even where the operator allows private addresses. */
const NEVER = ['unspecified', 'broadcast', 'multicast'];

/**
 * The IPv4 address an IPv6 one carries, when it is of a form that stands for it: IPv4-compatible (::/96, but :: and
 * ::1 are IPv6's own), IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96), 6to4
 * (2002::/16, the address in its bits 16 to 47). ipaddr.js calls ::7f00:1 (what a URL makes of [::127.0.0.1])
 * unicast, and NAT64 and 6to4 forms neither public nor private.
 */
function carriedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  const ipv4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const zeroes = (from: number, to: number) => p.slice(from, to).every((part) => part === 0);
  if (zeroes(0, 5) && p[5] === 0xffff) return ipv4(p[6]!, p[7]!);
  if (zeroes(0, 4) && p[4] === 0xffff && p[5] === 0) return ipv4(p[6]!, p[7]!);
  if (zeroes(0, 6) && !(p[6] === 0 && p[7]! <= 1)) return ipv4(p[6]!, p[7]!);
  if (p[0] === 0x64 && p[1] === 0xff9b && zeroes(2, 6)) return ipv4(p[6]!, p[7]!);
  if (p[0] === 0x2002) return ipv4(p[1]!, p[2]!);
  return undefined;
}

/** Why a connection to `address` is refused; undefined when it may be made. */
export function addressRefusal(address: string, policy: OutboundPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.parse(address);
  const carried = parsed.kind() === 'ipv6' ? carriedIpv4(parsed as ipaddr.IPv6) : undefined;
  const judged = carried ?? parsed;
  const range = judged.range();
  if (range === 'unicast') return undefined;
  // A private receiver is the operator's to allow; an address nothing can be delivered to never is.
  if (policy.allowPrivate && !NEVER.includes(range)) return undefined;
  const what = carried === undefined ? `${parsed.toString()} is` : `${parsed.toString()} carries ${carried.toString()},`;
  return `${what} a ${range} address; only public addresses are reached (svc-api --webhook-allow-private allows others)`;
}

/** The address a URL's host is written as, if it is one (URL.hostname keeps IPv6 in brackets). */
export function literalAddressOf(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}

/**
 * A resolver for net and tls: every address of the name, judged, and only the allowed ones handed back, in the
 * resolver's order (the connection tries them as it would have). None allowed is an OutboundRefused.
 */
export function guardedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options: LookupOptions, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error !== null) {
        callback(error, '', 0);
        return;
      }
      const refusals: string[] = [];
      const allowed = addresses.filter((entry) => {
        const refusal = addressRefusal(entry.address, policy);
        if (refusal !== undefined) refusals.push(refusal);
        return refusal === undefined;
      });
      if (allowed.length === 0) {
        callback(new OutboundRefused(`${hostname}: ${refusals.join('; ') || 'no address'}`), '', 0);
      } else if (options.all === true) {
        callback(null, allowed);
      } else {
        callback(null, allowed[0]!.address, allowed[0]!.family);
      }
    });
  };
}

/**
 * The connection options that keep a connection to `url` to the addresses the policy allows: the guarded lookup for
 * a name (net never calls a lookup for an address, so an address is judged here). Throws OutboundRefused before
 * anything is connected.
 */
export function guardedConnection(url: URL, policy: OutboundPolicy): { lookup: LookupFunction } {
  const literal = literalAddressOf(url.hostname);
  const refusal = literal === undefined ? undefined : addressRefusal(literal, policy);
  if (refusal !== undefined) throw new OutboundRefused(refusal);
  return { lookup: guardedLookup(policy) };
}
