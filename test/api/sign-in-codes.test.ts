// The proof of an inbox (docs/api.md "Sign-in: a verified inbox"): a code mailed to the address, over a real SMTP
// server (mailbox.ts). Short-lived, single-use, kept only as an HMAC, limited in tries and in how often it is sent,
// and the same answer whether or not anyone uses the address.
import { beforeAll, describe, expect, it } from 'vitest';
import { MovableClock } from '../helpers/clock.js';
import { MERCHANT_ID, mailedCode, payAndConfirm } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { mailTo, nextMailTo, mailIdsTo } from '../helpers/mailbox.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { CODES_PER_CLIENT } from '../../src/api/auth/email-codes.js';
import { uniqueEmail } from '../helpers/temp.js';

describe('sign-in codes', () => {
  const clock = new MovableClock();
  // The default cap per client (the helper raises it for the other test files, whose users all sign in from here).
  const service = useSvcApi({ clock, signInCodesPerClient: CODES_PER_CLIENT });
  let api: ReturnType<typeof apiClient>;
  beforeAll(() => {
    api = apiClient(service.baseUrl);
  });

  const issue = (email: string, proof: { challenge_id: string; code: string }) =>
    api.post('/v1/auth/issue-token', {
      status: 'CONFIRMED',
      offer_id: 'svc_starter_agents',
      customer_email: email,
      merchant_id: MERCHANT_ID,
      ...proof,
    });
  const shape = (response: { status: number; body: Record<string, unknown>; headers: Headers }) => ({
    status: response.status,
    keys: Object.keys(response.body).sort(),
    attempts: response.body.attempts,
    lifetime: Math.round((Date.parse(String(response.body.expires_at)) - clock.now()) / 60_000),
    type: response.headers.get('content-type'),
  });

  it('answers an address that paid and one nobody uses alike, and mails each its own code with the asking client and a reference', async () => {
    const paying = uniqueEmail('paying');
    await payAndConfirm(service.baseUrl, 'svc_starter_agents', paying);
    const unknown = uniqueEmail('unknown');
    const answers = [await api.post('/v1/auth/email-code', { email: paying }), await api.post('/v1/auth/email-code', { email: unknown })];
    expect(shape(answers[0]!)).toEqual(shape(answers[1]!));
    expect(answers[0]!.status).toBe(202);
    expect(answers[0]!.body.attempts).toBe(5);
    for (const [index, address] of [paying, unknown].entries()) {
      const reference = String(answers[index]!.body.challenge_id).slice(0, 8);
      const mail = await nextMailTo(address, { match: (each) => each.text.includes(reference) });
      expect(mail.subject).toMatch(/^Your svc sign-in code: \d{4}-\d{4}$/);
      expect(mail.text).toMatch(/works once, for 10 minutes/);
      expect(mail.text).toContain('from 127.0.0.1');
      expect(mail.text).not.toMatch(/eyJ|svcn_/);
    }
  });

  it('keeps only an HMAC of the code: its digits are nowhere in the database', async () => {
    const email = uniqueEmail('hashed');
    const { challenge_id, code } = await mailedCode(service.baseUrl, email);
    const row = service.db.prepare('SELECT * FROM email_challenges WHERE challenge_id = ?').get(challenge_id) as Record<string, unknown>;
    expect(row).toMatchObject({ email, attempts: 0, used_at: null });
    expect(JSON.stringify(service.db.prepare('SELECT * FROM email_challenges').all())).not.toContain(code.replace('-', ''));
    expect(String(row.code_hash)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('takes five tries, each refusal saying how many are left: after five wrong codes the right one is refused too, and a new code works', async () => {
    const email = uniqueEmail('tries');
    await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const proof = await mailedCode(service.baseUrl, email);
    const wrong = proof.code === '0000-0000' ? '1111-1111' : '0000-0000';
    // Another address's challenge is no live challenge of this one: no tries (docs/decisions/0033).
    expect((await issue(uniqueEmail('tries-other'), { ...proof, code: wrong })).body.attempts_left).toBe(0);
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const refused = await issue(email, { ...proof, code: wrong });
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ code: 'email_code_invalid', attempts_left: 4 - attempt });
    }
    const spent = await issue(email, proof);
    expect(spent.status).toBe(401);
    expect(spent.body.attempts_left).toBe(0);
    expect(spent.body).toEqual((await issue(email, { ...proof, code: wrong })).body);
    expect((await issue(email, await mailedCode(service.baseUrl, email))).status).toBe(201);
  });

  it('lasts ten minutes: the code is refused a second after, accepted a second before', async () => {
    const email = uniqueEmail('expiry');
    await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const late = await mailedCode(service.baseUrl, email);
    const early = await mailedCode(service.baseUrl, email);
    clock.advance(10 * 60 * 1000 - 1000);
    try {
      expect((await issue(email, early)).status).toBe(201);
      clock.advance(2000);
      const expired = await issue(email, late);
      expect(expired.status).toBe(401);
      expect(expired.body.code).toBe('email_code_invalid');
    } finally {
      clock.advance(-(10 * 60 * 1000 + 1000));
    }
  });

  it('sends an address five codes an hour: the sixth is 429 with Retry-After, no mail goes out, and the next hour sends again', async () => {
    const email = uniqueEmail('flood');
    for (let sent = 0; sent < 5; sent += 1) expect((await api.post('/v1/auth/email-code', { email })).status).toBe(202);
    await nextMailTo(email, { match: () => mailTo(email).length >= 5 });
    const seen = mailIdsTo(email);
    const refused = await api.post('/v1/auth/email-code', { email });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    clock.advance(60 * 60 * 1000 + 1000);
    try {
      const next = await api.post('/v1/auth/email-code', { email });
      expect(next.status).toBe(202);
      const mail = await nextMailTo(email, { after: seen });
      // The refused request mailed nothing: the next mail is the next hour's code.
      expect(mail.text).toContain(String(next.body.challenge_id).slice(0, 8));
    } finally {
      clock.advance(-(60 * 60 * 1000 + 1000));
    }
  });

  it('sends one client address thirty codes an hour across every e-mail', async () => {
    // Hours after the codes the tests above asked for from this address.
    clock.advance(5 * 60 * 60 * 1000);
    try {
      const statuses: number[] = [];
      for (let sent = 0; sent < 31; sent += 1)
        statuses.push((await api.post('/v1/auth/email-code', { email: uniqueEmail('spray') })).status);
      expect(statuses.slice(0, 30).every((status) => status === 202)).toBe(true);
      expect(statuses[30]).toBe(429);
    } finally {
      clock.advance(-5 * 60 * 60 * 1000);
    }
  });
});

