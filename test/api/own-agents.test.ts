// Agents of one's own at the service (docs/api.md "Agents of one's own"): uploaded under an id that is no SKU's, in
// the catalog of their user only, executed on that user's nodes at the default per-run price, and refused (404,
// nothing charged) to anyone else or once no version is current. Real svc-api over HTTP, on both engines.
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_OWN_AGENT_PRICE_CENTS } from '../../src/contract/own-agents.js';
import { archiveOf, manifestOf, sha256, validArchive } from '../helpers/agent-archives.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const OWN = 'nightly_report';
const service = useSvcApi();
afterAll(stopServingNodes);

const catalogIds = async (token?: string) =>
  ((await httpRequest(`${service.baseUrl}/v1/swarm/agents`, token === undefined ? {} : { token })).body as { agent_id: string }[]).map(
    (agent) => agent.agent_id,
  );

describe('an agent of your own', () => {
  it('is uploaded under its own id, shown in its user catalog, and executed on their node at the default price', async () => {
    const email = uniqueEmail('own');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 50);
    const archive = await validArchive(OWN, '1.0.0', { summary: 'nightly' });
    const uploaded = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${OWN}/versions`, {
      method: 'POST',
      rawBody: archive,
      headers: { 'content-type': 'application/gzip' },
      token,
    });
    expect(uploaded.status, uploaded.text).toBe(201);
    expect(uploaded.body).toMatchObject({ agent_id: OWN, digest: sha256(archive), current: true });

    expect(await catalogIds()).not.toContain(OWN);
    const mine = (await httpRequest(`${service.baseUrl}/v1/swarm/agents`, { token })).body as { agent_id: string }[];
    expect(mine.find((agent) => agent.agent_id === OWN)).toEqual({
      agent_id: OWN,
      name: `${OWN} (your own agent)`,
      price_cents: DEFAULT_OWN_AGENT_PRICE_CENTS,
      own: true,
    });
    expect(mine).toHaveLength(6);
    // A bad credential on the public catalog is a 401, never the public answer in disguise.
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/agents`, { token: 'not-a-token' })).status).toBe(401);

    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, email), { agents: [OWN] });
    expect(await catalogIds(node.credential)).toContain(OWN);
    const ran = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token,
      headers: { 'idempotency-key': 'own-1' },
      body: { user_id: email, agent_id: OWN },
    });
    expect(ran.status, ran.text).toBe(200);
    expect(ran.body).toMatchObject({
      agent_id: OWN,
      status: 'succeeded',
      charged_cents: DEFAULT_OWN_AGENT_PRICE_CENTS,
      balance_cents: 50 - DEFAULT_OWN_AGENT_PRICE_CENTS,
      bundle_digest: sha256(archive),
      node_id: node.node_id,
    });

    // Another user: no such agent for them, nothing charged; they may upload one of the same id, theirs alone.
    const otherEmail = uniqueEmail('own-other');
    const other = await signIn(service.baseUrl, otherEmail);
    await fundWallet(service.baseUrl, otherEmail, 50);
    const refused = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token: other,
      headers: { 'idempotency-key': 'own-2' },
      body: { user_id: otherEmail, agent_id: OWN },
    });
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ code: 'agent_not_found' });
    expect(await catalogIds(other)).not.toContain(OWN);

    // No version current: the owner's runs are refused as well, before the charge.
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/agents/${OWN}/current`, { method: 'DELETE', token })).status).toBe(200);
    const gone = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token,
      headers: { 'idempotency-key': 'own-3' },
      body: { user_id: email, agent_id: OWN },
    });
    expect(gone.status).toBe(404);
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token })).body.balance_cents).toBe(
      50 - DEFAULT_OWN_AGENT_PRICE_CENTS,
    );
  });

  it("refuses ids that are neither a SKU nor a name of your own, and a manifest whose id is not the path's", async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('own-bad'));
    for (const id of ['agent_not_in_catalog', 'Upper', 'x']) {
      const response = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${id}/versions`, {
        method: 'POST',
        rawBody: await validArchive(id, '1.0.0'),
        headers: { 'content-type': 'application/gzip' },
        token,
      });
      expect(response.status, id).toBe(404);
      expect(response.body.code).toBe('agent_not_found');
    }
    const mismatched = await archiveOf([
      { name: 'agent.json', data: manifestOf('someone_else', '1.0.0') },
      { name: 'main.sh', data: '#!/bin/sh\necho {}\n', mode: 0o755 },
    ]);
    const response = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${OWN}/versions`, {
      method: 'POST',
      rawBody: mismatched,
      headers: { 'content-type': 'application/gzip' },
      token,
    });
    expect(response.status).toBe(422);
    expect(response.body.code).toBe('bundle_invalid');
  });
});
