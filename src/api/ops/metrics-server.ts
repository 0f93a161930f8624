// GET /metrics on a listener of its own (svc-api --metrics-listen), never on the API's port: the figures (runs,
// money charged, nodes) are the operator's, and the API's port is the public one behind the reverse proxy. A second
// address lets the firewall or the bind address keep Prometheus' scrape private without a credential to manage
// (docs/api.md "Operations"). Plain node:http: one path, no body, nothing of the API's machinery needed.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

export const METRICS_PATH = '/metrics';

export interface ListenAddress {
  host: string;
  port: number;
}

export interface MetricsServer {
  /** http://host:port/metrics, with the port bound (also when 0 was asked). */
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(
  address: ListenAddress,
  registry: Registry,
  log: { error(details: object, message: string): void },
): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== METRICS_PATH) return answer(response, 404, 'not found: metrics are at /metrics\n');
    if (request.method !== 'GET' && request.method !== 'HEAD') return answer(response, 405, 'GET only\n', { allow: 'GET, HEAD' });
    registry.metrics().then(
      (text) => answer(response, 200, request.method === 'HEAD' ? '' : text, { 'content-type': registry.contentType }),
      (error: unknown) => {
        log.error({ err: error }, 'metrics scrape failed');
        answer(response, 500, 'the metrics could not be collected; see the service log\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : address.port;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    url: `http://${host}:${port}${METRICS_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
  response.end(body);
}

/** `host:port` or `[v6]:port`, as --metrics-listen and SVC_METRICS_LISTEN take it; throws a sentence when it is not. */
export function parseListenAddress(text: string): ListenAddress {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(text.trim());
  const port = match === null ? Number.NaN : Number(match[3]);
  if (match === null || port > 65535) {
    throw new Error(`must be HOST:PORT (for example 127.0.0.1:9464, or [::1]:9464), got "${text}"`);
  }
  return { host: match[1] ?? match[2]!, port };
}
