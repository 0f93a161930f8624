// GET /v1/docs and /v1/docs/{section}: the JWT's tier unlocks sections (docs/decisions/0006-tiers.md); 401 without a
// token, 403 for a locked section, 404 for an unknown one. Served from docs/sections, also by the built binary.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { loadDocsSections, packageRoot } from '../../src/api/docs/library.js';
import type { TestService } from '../helpers/svc-api.js';
import { AGENT_SKUS } from '../../src/contract/agents.js';
import { formatDollars } from '../../src/contract/money.js';
import { DocsSectionResponse } from '../../src/contract/schemas.js';
import { DOCS_SECTIONS, TIERS, TIER_IDS } from '../../src/contract/tiers.js';
import { MovableClock } from '../helpers/clock.js';
import { signIn } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { REPO_ROOT, spawnSvcApi, startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { mintToken } from '../helpers/tokens.js';

const SECTIONS_DIR = join(REPO_ROOT, 'docs', 'sections');
const sectionShape = TypeCompiler.Compile(DocsSectionResponse);
const fileOf = (section: string) => readFileSync(join(SECTIONS_DIR, `${section}.md`), 'utf8');

describe('private docs', () => {
  let service: TestService;
  let clock: MovableClock;
  const tokens = new Map<string, string>();

  beforeAll(async () => {
    clock = new MovableClock();
    service = await startSvcApi({ clock });
    for (const tier of TIER_IDS) tokens.set(tier, (await mintToken(service, uniqueEmail(tier), tier)).token);
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  const api = () => apiClient(service.baseUrl);

  it('serves every section a tier unlocks, as the file says, and 403 for the others', async () => {
    for (const tier of TIER_IDS) {
      const token = tokens.get(tier)!;
      for (const section of DOCS_SECTIONS) {
        const response = await api().get(`/v1/docs/${section}`, token);
        if (TIERS[tier].docs_sections.includes(section)) {
          expect(response.status, `${tier} ${section}`).toBe(200);
          expect(sectionShape.Check(response.body)).toBe(true);
          expect(response.body).toEqual({
            section,
            title: /^# (.+)$/m.exec(fileOf(section))![1],
            content_type: 'text/markdown',
            body: fileOf(section),
          });
        } else {
          expect(response.status, `${tier} ${section}`).toBe(403);
          expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
          expect(response.body).toMatchObject({ code: 'forbidden', status: 403 });
          expect(response.body.remedy).toMatch(/dev_portal_execution_billing|svc_starter_agents|svc_pay_wallet_fund/);
          expect(JSON.stringify(response.body)).not.toContain(fileOf(section).slice(0, 200));
        }
      }
    }
  });

  it("lists the caller's sections with their titles", async () => {
    for (const tier of TIER_IDS) {
      const response = await api().get('/v1/docs', tokens.get(tier));
      expect(response.status).toBe(200);
      expect(response.body.tier).toBe(tier);
      expect(response.body.sections.map((s: { section: string }) => s.section)).toEqual([...TIERS[tier].docs_sections]);
      for (const entry of response.body.sections) expect(entry.title).toBe(/^# (.+)$/m.exec(fileOf(entry.section))![1]);
    }
  });

  it('401 without a token, with a malformed header, a forged or an expired token', async () => {
    const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
    const forged = await new SignJWT({ tier: 'svc_starter_agents', chainId: 1202, nodeAccess: 'isolated_svc_server' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject('a@example.com')
      .setIssuer('svc')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('k'.repeat(32)));
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer' },
      { authorization: `Bearer ${forged}` },
      { authorization: 'Bearer not.a.jwt' },
    ];
    for (const path of ['/v1/docs/node-install', '/v1/docs/no-such-section', '/v1/docs']) {
      for (const headers of attempts) {
        const response = await httpRequest(`${service.baseUrl}${path}`, { headers });
        expect(response.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(response.body).toMatchObject({ code: 'unauthorized' });
        expect(response.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      }
    }
    clock.advance(30 * 24 * 3600 * 1000 + 1000);
    try {
      const expired = await api().get('/v1/docs/node-install', token);
      expect(expired.status).toBe(401);
      expect(expired.body.detail).toMatch(/expired/);
    } finally {
      clock.advance(-(30 * 24 * 3600 * 1000 + 1000));
    }
  });

  it('404 for an unknown section, 400 for an absurd name, never a file outside the sections', async () => {
    const token = tokens.get('svc_starter_agents')!;
    for (const name of ['no-such-section', 'NODE-INSTALL', '..%2Fpackage', '..%2F..%2Fpackage.json', 'node-install.md']) {
      const response = await api().get(`/v1/docs/${name}`, token);
      expect(response.status, name).toBe(404);
      expect(response.body).toMatchObject({ code: 'not_found' });
      expect(response.body.remedy).toContain('node-install');
    }
    const long = await api().get(`/v1/docs/${'a'.repeat(65)}`, token);
    expect(long.status).toBe(400);
    expect(long.body).toMatchObject({ code: 'invalid_request' });
    // U+0000 is in no path (docs/api.md "Conventions").
    expect((await api().get('/v1/docs/%00', token)).body).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('is found from the package root and refuses to start with a section missing', () => {
    expect(packageRoot()).toBe(REPO_ROOT.replace(/\/$/, ''));
    expect(() => loadDocsSections(tempDir('no-docs-'))).toThrow(/the documentation section dev-portal is missing/);
  });
});

describe('the sections say what the product does', () => {
  const all = loadDocsSections(SECTIONS_DIR);

  it('each section is real Markdown, not a stub', () => {
    for (const section of DOCS_SECTIONS) {
      const doc = all.get(section)!;
      expect(doc.title, section).not.toBe(section);
      expect(doc.body.length, section).toBeGreaterThan(1500);
      expect(doc.body, section).not.toMatch(/TODO|TBD|lorem|being written/i);
    }
  });

  it('the catalog and billing sections carry every SKU at its contract price', () => {
    for (const section of ['starter-agents', 'execution-billing'] as const) {
      for (const sku of AGENT_SKUS) {
        expect(all.get(section)!.body, `${section} ${sku.agent_id}`).toMatch(
          new RegExp(`${sku.agent_id}.*\\${formatDollars(sku.price_cents)}`),
        );
      }
    }
  });

  it('the install section has the install path, the deploy mode and the commands', () => {
    const body = all.get('node-install')!.body;
    for (const fact of [
      '/opt/svc/swarm-node',
      'bare_metal',
      'swarm-node install',
      'SVC_DEPLOY_TOKEN',
      'svc-swarm-node.service',
      'swarm-node doctor',
      'swarm-node upgrade --rollback',
      'swarm-node uninstall',
    ]) {
      expect(body, fact).toContain(fact);
    }
  });

  it('the wallet and billing sections name the chain, the wallet URL and the error of spec §7', () => {
    for (const section of ['wallet-funding', 'execution-billing'] as const) {
      const body = all.get(section)!.body;
      for (const fact of ['1202', 'wallet_login_url', 'insufficient_balance', '402']) expect(body, `${section} ${fact}`).toContain(fact);
    }
    expect(all.get('execution-billing')!.body).toContain('Idempotency-Key');
    expect(all.get('wallet-funding')!.body).toContain('intent=swarm_private_access');
  });
});

describe('private docs from the built svc-api', () => {
  it('the bundle finds docs/sections at run time', async () => {
    const api = await spawnSvcApi();
    try {
      const token = await signIn(api.baseUrl, uniqueEmail('bundle'), 'svc_starter_agents');
      const response = await apiClient(api.baseUrl).get('/v1/docs/node-install', token);
      expect(response.status, response.text).toBe(200);
      expect(response.body.body).toBe(fileOf('node-install'));
      const locked = await apiClient(api.baseUrl).get('/v1/docs/dev-portal', token);
      expect(locked.status).toBe(403);
    } finally {
      await api.stop();
      removeTempDirs();
    }
  });
});
