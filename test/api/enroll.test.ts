import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { MovableClock } from '../helpers/clock.js';
import { activatedSession } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { UUID_V4, dbSnapshot, rowCount } from './support/paygate-support.js';

describe('POST /v1/swarm/nodes/enroll', () => {
  let service: TestService;
  let clock: MovableClock;
  let url: string;

  beforeAll(async () => {
    clock = new MovableClock();
    service = await startSvcApi({ clock });
    url = `${service.baseUrl}/v1/swarm/nodes/enroll`;
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  const enroll = (token: string, init: { rawBody?: string; headers?: Record<string, string> } = {}) =>
    httpRequest(url, { method: 'POST', token, ...init });

  function expectInvalid(response: Awaited<ReturnType<typeof enroll>>, token?: string): void {
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(response.body.code).toBe('deploy_token_invalid');
    expect(response.body.detail).toBe('the deploy token is unknown, expired, revoked or already used');
    if (token !== undefined) expect(response.text.includes(token)).toBe(false);
  }

  it('enrolls a node once with the deploy token and records it', async () => {
    const email = uniqueEmail('node');
    const { session_id, deploy_token } = await activatedSession(service.baseUrl, email);
    const response = await enroll(deploy_token);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      node_id: expect.stringMatching(UUID_V4),
      node_credential: expect.stringMatching(/^svcn_[A-Za-z0-9_-]{43}$/),
      user_id: email,
      tier_id: 'svc_starter_agents',
      install_path: '/opt/svc/swarm-node',
      deploy_mode: 'bare_metal',
    });
    expect(service.db.prepare('SELECT session_id, user_id, tier_id, credential_hash FROM nodes WHERE node_id = ?').get(response.body.node_id)).toEqual({
      session_id,
      user_id: email,
      tier_id: 'svc_starter_agents',
      // Only the credential's SHA-256 is kept: a copy of the database authenticates no node.
      credential_hash: createHash('sha256').update(response.body.node_credential).digest('hex'),
    });
    expect(JSON.stringify(dbSnapshot(service.db))).not.toContain(response.body.node_credential);

    const before = dbSnapshot(service.db);
    expectInvalid(await enroll(deploy_token), deploy_token);
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it.each([
    ['no body, no content type', {}],
    ['an empty body sent as application/json', { rawBody: '', headers: { 'content-type': 'application/json' } }],
    ['a JSON body, which is ignored', { rawBody: '{"hostname":"box-1"}', headers: { 'content-type': 'application/json' } }],
  ])('accepts %s', async (_label, init) => {
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('body'));
    const response = await enroll(deploy_token, init);
    expect(response.status, response.text).toBe(200);
  });

  it('refuses a text/plain body with 415 and keeps the token usable', async () => {
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('text'));
    const before = dbSnapshot(service.db);
    const response = await enroll(deploy_token, { rawBody: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(415);
    expect(response.body.code).toBe('unsupported_media_type');
    expect(dbSnapshot(service.db)).toEqual(before);
    expect((await enroll(deploy_token)).status).toBe(200);
  });

  it('refuses a token past its 15 minutes, accepts it just before', async () => {
    const early = await activatedSession(service.baseUrl, uniqueEmail('early'));
    const late = await activatedSession(service.baseUrl, uniqueEmail('late'));
    clock.advance(15 * 60 * 1000 - 5_000);
    try {
      expect((await enroll(early.deploy_token)).status).toBe(200);
      clock.advance(5_001);
      const before = dbSnapshot(service.db);
      expectInvalid(await enroll(late.deploy_token), late.deploy_token);
      expect(dbSnapshot(service.db)).toEqual(before);
    } finally {
      clock.advance(-(15 * 60 * 1000 + 1));
    }
  });

  it('refuses a token revoked by a re-activation', async () => {
    const email = uniqueEmail('revoked');
    const first = await activatedSession(service.baseUrl, email);
    const again = await apiClient(service.baseUrl).post('/v1/swarm/paygate/activate', {
      session_id: first.session_id,
      payment_id: first.payment_id,
    });
    expect(again.status).toBe(200);
    expectInvalid(await enroll(first.deploy_token), first.deploy_token);
    expect((await enroll(again.body.deploy_token)).status).toBe(200);
  });

  it.each([
    ['no Authorization header', undefined],
    ['an unknown token', { authorization: 'Bearer AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }],
    ['a malformed token', { authorization: 'Bearer not*a*token' }],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['a JWT instead of a deploy token', { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln' }],
  ])('answers 401 deploy_token_invalid for %s and changes nothing', async (_label, headers) => {
    const before = dbSnapshot(service.db);
    const response = await httpRequest(url, { method: 'POST', ...(headers ? { headers } : {}) });
    expectInvalid(response);
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('lets exactly one of ten concurrent enrolls with one token through', async () => {
    const { session_id, deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('race'));
    const nodesBefore = rowCount(service.db, 'nodes');
    const responses = await Promise.all(Array.from({ length: 10 }, () => enroll(deploy_token)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(9);
    expect(rowCount(service.db, 'nodes')).toBe(nodesBefore + 1);
    expect(service.db.prepare('SELECT count(*) AS n FROM nodes WHERE session_id = ?').get(session_id)).toEqual({ n: 1 });
  });
});
