// Requests Node's HTTP parser refuses before any route sees them still answer as problem details (docs/api.md
// "Error codes"): sent over a raw socket, since no HTTP client would send them.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { apiClient } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';

interface RawResponse {
  statusLine: string;
  headers: Map<string, string>;
  body: string;
}

/** Writes `request` as it is and reads until the service closes the connection. */
function sendRaw(baseUrl: string, request: string): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(request));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split === -1) return reject(new Error(`no HTTP response, got ${JSON.stringify(text)}`));
      const [statusLine, ...headerLines] = text.slice(0, split).split('\r\n');
      const headers = new Map(
        headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      resolve({ statusLine: statusLine!, headers, body: text.slice(split + 4) });
    });
  });
}

function expectProblem(response: RawResponse, status: number, code: string): void {
  expect(response.statusLine).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  expect(response.headers.get('connection')).toBe('close');
  expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(response.body));
  const problem = JSON.parse(response.body);
  expect(problem).toMatchObject({ type: `urn:svc:problem:${code}`, status, code });
  expect(typeof problem.detail).toBe('string');
  expect(typeof problem.remedy).toBe('string');
}

describe('requests the HTTP parser refuses', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startSvcApi();
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it('answers headers over 16 KiB with 431 headers_too_large as problem+json', async () => {
    const response = await sendRaw(
      service.baseUrl,
      `GET /v1/swarm/agents HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
    );
    expectProblem(response, 431, 'headers_too_large');
    expect(response.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(JSON.parse(response.body).detail).toBe('the request headers are larger than 16 KiB');
  });

  it('answers a garbage request line with 400 invalid_request as problem+json', async () => {
    const response = await sendRaw(service.baseUrl, 'THIS IS NOT HTTP\r\n\r\n');
    expectProblem(response, 400, 'invalid_request');
    expect(response.statusLine).toBe('HTTP/1.1 400 Bad Request');
  });

  it('answers a malformed header line with 400 and never echoes what it was sent', async () => {
    const response = await sendRaw(service.baseUrl, 'GET /v1/swarm/agents HTTP/1.1\r\nHost: localhost\r\nsecret-token-xyz\r\n\r\n');
    expectProblem(response, 400, 'invalid_request');
    expect(response.body).not.toContain('secret-token-xyz');
  });

  it('keeps serving well-formed requests afterwards', async () => {
    expect((await apiClient(service.baseUrl).get('/v1/swarm/agents')).status).toBe(200);
  });
});
