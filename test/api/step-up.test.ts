// Step-up, rotation and the audit trail (docs/api.md "Step-up", "Credential rotation", "Audit", "Mail"): what changes
// the fleet or the code needs a sign-in within 15 minutes, so a JWT copied from a disk can read and run but cannot
// enrol a node or change what runs; a node's credential is replaced only with that recent sign-in, which shuts out
// every earlier credential; and the user can look at, and is mailed about, what happened to the account.
import { describe, expect, it } from 'vitest';
import { MovableClock } from '../helpers/clock.js';
import { MERCHANT_ID, mailedCode, signIn, signInPaid } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { mailIdsTo, nextMailTo } from '../helpers/mailbox.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { archiveOf, manifestOf } from '../helpers/agent-archives.js';
import { dbSnapshot } from './support/paygate-support.js';

const AGENT = 'agent_ops_monitor_004';
const SIXTEEN_MINUTES = 16 * 60 * 1000;

describe('step-up, rotation and the audit trail', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock });
  const call = (
    path: string,
    token: string,
    init: { method?: string; body?: unknown; rawBody?: Buffer; headers?: Record<string, string> } = {},
  ) => httpRequest(`${service.baseUrl}${path}`, { ...init, token });
  const bundle = (version: string) =>
    archiveOf([
      { name: 'agent.json', data: manifestOf(AGENT, version) },
      { name: 'main.sh', data: '#!/bin/sh\necho {}\n', mode: 0o755 },
    ]);
  const upload = async (token: string, version: string) =>
    call(`/v1/swarm/agents/${AGENT}/versions`, token, {
      method: 'POST',
      rawBody: await bundle(version),
      headers: { 'content-type': 'application/gzip' },
    });

  /** A user signed in 16 minutes ago (the token a thief copies from a disk), with a node and an upload of theirs. */
  async function olderSignIn(): Promise<{ email: string; token: string; node: { node_id: string; credential: string } }> {
    const email = uniqueEmail('stepup');
    const token = await signIn(service.baseUrl, email);
    expect((await upload(token, '1.0.0')).status).toBe(201);
    expect((await upload(token, '1.1.0')).status).toBe(201);
    const node = await enrollNode(service.baseUrl, email);
    clock.advance(SIXTEEN_MINUTES);
    return { email, token, node };
  }

  it('refuses every change of the fleet or the code with an older sign-in (401 step_up_required), and changes nothing', async () => {
    const user = await olderSignIn();
    try {
      const before = dbSnapshot(service.db);
      const attempts = [
        await call('/v1/swarm/nodes/deploy-token', user.token, { method: 'POST' }),
        await upload(user.token, '2.0.0'),
        await call(`/v1/swarm/agents/${AGENT}/current`, user.token, { method: 'PUT', body: { version: '1.0.0' } }),
        await call(`/v1/swarm/agents/${AGENT}/current`, user.token, { method: 'DELETE' }),
        await call(`/v1/swarm/nodes/${user.node.node_id}`, user.token, { method: 'DELETE' }),
        await call(`/v1/swarm/nodes/${user.node.node_id}/credential`, user.token, { method: 'POST' }),
      ];
      for (const response of attempts) {
        expect(response.status, response.text).toBe(401);
        expect(response.body).toMatchObject({
          code: 'step_up_required',
          max_age: 900,
          remedy: `Sign in again with the code mailed to you: swarm-node login --email ${user.email}; then retry.`,
        });
        expect(response.headers.get('www-authenticate')).toBe(
          'Bearer error="insufficient_user_authentication", error_description="a sign-in within the last 15 minutes is required", max_age=900',
        );
      }
      expect(dbSnapshot(service.db)).toEqual(before);
      // What does not change the fleet or the code goes on with it: reading, the fleet view, a run's charge.
      expect((await call('/v1/swarm/wallet', user.token)).status).toBe(200);
      expect((await call('/v1/swarm/nodes', user.token)).status).toBe(200);
      expect((await call(`/v1/swarm/agents/${AGENT}/versions`, user.token)).status).toBe(200);
      // A sign-in now (the inbox proven again) is recent: the same change goes through.
      const fresh = await signInPaid(service.baseUrl, user.email);
      expect((await call('/v1/swarm/nodes/deploy-token', fresh, { method: 'POST' })).status).toBe(201);
      expect((await call(`/v1/swarm/agents/${AGENT}/current`, fresh, { method: 'PUT', body: { version: '1.0.0' } })).status).toBe(200);
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
  });

  it("a rotation with a recent sign-in shuts out every earlier credential of the node, the thief's copy with it; nobody rotates without the inbox", async () => {
    const user = await olderSignIn();
    try {
      const thief = { credential: user.node.credential, token: user.token };
      // The thief holds the node credential and the old JWT: neither rotates.
      expect((await call(`/v1/swarm/nodes/${user.node.node_id}/credential`, thief.credential, { method: 'POST' })).status).toBe(401);
      expect((await call(`/v1/swarm/nodes/${user.node.node_id}/credential`, thief.token, { method: 'POST' })).body.code).toBe(
        'step_up_required',
      );
      const seen = mailIdsTo(user.email);
      const fresh = await signInPaid(service.baseUrl, user.email);
      const rotated = await call(`/v1/swarm/nodes/${user.node.node_id}/credential`, fresh, { method: 'POST' });
      expect(rotated.status, rotated.text).toBe(200);
      const poll = (credential: string) =>
        call('/v1/swarm/nodes/poll', credential, { body: { hostname: 'h', version: 't', capacity: 0, running: [], wait_seconds: 0 } });
      // The owner's node uses the new one (swarm-node credential rotate does at once): every earlier one is retired.
      expect((await poll(rotated.body.node_credential)).status).toBe(200);
      expect((await poll(thief.credential)).status).toBe(401);
      const mail = await nextMailTo(user.email, { after: seen, match: (each) => each.subject.includes('credential') });
      expect(mail.text).toContain(user.node.node_id);
      expect(mail.text).not.toContain(rotated.body.node_credential);
      // Another user's node is the same 404 as no node.
      const stranger = await signIn(service.baseUrl, uniqueEmail('stranger'));
      expect((await call(`/v1/swarm/nodes/${user.node.node_id}/credential`, stranger, { method: 'POST' })).status).toBe(404);
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
  });

  it('lists what happened to the account, newest first, with the client address and user agent; pages; another user sees none of it', async () => {
    const email = uniqueEmail('audit');
    const token = await signIn(service.baseUrl, email);
    expect((await upload(token, '1.0.0')).status).toBe(201);
    const node = await enrollNode(service.baseUrl, email);
    expect((await call(`/v1/swarm/agents/${AGENT}/current`, token, { method: 'DELETE' })).status).toBe(200);
    expect((await call(`/v1/swarm/nodes/${node.node_id}/credential`, token, { method: 'POST' })).status).toBe(200);
    expect((await call(`/v1/swarm/nodes/${node.node_id}`, token, { method: 'DELETE' })).status).toBe(200);
    const other = await signInPaid(service.baseUrl, email);
    expect((await call('/v1/auth/logout', other, { method: 'POST' })).status).toBe(200);

    const audit = await call('/v1/audit', token);
    expect(audit.status, audit.text).toBe(200);
    const kinds = audit.body.events.map((event: { kind: string }) => event.kind);
    expect(kinds).toEqual([
      'tokens_revoked',
      'sign_in',
      'node_removed',
      'credential_rotated',
      'agent_current_changed',
      'node_enrolled',
      'deploy_token_issued',
      'session_activated',
      'sign_in',
      'agent_uploaded',
      'sign_in',
    ]);
    for (const event of audit.body.events) {
      expect(event).toMatchObject({ event_id: expect.any(String), at: expect.any(String), client_address: '127.0.0.1' });
      expect(JSON.stringify(event)).not.toMatch(/svcn_|eyJ/);
    }
    expect(audit.body.events[2].detail).toEqual({ node_id: node.node_id, by: 'user' });
    const page = await call(`/v1/audit?limit=3&before=${audit.body.events[2].event_id}`, token);
    expect(page.body.events.map((event: { kind: string }) => event.kind)).toEqual([
      'credential_rotated',
      'agent_current_changed',
      'node_enrolled',
    ]);
    expect(page.body.next_before).toBe(page.body.events[2].event_id);
    expect((await call('/v1/audit?limit=0', token)).status).toBe(400);
    const stranger = await signIn(service.baseUrl, uniqueEmail('nosy'));
    expect((await call('/v1/audit', stranger)).body.events.map((event: { kind: string }) => event.kind)).toEqual(['sign_in']);
  });

  it('mails the user when a node enrols, an agent is uploaded, and a token goes to a client not seen before', async () => {
    const email = uniqueEmail('told');
    const token = await signIn(service.baseUrl, email);
    let seen = mailIdsTo(email);
    const node = await enrollNode(service.baseUrl, email);
    const enrolled = await nextMailTo(email, { after: seen, match: (each) => each.subject === 'A node joined your svc account' });
    expect(enrolled.text).toContain(`swarm-node nodes remove ${node.node_id}`);
    seen = mailIdsTo(email);
    expect((await upload(token, '3.0.0')).status).toBe(201);
    const uploaded = await nextMailTo(email, { after: seen, match: (each) => each.subject.includes(`${AGENT} was uploaded`) });
    expect(uploaded.text).toMatch(/Version 3\.0\.0 of agent_ops_monitor_004 \(sha256 [0-9a-f]{64}\)/);
    seen = mailIdsTo(email);
    const proof = await mailedCode(service.baseUrl, email);
    const fromElsewhere = await httpRequest(`${service.baseUrl}/v1/auth/issue-token`, {
      body: { status: 'CONFIRMED', offer_id: 'svc_starter_agents', customer_email: email, merchant_id: MERCHANT_ID, ...proof },
      // A C1 control (CSI, U+009B) is a terminal escape the header may carry as a byte: it reaches no inbox.
      headers: { 'user-agent': 'curl/8.0 \u009b2J' },
    });
    expect(fromElsewhere.status).toBe(201);
    const told = await nextMailTo(email, { after: seen, match: (each) => each.subject === 'A new sign-in to your svc account' });
    expect(told.text).toContain('from 127.0.0.1 (curl)');
    expect(told.text).not.toContain('\u009b');
  });
});
