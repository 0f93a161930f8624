// agent_sales_outreach_008 on real leads files (RFC 4180 quoting, other delimiters, typos, role, duplicate, invalid
// and suppressed addresses), MX lookups against a DNS server the test starts, and sending to the suite's SMTP server.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDnsServer } from '../helpers/dns-server.js';
import { mailTo, nextMailTo, smtpUrl } from '../helpers/mailbox.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { inputSchemaValidator, runAgentProcess } from './agent-process.js';

const AGENT = 'agent_sales_outreach_008';

afterAll(() => removeTempDirs());

function files(): { dir: string; leads: string; template: string; suppress: string } {
  const dir = tempDir('outreach-');
  const leads = join(dir, 'leads.csv');
  writeFileSync(leads, [
    '\uFEFFemail,first_name,company,note', // line 1, with the BOM spreadsheets write
    'ann@acme.example.com,Ann,"Acme, Inc.","says ""hi"""', // 2: a comma and quotes inside quoted fields
    'bo@beta.example.org,Bo,"Beta', // 3: a line break inside a quoted field…
    'Labs",plain', // 4: …ends here
    'ANN@Acme.Example.com,Annie,Acme again,dup', // 5: duplicate of line 2, in other case
    'not-an-address,Cy,Gamma,x', // 6: invalid
    'dee@delta.example.net,Dee,Delta,suppressed', // 7: on the suppression list
    'eve@epsilon.example.io,,Epsilon,no first name', // 8: empty field the template uses
    'fay@zeta.example.com,Fay', // 9: too few fields
    '', // blank line, skipped
    'gus@eta.example.com,Gus,Eta,last',
  ].join('\r\n'));
  const template = join(dir, 'template.txt');
  writeFileSync(template, 'Subject: {{company}} and us\n\nHello {{ first_name }},\n\nA word for {{company}}.\n');
  const suppress = join(dir, 'suppress.txt');
  writeFileSync(suppress, '# unsubscribed\nDEE@delta.example.net\n\n');
  return { dir, leads, template, suppress };
}

