// Whether a domain can receive mail, by DNS (RFC 5321 §5.1): its MX records; with none, its own A or AAAA record
// (the implicit MX); a "null MX" (RFC 7505: one MX of "." ) says it takes no mail. Asked once per domain, a few
// at a time, each bounded in time; a resolver that does not answer leaves the domain unknown, not refused.
import { Resolver } from 'node:dns/promises';
import { InputError } from './agent-io.mjs';

const TIMEOUT_MS = 4_000;
const TRIES = 2;
const CONCURRENCY = 8;
const SERVER = /^(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\])(?::\d{1,5})?$/;

/** A checker over `servers` (IP[:port] each; none: the host's resolvers) answering `{ok, mx?, problem?}` per domain. */
export function mxChecker(servers) {
  const resolver = new Resolver({ timeout: TIMEOUT_MS, tries: TRIES });
  if (servers !== undefined) {
    if (!Array.isArray(servers) || servers.length === 0 || servers.length > 4 || !servers.every((server) => typeof server === 'string' && SERVER.test(server))) {
      throw new InputError('dns_servers: must be 1 to 4 resolvers as IP or IP:port ("127.0.0.1:5353", "[::1]:53")');
    }
    resolver.setServers(servers);
  }
  const known = new Map();
  const lookup = async (domain) => {
    try {
      const records = await resolver.resolveMx(domain);
      if (records.length === 1 && (records[0].exchange === '' || records[0].exchange === '.')) return { ok: false, problem: `${domain} takes no mail (null MX, RFC 7505)` };
      if (records.length > 0) return { ok: true, mx: records.sort((a, b) => a.priority - b.priority)[0].exchange };
    } catch (error) {
      if (error.code !== 'ENODATA' && error.code !== 'ENOTFOUND') return { ok: null, problem: `the DNS did not answer for ${domain} (${error.code})` };
    }
    // No MX: mail goes to the domain's own address, when it has one. (Some servers answer a name that has only an
    // address NXDOMAIN for its MX, so that answer is checked against the address too.)
    let exists = false;
    for (const type of ['A', 'AAAA']) {
      try {
        if ((await resolver.resolve(domain, type)).length > 0) return { ok: true, mx: domain };
      } catch (error) {
        if (error.code === 'ENODATA') exists = true;
        else if (error.code !== 'ENOTFOUND') return { ok: null, problem: `the DNS did not answer for ${domain} (${error.code})` };
      }
    }
    return { ok: false, problem: exists ? `${domain} has no MX record and no address to take mail` : `${domain} does not exist (DNS: NXDOMAIN)` };
  };
  return {
    /** Checks each domain of `domains` not asked yet, CONCURRENCY at a time. */
    async prefetch(domains) {
      const queue = [...new Set(domains)].filter((domain) => !known.has(domain));
      const workers = Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
        while (queue.length > 0) {
          const domain = queue.shift();
          known.set(domain, await lookup(domain));
        }
      });
      await Promise.all(workers);
    },
    verdict(domain) {
      return known.get(domain) ?? null;
    },
    get asked() {
      return known.size;
    },
  };
}
