// Where a webhook may be delivered (docs/api.md "Webhooks"): public unicast addresses only, unless the operator
// allows private ones (svc-api --webhook-allow-private). The check is made on the address a delivery connects to
// (deliver.ts), after DNS, so a name that resolves to 127.0.0.1 or 169.254.169.254 (or is re-pointed there after
// the endpoint was registered) is refused as a literal one is. ipaddr.js (proxy-addr's) knows the special ranges:
// loopback, private, link-local, carrier-grade NAT, unique local, multicast, reserved, and IPv4 inside IPv6.
import ipaddr from 'ipaddr.js';

/** Why a delivery may not connect to `address`; undefined when it may. */
export function addressRefusal(address: string, allowPrivate: boolean): string | undefined {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  // ::ffff:127.0.0.1 is 127.0.0.1.
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  // A private receiver is the operator's to allow; an address nothing can be delivered to never is.
  if (allowPrivate && !['unspecified', 'broadcast', 'multicast'].includes(range)) return undefined;
  return `${parsed.toString()} is a ${range} address; webhooks go to public addresses only (svc-api --webhook-allow-private allows others)`;
}

/** Whether a URL's host is written as an IP address (URL.hostname keeps IPv6 in brackets). */
export function literalAddressOf(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}