describe('agent_sales_outreach_008', () => {
  it('drafts one message per good lead and says why each other lead was skipped, sending nothing', async () => {
    const { leads, template, suppress } = files();
    const run = await runAgentProcess(AGENT, { leads, template, suppress });
    expect(run.exitCode, run.stderr).toBe(0);
    const out = run.json;
    expect(out.summary).toBe('Drafted 3 messages from 8 leads (skipped: 1 invalid, 1 duplicate, 1 suppressed, 1 with an empty field, 1 malformed row).\nNothing was sent: the input did not ask to send.');
    expect(out.sent).toBe(0);
    expect(out.counts).toMatchObject({ leads: 8, drafted: 3, invalid: 1, duplicate: 1, suppressed: 1, missing_field: 1, malformed_row: 1, typo: 0, role_address: 0 });
    expect(out.delimiter).toBe('comma');
    expect(out.placeholders).toEqual(['company', 'first_name']);
    expect(out.drafts).toEqual([
      { line: 2, to: 'ann@acme.example.com', subject: 'Acme, Inc. and us', body: 'Hello Ann,\n\nA word for Acme, Inc..\n', flags: [] },
      // The quoted line break stays in the body, and cannot split the subject into two header lines.
      { line: 3, to: 'bo@beta.example.org', subject: 'Beta Labs and us', body: 'Hello Bo,\n\nA word for Beta\nLabs.\n', flags: [] },
      { line: 11, to: 'gus@eta.example.com', subject: 'Eta and us', body: 'Hello Gus,\n\nA word for Eta.\n', flags: [] },
    ]);
    expect(out.rejected).toEqual([
      expect.objectContaining({ line: 5, email: 'ANN@Acme.Example.com', reason: 'duplicate' }),
      { line: 6, email: 'not-an-address', reason: 'invalid', detail: 'has no @' },
      expect.objectContaining({ line: 7, email: 'dee@delta.example.net', reason: 'suppressed' }),
      { line: 8, email: 'eve@epsilon.example.io', reason: 'missing_field', detail: 'first_name is empty and the template uses {{first_name}}' },
      { line: 9, email: null, reason: 'malformed_row', detail: 'has 2 fields; the header has 4' },
    ]);
    expect(out.truncated).toBe(false);
  });

  it('takes the template inline, and says why each clearly invalid address is refused', async () => {
    const dir = tempDir('outreach-');
    const leads = join(dir, 'leads.csv');
    const addresses = {
      'two@@example.com': 'has more than one @',
      '@example.com': 'has nothing before the @',
      'x@localhost': 'has a domain without a dot ("localhost")',
      'x@exa_mple.com': 'has an invalid domain ("exa_mple.com")',
      'x.@example.com': 'has an invalid part before the @',
      'x@example.c0m': 'has an invalid top-level domain (".c0m")',
      'jos\u00e9@example.com': 'contains non-ASCII characters',
      '"a b"@example.com': 'contains a space',
    };
    writeFileSync(leads, `Email,name\n${Object.keys(addresses).map((address) => `"${address.replace(/"/g, '""')}",N`).join('\n')}\nok+tag@example.co.uk,Ok\n`);
    const run = await runAgentProcess(AGENT, { leads, template: 'Hi {{name}}' });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.email_column).toBe('Email');
    expect(run.json.drafts).toEqual([{ line: 10, to: 'ok+tag@example.co.uk', body: 'Hi Ok', flags: [] }]);
    for (const [address, reason] of Object.entries(addresses)) {
      expect(run.json.rejected.find((entry: { email: string }) => entry.email === address)?.detail, address).toContain(reason);
    }
    expect(run.json.summary).toBe('Drafted 1 message from 9 leads (skipped: 8 invalid).\nNothing was sent: the input did not ask to send.');
  });

  it('suggests the address meant for a mistyped provider, flags role addresses, and reads semicolon and tab files', async () => {
    const dir = tempDir('outreach-typos-');
    for (const [name, delimiter] of [['semicolon.csv', ';'], ['tab.tsv', '\t']] as const) {
      const leads = join(dir, name);
      writeFileSync(leads, [['email', 'name', 'company'], ['ada@gmail.con', 'Ada', 'Acme; Inc.'], ['bob@gmial.com', 'Bob', 'Beta'], ['info@acme-tools.com', 'Info', 'Acme'], ['cy@gmx.de', 'Cy', 'Gamma'], ['dee@outlook.de', 'Dee', 'Delta']].map((row) => row.map((field) => (field.includes(delimiter) ? `"${field}"` : field)).join(delimiter)).join('\n'));
      const run = await runAgentProcess(AGENT, { leads, template: 'Hi {{name}} at {{company}}' });
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.json.delimiter).toBe(delimiter === ';' ? 'semicolon' : 'tab');
      expect(run.json.rejected).toEqual([
        { line: 2, email: 'ada@gmail.con', reason: 'typo', detail: 'the domain looks like a typo of gmail.com: did you mean ada@gmail.com?', suggestion: 'ada@gmail.com' },
        expect.objectContaining({ line: 3, reason: 'typo', suggestion: 'bob@gmail.com' }),
      ]);
      expect(run.json.drafts.map((draft: { to: string; flags: string[] }) => [draft.to, draft.flags])).toEqual([['info@acme-tools.com', ['role_address']], ['cy@gmx.de', []], ['dee@outlook.de', []]]);
      expect(run.json.counts).toMatchObject({ typo: 2, role_address: 1, drafted: 3 });
      expect(run.json.summary).toBe('Drafted 3 messages from 5 leads (skipped: 2 mistyped domain). 1 are role addresses (info@, sales@…).\nNothing was sent: the input did not ask to send.');
    }
  });

  it('leaves out domains that take no mail by their MX records, asking a DNS server the test starts', async () => {
    const dns = await startDnsServer({ zone: 'test', mx: { 'good.test': ['mx.good.test', 10], 'nullmx.test': ['.', 0] }, a: { 'mx.good.test': '127.0.0.1', 'aonly.test': '127.0.0.2' } });
    try {
      const leads = join(tempDir('outreach-mx-'), 'leads.csv');
      writeFileSync(leads, 'email,name\nann@good.test,Ann\nbo@aonly.test,Bo\ncy@nullmx.test,Cy\ndee@missing.test,Dee\n');
      const run = await runAgentProcess(AGENT, { leads, template: 'Hi {{name}}', check_mx: true, dns_servers: [dns.address] });
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.json.drafts.map((draft: { to: string; mx: string }) => [draft.to, draft.mx])).toEqual([['ann@good.test', 'mx.good.test'], ['bo@aonly.test', 'aonly.test']]);
      expect(run.json.rejected).toEqual([
        { line: 4, email: 'cy@nullmx.test', reason: 'no_mail', detail: 'nullmx.test takes no mail (null MX, RFC 7505)' },
        { line: 5, email: 'dee@missing.test', reason: 'no_mail', detail: 'missing.test does not exist (DNS: NXDOMAIN)' },
      ]);
      expect(run.json.mx).toEqual({ domains_checked: 4 });
    } finally {
      await dns.stop();
    }
    // A resolver that never answers leaves the domain unknown: drafted and flagged, not refused.
    const leads = join(tempDir('outreach-mx-'), 'leads.csv');
    writeFileSync(leads, 'email,name\nann@good.test,Ann\n');
    const silent = await runAgentProcess(AGENT, { leads, template: 'Hi {{name}}', check_mx: true, dns_servers: ['127.0.0.1:9'] });
    expect(silent.exitCode, silent.stderr).toBe(0);
    expect(silent.json.drafts[0].flags).toEqual(['mx_unknown']);
  });

  it('sends only when asked, through the SMTP server of its secret, with List-Unsubscribe, and never twice to one lead', async () => {
    const dir = tempDir('outreach-send-');
    const stamp = Date.now();
    const to = (name: string) => `${name}.${stamp}@example.com`;
    const leads = join(dir, 'leads.csv');
    writeFileSync(leads, `email,name\n${to('ann')},Ann\n${to('bo')},Bo\ninfo+${stamp}@example.com,Info\n${to('suppressed')},Sup\n`);
    const suppress = join(dir, 'suppress.txt');
    writeFileSync(suppress, `${to('suppressed')}\n`);
    const stateDir = tempDir('outreach-state-');
    const artifacts = tempDir('outreach-artifacts-');
    const input = { leads, template: 'Subject: Hello {{name}}\n\nHi {{name}}, a word from us.', suppress, send: true, from: 'Ada <ada@sender.example.com>', unsubscribe: 'https://sender.example.com/unsubscribe?e={{email}}', rate_per_minute: 600 };

    const noSecret = await runAgentProcess(AGENT, input, { stateDir });
    expect(noSecret.exitCode).toBe(2);
    expect(noSecret.stderr).toContain('send: needs the secret SMTP_URL');

    const run = await runAgentProcess(AGENT, input, { stateDir, env: { SMTP_URL: smtpUrl(), SWARM_ARTIFACTS_DIR: artifacts } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.counts).toMatchObject({ drafted: 3, sent: 2, send_failed: 0, suppressed: 1, role_address: 1 });
    expect(run.json.summary).toMatch(/\nSent 2\.$/);
    expect(run.json.sent_messages.map((item: { to: string; status: string }) => [item.to, item.status])).toEqual([[to('ann'), 'sent'], [to('bo'), 'sent']]);
    const mail = await nextMailTo(to('ann'));
    expect(mail.subject).toBe('Hello Ann');
    expect(mail.from).toBe('"Ada" <ada@sender.example.com>');
    // mailparser reads List-Unsubscribe and List-Unsubscribe-Post (RFC 8058) into one `list` header.
    expect(JSON.parse(mail.headers.list!)).toEqual({
      unsubscribe: { url: `https://sender.example.com/unsubscribe?e=${encodeURIComponent(to('ann'))}` },
      'unsubscribe-post': { name: 'List-Unsubscribe=One-Click' },
    });
    expect(mail.text).toContain('Hi Ann, a word from us.');
    expect(mail.text).toContain(`To receive no more of these messages: https://sender.example.com/unsubscribe?e=${encodeURIComponent(to('ann'))}`);
    expect(mailTo(to('suppressed'))).toEqual([]);
    expect(mailTo(`info+${stamp}@example.com`)).toEqual([]);
    expect(readdirSync(artifacts).sort()).toEqual(['drafts.csv', 'rejected.csv', 'sent.csv']);
    expect(readFileSync(join(artifacts, 'sent.csv'), 'utf8')).toContain(`${to('bo')},sent,<`);

    // Run again: the campaign's log in the agent's state says both were mailed; nobody gets a second message.
    const again = await runAgentProcess(AGENT, input, { stateDir, env: { SMTP_URL: smtpUrl() } });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.json.counts).toMatchObject({ sent: 0, already_sent: 2 });
    expect(mailTo(to('ann'))).toHaveLength(1);

    // An SMTP server that is not there: nothing sent, so the run fails and is refunded.
    const down = await runAgentProcess(AGENT, { ...input, campaign: `down-${stamp}` }, { stateDir, env: { SMTP_URL: 'smtp://127.0.0.1:9' } });
    expect(down.exitCode).toBe(3);
    expect(down.stderr).toMatch(/nothing could be sent: /);
  });

  it('hands every lead of a large file to the artifact, however many, and says in the answer that it did', async () => {
    const leads = join(tempDir('outreach-large-'), 'leads.csv');
    writeFileSync(leads, `email;name\n${Array.from({ length: 20_000 }, (_, i) => `lead${i}@example.com;Lead ${i}`).join('\n')}\n`);
    const artifacts = tempDir('outreach-artifacts-');
    const run = await runAgentProcess(AGENT, { leads, template: 'Hello {{name}}' }, { env: { SWARM_ARTIFACTS_DIR: artifacts } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.counts.drafted).toBe(20_000);
    expect(run.json.summary).toContain('All drafts are in the artifact drafts.csv.');
    const rows = readFileSync(join(artifacts, 'drafts.csv'), 'utf8').trimEnd().split('\r\n');
    expect(rows).toHaveLength(20_001);
    expect(rows[0]).toBe('line,to,subject,body,flags,suggestion,mx');
    expect(rows[20_000]).toBe('20001,lead19999@example.com,,Hello Lead 19999,,,');
  });

  it('counts every draft but lists only what fits the answer, and says it cut the list', async () => {
    const dir = tempDir('outreach-many-');
    const leads = join(dir, 'leads.csv');
    writeFileSync(leads, `email,name\n${Array.from({ length: 2_000 }, (_, i) => `lead${i}@example.com,Lead ${i}`).join('\n')}\n`);
    const run = await runAgentProcess(AGENT, { leads, template: `Hello {{name}},\n${'We make things. '.repeat(40)}` });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.counts.drafted).toBe(2_000);
    expect(run.json.drafts.length).toBeGreaterThan(100);
    expect(run.json.drafts.length).toBeLessThan(2_000);
    expect(run.json.truncated).toBe(true);
    expect(run.stdout.length).toBeLessThan(768 * 1024);
  });

  it('fails on an unknown placeholder, naming it and the fields, before drafting anything', async () => {
    const { leads } = files();
    const run = await runAgentProcess(AGENT, { leads, template: 'Hello {{first_name}} of {{compnay}}' });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain("template: unknown placeholder {{compnay}} (the leads file's fields are: email, first_name, company, note)");
    expect(run.stdout).toBe('');
  });

  it('refuses missing files, a leads file without an email column and a broken quote with exit 2 and nothing on stdout', async () => {
    const { dir, leads, template } = files();
    const noEmail = join(dir, 'no-email.csv');
    writeFileSync(noEmail, 'name,company\nAnn,Acme\n');
    const openQuote = join(dir, 'open-quote.csv');
    writeFileSync(openQuote, 'email,name\na@example.com,"Ann\n');
    const binary = join(dir, 'leads.xlsx');
    writeFileSync(binary, Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00, 0xff, 0xfe]));
    const latin1 = join(dir, 'template-latin1.txt');
    writeFileSync(latin1, Buffer.from('Bonjour {{first_name}}, caf\xe9 ?', 'latin1'));
    for (const [input, message] of [
      [{ leads: join(dir, 'missing.csv'), template }, `leads: no file at ${join(dir, 'missing.csv')}`],
      [{ leads: 'leads.csv', template }, 'leads: must be an absolute path'],
      [{ leads, template: join(dir, 'missing.txt') }, `template: no file at ${join(dir, 'missing.txt')}`],
      [{ leads, template, suppress: join(dir, 'missing.txt') }, 'suppress: no file at'],
      [{ leads: noEmail, template: 'Hi {{name}}' }, 'leads: no "email" column (the header has: name, company)'],
      [{ leads: openQuote, template: 'Hi {{name}}' }, 'leads: the quoted field opened on line 2 is never closed'],
      [{ leads, template: 'Hi {{first_name}' }, 'template: "{{" without a closing "}}"'],
      [{ leads, template, sned: true }, 'unknown field "sned"'],
      [{ leads, template, send: true, from: 'a@b.co', unsubscribe: 'http://x.example/u' }, 'unsubscribe: sending needs a way to unsubscribe'],
      [{ leads, template, send: true, unsubscribe: 'https://x.example/u' }, "from: sending needs the sender's address"],
      [{ leads, template, dns_servers: ['8.8.8.8'] }, 'dns_servers: only with check_mx: true'],
      [{ leads, template, check_mx: true, dns_servers: ['not a server'] }, 'dns_servers: must be 1 to 4 resolvers'],
      [{ leads: binary, template: 'Hi' }, 'leads: no "email" column'],
      [{ leads, template: latin1 }, 'is not UTF-8 text'],
    ] as const) {
      const run = await runAgentProcess(AGENT, input);
      expect(run.exitCode, JSON.stringify(input)).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    }
  });

  it('has an input_schema that takes the documented inputs and refuses others', () => {
    const valid = inputSchemaValidator(AGENT);
    expect(valid({ leads: '/srv/leads.csv', template: '/srv/template.txt' })).toBe(true);
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi {{name}}', suppress: '/srv/suppress.txt' })).toBe(true);
    expect(valid({ leads: '/srv/leads.csv' })).toBe(false);
    expect(valid({ template: 'Hi' })).toBe(false);
    expect(valid({ leads: 'leads.csv', template: 'Hi' })).toBe(false);
    expect(valid({ leads: '/srv/leads.csv', template: '' })).toBe(false);
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi', suppress: 'suppress.txt' })).toBe(false);
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi', send: true, from: 'a@b.co', unsubscribe: 'https://b.co/u', rate_per_minute: 30 })).toBe(true);
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi', delimiter: ';', check_mx: true, dns_servers: ['127.0.0.1:53'] })).toBe(true);
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi', sned: true })).toBe(false);
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi', smtp_url: 'smtp://x' })).toBe(false);
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi', rate_per_minute: 0 })).toBe(false);
  });
});
