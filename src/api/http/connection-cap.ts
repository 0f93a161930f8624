// A cap on the connections one client address may hold open at once (docs/api.md "Conventions"): one host opening
// thousands (stalled bodies, idle keep-alives) would otherwise take the file descriptors and memory every other
// client needs. A connection over the cap is closed as soon as it is accepted, before a byte of it is read: there is
// no request yet to answer, and answering would cost what the cap saves; clients retry a reset connection as any
// network failure. Addresses of the proxies named by --trust-proxy are not capped: behind a proxy every client
// arrives from it, and the cap belongs at the proxy.
import type { Server } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import type { TrustProxy } from './trust-proxy.js';

/** Generous: a person, a script or a node holds a few; a fleet of ~100 nodes behind one NAT address, ~250. */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;

export interface ConnectionCapOptions {
  /** 0: no cap. */
  max: number;
  trustProxy: TrustProxy;
  /** Told of each refused connection's address, at most once a minute per address. */
  onRefused(address: string, open: number): void;
}

export function capConnectionsPerAddress(server: Server, options: ConnectionCapOptions): void {
  if (options.max <= 0) return;
  const trusted =
    options.trustProxy === true ? () => true : options.trustProxy === false ? () => false : proxyAddr.compile(options.trustProxy);
  const open = new Map<string, number>();
  const toldAt = new Map<string, number>();
  server.on('connection', (socket) => {
    const address = socket.remoteAddress;
    if (address === undefined || trusted(address, 0)) return;
    const count = open.get(address) ?? 0;
    if (count >= options.max) {
      socket.destroy();
      const now = Date.now();
      if ((toldAt.get(address) ?? 0) <= now - 60_000) {
        toldAt.set(address, now);
        // Bounded like the counts: addresses told of within the last minute.
        for (const [told, at] of toldAt) if (at <= now - 60_000) toldAt.delete(told);
        options.onRefused(address, count);
      }
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
