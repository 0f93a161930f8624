// A webhook receiver for the tests: a real HTTPS server on 127.0.0.1 with a self-signed certificate made by openssl
// for localhost and 127.0.0.1, recording every request, answering each with what the test queued (200 by default).
// And a bare TCP port that only counts what reaches it, for what must reach nothing.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { tempDir } from './temp.js';
import { waitFor } from './wait.js';

export interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The TLS server name the client sent (SNI); false when it sent none. */
  servername: string | false;
}

export interface HttpsReceiver {
  /** https://127.0.0.1:PORT */
  url: string;
  port: number;
  /** The certificate the service must trust (svc-api --webhook-ca-file). */
  certPem: string;
  received: Received[];
  /** The next answers, in order; then 200. */
  answerWith(...answers: Array<{ status: number; body?: string; headers?: Record<string, string> }>): void;
  /** Resolves once `count` requests came in. */
  waitForCount(count: number, what?: string): Promise<Received[]>;
  close(): Promise<void>;
}

/** A certificate for localhost and 127.0.0.1, made once per process with openssl. */
let made: { key: string; cert: string } | undefined;
export function selfSignedCertificate(): { key: string; cert: string } {
  if (made !== undefined) return made;
  const dir = tempDir('webhook-cert-');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  made = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  return made;
}

export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const { key, cert } = selfSignedCertificate();
  const received: Received[] = [];
  const answers: Array<{ status: number; body?: string; headers?: Record<string, string> }> = [];
  const server: Server = createServer({ key, cert }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const servername = (request.socket as TLSSocket).servername ?? false;
      received.push({ path: request.url ?? '/', headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), servername });
      const answer = answers.shift() ?? { status: 200, body: 'ok' };
      response.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      response.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    certPem: cert,
    received,
    answerWith: (...given) => answers.push(...given),
    waitForCount: (count, what = `${count} deliveries`) =>
      waitFor(async () => (received.length >= count ? received.slice() : undefined), what, 20_000),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface ByteCounter {
  port: number;
  /** Connections accepted and bytes read, all told. */
  readonly connections: number;
  readonly bytes: number;
  close(): Promise<void>;
}

/** A TCP port on 127.0.0.1 that answers nothing and counts every connection and byte that reaches it. */
export async function startByteCounter(): Promise<ByteCounter> {
  let connections = 0;
  let bytes = 0;
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    get bytes() {
      return bytes;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A port of 127.0.0.1 nothing listens on: bound, then closed. */
export async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