describe('codes per client address (svc-api --sign-in-codes-per-client)', () => {
  const service = useSvcApi({ signInCodesPerClient: 3 });

  it('one client asks for at most that many codes an hour, across addresses: the next is 429 and mails nothing', async () => {
    const api = apiClient(service.baseUrl);
    const emails = [1, 2, 3].map((n) => uniqueEmail(`client-cap-${n}`));
    for (const email of emails) expect((await api.post('/v1/auth/email-code', { email })).status).toBe(202);
    const fourth = uniqueEmail('client-cap-4');
    const refused = await api.post('/v1/auth/email-code', { email: fourth });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      code: 'rate_limited',
      detail: 'too many sign-in codes were asked for from this client in the last hour',
    });
    // The three before it were mailed; the refused one was not (its address had none before, and gets none).
    for (const email of emails) await nextMailTo(email);
    expect(mailTo(fourth)).toEqual([]);
  });
});

describe('the client a mail names', () => {
  const service = useSvcApi();

  it("is a family from the User-Agent (Chrome on Linux, curl, swarm-node CLI), never the header's text", async () => {
    const cases: Array<[string, string]> = [
      [
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36' +
          ' - reply to helpdesk@evil.example with this code',
        'Chrome on Linux',
      ],
      [
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148' +
          ' Safari/604.1',
        'Safari on iOS',
      ],
      ['curl/8.5.0 URGENT: your account is locked, call +1-555-0100 and read this code out', 'curl'],
      ['swarm-node', 'swarm-node CLI'],
      ['Support desk: forward this mail to helpdesk@evil.example', 'an unknown client'],
    ];
    for (const [userAgent, family] of cases) {
      const email = uniqueEmail('mail-client');
      const asked = await httpRequest(`${service.baseUrl}/v1/auth/email-code`, { body: { email }, headers: { 'user-agent': userAgent } });
      expect(asked.status, asked.text).toBe(202);
      const mail = await nextMailTo(email);
      expect(mail.text).toContain(`The request came from 127.0.0.1 (${family}), reference ${String(asked.body.challenge_id).slice(0, 8)}.`);
      expect(mail.text).not.toMatch(/evil|helpdesk|reply to|forward|URGENT|555|Mozilla|AppleWebKit|8\.5\.0/i);
    }
  });
});
