// agent_sales_outreach_008 on a real leads file: RFC 4180 quoting, duplicates, invalid and suppressed addresses.
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
    expect(out.summary).toBe('Drafted 3 messages from 8 leads (skipped: 1 invalid, 1 duplicate, 1 suppressed, 1 with an empty field, 1 malformed row).\nNothing was sent: this agent only drafts.');
    expect(out.sent).toBe(0);
    expect(out.note).toContain('never sends');
    expect(out.counts).toEqual({ leads: 8, drafted: 3, invalid: 1, duplicate: 1, suppressed: 1, missing_field: 1, malformed_row: 1 });
    expect(out.placeholders).toEqual(['company', 'first_name']);
    expect(out.drafts).toEqual([
      { line: 2, to: 'ann@acme.example.com', subject: 'Acme, Inc. and us', body: 'Hello Ann,\n\nA word for Acme, Inc..\n' },
      // The quoted line break stays in the body, and cannot split the subject into two header lines.
      { line: 3, to: 'bo@beta.example.org', subject: 'Beta Labs and us', body: 'Hello Bo,\n\nA word for Beta\nLabs.\n' },
      { line: 11, to: 'gus@eta.example.com', subject: 'Eta and us', body: 'Hello Gus,\n\nA word for Eta.\n' },
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
    expect(run.json.drafts).toEqual([{ line: 10, to: 'ok+tag@example.co.uk', body: 'Hi Ok' }]);
    for (const [address, reason] of Object.entries(addresses)) {
      expect(run.json.rejected.find((entry: { email: string }) => entry.email === address)?.detail, address).toContain(reason);
    }
    expect(run.json.summary).toBe('Drafted 1 message from 9 leads (skipped: 8 invalid).\nNothing was sent: this agent only drafts.');
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
    for (const [input, message] of [
      [{ leads: join(dir, 'missing.csv'), template }, `leads: no file at ${join(dir, 'missing.csv')}`],
      [{ leads: 'leads.csv', template }, 'leads: must be an absolute path'],
      [{ leads, template: join(dir, 'missing.txt') }, `template: no file at ${join(dir, 'missing.txt')}`],
      [{ leads, template, suppress: join(dir, 'missing.txt') }, 'suppress: no file at'],
      [{ leads: noEmail, template: 'Hi {{name}}' }, 'leads: no "email" column (the header has: name, company)'],
      [{ leads: openQuote, template: 'Hi {{name}}' }, 'leads: the quoted field opened on line 2 is never closed'],
      [{ leads, template: 'Hi {{first_name}' }, 'template: "{{" without a closing "}}"'],
      [{ leads, template, send: true }, 'unknown field "send"'],
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
    expect(valid({ leads: '/srv/leads.csv', template: 'Hi', send: true })).toBe(false);
  });
});
