import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_SKUS } from '../../src/contract/agents.js';
import type { TestService } from '../helpers/svc-api.js';
import { apiClient } from '../helpers/http.js';
import { spawnSvcApi, startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';

describe('svc-api foundation', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startSvcApi();
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it('serves the SKU catalog with the spec prices in integer cents', async () => {
    const response = await apiClient(service.baseUrl).get('/v1/swarm/agents');
    expect(response.status).toBe(200);
    expect(response.body).toEqual(AGENT_SKUS);
    expect(response.body.map((a: { price_cents: number }) => a.price_cents)).toEqual([12, 8, 5, 15, 4]);
  });

  it('answers an unknown route with problem details', async () => {
    const response = await apiClient(service.baseUrl).post('/v1/nothing-here', {});
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 404, code: 'not_found', type: 'urn:svc:problem:not_found' });
  });

  it('answers a too-long or badly encoded path with problem details that do not echo it', async () => {
    const long = await apiClient(service.baseUrl).get(`/sandbox/payments/pay_${'x'.repeat(300)}`);
    expect(long.status).toBe(404);
    expect(long.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(long.body.code).toBe('not_found');
    expect(long.text).not.toContain('xxxxxxxxxx');
    const bad = await apiClient(service.baseUrl).get('/sandbox/payments/%E0%A4%A');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_request');
  });

  it('refuses a text/plain body with 415 (authenticated routes check the token first)', async () => {
    for (const path of ['/sandbox/payments', '/v1/auth/issue-token', '/v1/swarm/paygate/session', '/v1/payments/webhook']) {
      const response = await fetch(`${service.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'hello',
      });
      expect(response.status, path).toBe(415);
      expect(((await response.json()) as { code: string }).code).toBe('unsupported_media_type');
    }
  });

  it('generates its secrets into the data dir, readable by the owner only', () => {
    for (const name of ['jwt-secret', 'webhook-secret', 'secrets-key']) {
      expect(statSync(join(dataDirOf(service), name)).mode & 0o777).toBe(0o600);
    }
  });
});

function dataDirOf(service: TestService): string {
  return service.db.name.replace(/\/svc-api\.db$/, '');
}

describe('svc-api binary', () => {
  it('prints its ready line, serves, and exits 0 on SIGTERM', async () => {
    const api = await spawnSvcApi();
    expect(api.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await apiClient(api.baseUrl).get('/v1/swarm/agents');
    expect(response.status).toBe(200);
    api.process.kill('SIGTERM');
    const result = await api.process;
    expect(result.exitCode).toBe(0);
    removeTempDirs();
  });
});
