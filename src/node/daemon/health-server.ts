// The daemon's health listener (daemon --health-addr, config health_addr): GET /healthz answers 200 or 503 with what
// is wrong, GET /metrics the Prometheus text. Node's own http: two routes need no framework, and the daemon's memory
// stays its own. Off unless asked for; a bare port listens on loopback only (src/node/host/config.ts parseHealthAddr).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import { DaemonHealth } from './health.js';

/** The daemon's health and its listener, started together. */
export async function openHealthEndpoint(
  at: { host: string; port: number },
  tickMs: number,
  clock: Clock,
): Promise<HealthServer & { health: DaemonHealth }> {
  const health = new DaemonHealth({ tickMs, now: () => clock.now() });
  try {
    return { health, ...(await startHealthServer(health, at)) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new SvcError('usage', `cannot listen on ${at.host}:${at.port} for the health endpoint (${code})`, {
      remedy: `Choose another port (swarm-node config set health_addr 127.0.0.1:${at.port === 65535 ? 9465 : at.port + 1}), or turn it off (swarm-node config set health_addr off).`,
    });
  }
}

export interface HealthServer {
  /** host:port it listens on (the port chosen when 0 was asked for). */
  address: string;
  close(): Promise<void>;
}

export async function startHealthServer(health: DaemonHealth, at: { host: string; port: number }): Promise<HealthServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('only GET\n');
      return;
    }
    if (path === '/healthz') {
      const report = health.report();
      response
        .writeHead(report.healthy ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(`${JSON.stringify(report)}\n`);
      return;
    }
    if (path === '/metrics') {
      health.registry.metrics().then(
        (text) => response.writeHead(200, { 'content-type': health.registry.contentType }).end(text),
        () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
      );
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('GET /healthz or /metrics\n');
  });
  // Nobody's scrape holds the daemon's stop: connections are closed with the server.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  return {
    address: `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
