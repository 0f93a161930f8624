// A loopback TCP proxy a test can cut: the database "going away" (a network cut, a server restart) without
// stopping the tests' shared PostgreSQL server. While cut, every connection through it is closed at once.
import { createServer, connect, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Closes every connection through the proxy and refuses new ones until restore(). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    if (cut) return void client.destroy();
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    restore() {
      cut = false;
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
