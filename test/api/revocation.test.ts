// Revocation and sessions (docs/api.md "Revocation and sessions"): every JWT is recorded at issue; signing out
// revokes it at the service, everywhere revokes every token of the user issued before now, and every endpoint that
// takes a JWT refuses a revoked one, the wallet page's sessions included.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { createRevocations } from '../../src/api/auth/revocations.js';
import { signIn, signInPaid } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

describe('revocation', () => {
  const service = useSvcApi();
  let api: ReturnType<typeof apiClient>;
  beforeAll(() => {
    api = apiClient(service.baseUrl);
  });

  const verify = async (token: string) => (await api.post('/v1/auth/verify', { token })).body;
  const walletStatus = async (token: string) => (await api.get('/v1/swarm/wallet', token)).status;
  const walletCookie = async (token: string): Promise<string> => {
    // Typed into the address bar: a link followed from a page would only lead to "Continue as" (docs/api.md "Wallet page").
    const typed = { 'sec-fetch-site': 'none' };
    const response = await httpRequest(`${service.walletUrl}/login?token=${token}&intent=swarm_private_access`, { headers: typed });
    expect(response.status).toBe(303);
    return response.headers.get('set-cookie')!.split(';')[0]!;
  };
  const walletPage = async (cookie: string) => (await httpRequest(`${service.walletUrl}/login`, { headers: { cookie } })).text;

  it("logout revokes the token it is sent with, at once and for every endpoint; the user's other tokens go on", async () => {
    const email = uniqueEmail('logout');
    const stolen = await signIn(service.baseUrl, email);
    const other = await signInPaid(service.baseUrl, email);
    // Used before, so the service remembers it verified: the revocation must beat that memory.
    expect(await walletStatus(stolen)).toBe(200);
    const cookie = await walletCookie(stolen);
    expect(await walletPage(cookie)).toContain(email);

    const out = await api.post('/v1/auth/logout', undefined, { token: stolen });
    expect(out.status, out.text).toBe(200);
    expect(out.body).toEqual({ revoked: 1, everywhere: false });
    expect(await verify(stolen)).toEqual({ valid: false, reason: 'revoked' });
    for (const response of [
      await api.get('/v1/swarm/wallet', stolen),
      await api.get('/v1/docs/starter-agents', stolen),
      await api.get('/v1/swarm/nodes', stolen),
      await api.post(
        '/v1/swarm/execute',
        { user_id: email, agent_id: 'agent_ops_monitor_004' },
        { token: stolen, headers: { 'idempotency-key': randomUUID() } },
      ),
      await api.post('/v1/swarm/nodes/deploy-token', undefined, { token: stolen }),
    ]) {
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('unauthorized');
    }
    expect(await walletPage(cookie)).not.toContain(email);
    expect(await walletStatus(other)).toBe(200);
    // Signing out again with it is refused: the token is gone.
    expect((await api.post('/v1/auth/logout', undefined, { token: stolen })).status).toBe(401);
  });

  it('logout everywhere revokes every token of the user issued before now, wallet sessions too; a later sign-in works', async () => {
    const email = uniqueEmail('everywhere');
    const tokens = [
      await signIn(service.baseUrl, email),
      await signInPaid(service.baseUrl, email),
      await signInPaid(service.baseUrl, email),
    ];
    const bystander = await signIn(service.baseUrl, uniqueEmail('bystander'));
    const cookie = await walletCookie(tokens[1]!);
    const out = await api.post('/v1/auth/logout', { everywhere: true }, { token: tokens[0]! });
    expect(out.body).toEqual({ revoked: 3, everywhere: true });
    for (const token of tokens) expect(await verify(token)).toEqual({ valid: false, reason: 'revoked' });
    expect(await walletPage(cookie)).not.toContain(email);
    expect(await walletStatus(bystander)).toBe(200);
    const after = await signInPaid(service.baseUrl, email);
    expect(await verify(after)).toMatchObject({ valid: true, sub: email });
    expect(service.db.prepare('SELECT count(*) AS n FROM issued_tokens WHERE sub = ? AND revoked_at IS NOT NULL').get(email)).toEqual({
      n: 3,
    });
  });

  it('an instance learns of a revocation recorded by another at its next read of the log (every 400 ms)', async () => {
    const email = uniqueEmail('elsewhere');
    const token = await signIn(service.baseUrl, email);
    expect(await walletStatus(token)).toBe(200);
    // Another instance's revocation: written to the shared log by its own reader, not through this instance.
    const jti = service.db.prepare('SELECT jti FROM issued_tokens WHERE sub = ?').get(email) as { jti: string };
    await createRevocations(service.store, service.ctx.clock).revokeToken(email, jti.jti);
    await service.ctx.revocations.refresh();
    expect(service.ctx.revocations.isRevoked(email, jti.jti, Date.now())).toBe(true);
    expect(await walletStatus(token)).toBe(401);
  });
});
