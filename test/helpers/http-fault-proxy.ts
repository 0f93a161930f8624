// A loopback HTTP proxy in front of the service that refuses the requests a test names (a path pattern) with a
// status of its choosing while told to, and counts them: a service that answers polls but cannot take results,
// without touching the service. Everything else is passed through as it is.
import { createServer, request as forward, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpFaultProxy {
  baseUrl: string;
  /** Refuses requests whose path matches `path` with `status` until heal(); counts them. */
  fail(path: RegExp, status: number): void;
  heal(): void;
  /** Requests refused so far. */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startHttpFaultProxy(target: string): Promise<HttpFaultProxy> {
  const upstream = new URL(target);
  let failing: { path: RegExp; status: number } | undefined;
  let refused = 0;
  const server: Server = createServer((incoming, outgoing) => {
    if (failing !== undefined && failing.path.test(incoming.url ?? '')) {
      refused += 1;
      incoming.resume();
      const body = JSON.stringify({
        type: 'about:blank',
        title: 'injected fault',
        status: failing.status,
        code: 'internal',
        detail: 'refused by the test proxy',
      });
      outgoing.writeHead(failing.status, { 'content-type': 'application/problem+json' }).end(body);
      return;
    }
    passTo(upstream, incoming, outgoing);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    fail(path, status) {
      failing = { path, status };
    },
    heal() {
      failing = undefined;
    },
    get refused() {
      return refused;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** `incoming` sent on to the service at `upstream` as it came (or with `body`, read already), its answer passed back. */
export function passTo(upstream: URL, incoming: IncomingMessage, outgoing: ServerResponse, body?: Buffer): void {
  const proxied = forward(
    { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
    (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    },
  );
  proxied.on('error', () => outgoing.destroy());
  if (body === undefined) incoming.pipe(proxied);
  else proxied.end(body);
}
