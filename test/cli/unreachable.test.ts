// An unreachable service is reported as exit 6 in bounded time, whether the port is closed or the peer never answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import { swarmNode } from '../helpers/cli.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { signedInNode } from './fixtures.js';

const AGENT = 'agent_ops_monitor_004';

const service = useSvcApi();

describe('an unreachable service', () => {
  let blackhole: Server;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Accepts connections and never answers: the worst case for a client without deadlines.
    blackhole = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => blackhole.close(() => resolve()));
  });

  it('exits 6 quickly against a closed port, for every command that needs the service', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'closed' });
    const closed = { ...node.env, SVC_BASE_URL: 'http://127.0.0.1:9' };
    const commands = [
      ['whoami'],
      ['wallet'],
      ['docs'],
      ['register', AGENT],
      ['login', '--email', 'a@example.com', '--send-code'],
      ['logout'],
      ['audit'],
      ['activate', '--tier', 'svc_starter_agents', '--email', 'a@example.com', '--payment', 'pay_1'],
    ];
    // Side by side: each spends most of its time in the backoff between retries, not on the CPU.
    await Promise.all(
      commands.map(async (args) => {
        const started = Date.now();
        const result = await swarmNode(['--json', ...args], { env: closed });
        expect(Date.now() - started, args.join(' ')).toBeLessThan(20_000);
        expect(result.exitCode, `${args.join(' ')}: ${result.stdout}`).toBe(6);
        expect(result.json.error).toMatchObject({
          code: 'service_unreachable',
          message: expect.stringContaining('cannot reach the service at http://127.0.0.1:9'),
        });
        expect(result.stdout + result.stderr).not.toContain(node.token);
      }),
    );
  });

  it("an https:// URL for the plain-HTTP service: exit 6 saying so, with the http:// one, never OpenSSL's text", async () => {
    const node = await signedInNode(service.baseUrl, { label: 'https' });
    const https = service.baseUrl.replace(/^http:/, 'https:');
    const result = await swarmNode(['--json', '--base-url', https, 'whoami'], { env: node.env });
    expect(result.exitCode).toBe(6);
    expect(result.json.error.message).toBe(
      `cannot reach the service at ${https} (it does not answer TLS there: is it plain HTTP? then ${service.baseUrl})`,
    );
    expect(result.stdout + result.stderr).not.toMatch(/SSL routines|ssl3_|openssl/i);
  });

  // The deadline is timeout_seconds (default 15, which foundation.test.ts shows): 2 s here, so the test does not
  // spend 15 s waiting; what is under test is that a silent peer is given up on within the deadline.
  it('exits 6 within the timeout_seconds deadline when the service accepts but never answers', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'blackhole' });
    expect((await swarmNode(['config', 'set', 'timeout_seconds', '2'], { env: node.env })).exitCode).toBe(0);
    const address = blackhole.address() as { port: number };
    const started = Date.now();
    const result = await swarmNode(['--json', 'whoami'], {
      env: { ...node.env, SVC_BASE_URL: `http://127.0.0.1:${address.port}` },
      timeoutMs: 40_000,
    });
    const elapsed = Date.now() - started;
    expect(result.exitCode, result.stdout).toBe(6);
    expect(result.json.error.code).toBe('service_unreachable');
    expect(elapsed).toBeGreaterThan(1_900);
    expect(elapsed).toBeLessThan(12_000);
  }, 45_000);
});
