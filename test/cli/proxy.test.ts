// A node that reaches the service only through a proxy: the client honours http_proxy/no_proxy, as install
// writes them into the service's environment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { nodeEnv, swarmNode } from '../helpers/cli.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { signedInNode } from './fixtures.js';

describe('the service client behind a proxy', () => {
  const service = useSvcApi();
  let proxy: Server;
  let proxyUrl: string;
  const tunnels: string[] = [];

  beforeAll(async () => {
    // A real forward proxy: CONNECT tunnels to the target, and records where each went.
    proxy = createServer((_request, response) => response.writeHead(405).end());
    proxy.on('connect', (request, client, head) => {
      tunnels.push(request.url ?? '');
      const [host, port] = (request.url ?? '').split(':');
      const upstream = connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => proxy.close(resolve));
  });

  it('goes through http_proxy, and around it for a host in no_proxy', async () => {
    const target = new URL(service.baseUrl).host;
    const { env } = nodeEnv(service.baseUrl);
    const proxied = await swarmNode(['--json', 'agents'], {
      env: { ...env, http_proxy: proxyUrl, HTTP_PROXY: '', no_proxy: '', NO_PROXY: '' },
    });
    expect(proxied.exitCode, proxied.stderr).toBe(0);
    expect(proxied.json.source).toBe('service');
    expect(tunnels).toContain(target);

    tunnels.length = 0;
    const bypassed = await swarmNode(['--json', 'agents'], { env: { ...env, http_proxy: proxyUrl, no_proxy: '127.0.0.1', NO_PROXY: '' } });
    expect(bypassed.json.source).toBe('service');
    expect(tunnels).toEqual([]);
  });

  it('a proxy that refuses the tunnel is exit 6, naming the proxy and its answer, in bounded time', async () => {
    const refusing = createServer((_request, response) => response.writeHead(405).end());
    refusing.on('connect', (_request, client) => client.end('HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n'));
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    try {
      const node = await signedInNode(service.baseUrl, { label: 'proxy-refused' });
      const refusedAt = `127.0.0.1:${(refusing.address() as AddressInfo).port}`;
      const wallet = await swarmNode(['--json', 'wallet'], {
        env: { ...node.env, http_proxy: `http://${refusedAt}`, no_proxy: '', NO_PROXY: '' },
      });
      expect(wallet.exitCode, wallet.stderr).toBe(6);
      expect(wallet.json.error.code).toBe('service_unreachable');
      expect(wallet.json.error.message).toContain(`the proxy at ${refusedAt} refused a tunnel to ${new URL(service.baseUrl).host} (407)`);
      expect(wallet.stdout + wallet.stderr).not.toContain(node.token);
    } finally {
      await new Promise((resolve) => refusing.close(resolve));
    }
  });
});
