// HTTP written by hand on a TCP connection to the service under test: what no HTTP client would send (a body that
// stops, a head that never ends, a reset), and what the service wrote back and when it closed.
import { connect, type Socket } from 'node:net';

/** A raw connection to `baseUrl`, with what the service wrote on it and whether it closed. */
export interface RawConnection {
  socket: Socket;
  received(): string;
  /** Resolves once the connection closed, whoever closed it. */
  closed: Promise<void>;
  readonly isClosed: boolean;
}

export function rawConnection(baseUrl: string): Promise<RawConnection> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let text = '';
    let isClosed = false;
    const socket = connect({ host: hostname, port: Number(port) });
    const closed = new Promise<void>((done) =>
      socket.once('close', () => {
        isClosed = true;
        done();
      }),
    );
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    socket.on('error', () => undefined); // a reset is an outcome the tests look at, through `closed`
    socket.once('connect', () =>
      resolve({
        socket,
        received: () => text,
        closed,
        get isClosed() {
          return isClosed;
        },
      }),
    );
    socket.once('error', reject);
  });
}

/** A request's head, up to the blank line; a body, if any, is the caller's to write. */
export function requestHead(method: string, path: string, headers: Record<string, string | number> = {}): string {
  const lines = Object.entries({ host: 'svc', ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${method} ${path} HTTP/1.1\r\n${lines.join('')}\r\n`;
}
