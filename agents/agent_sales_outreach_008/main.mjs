// agent_sales_outreach_008: drafts one message per lead from a CSV and a template, after validating, removing
// duplicates and suppressed addresses. It never sends anything. See docs/sections/starter-agents.md.
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { InputError, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { addressKey, addressProblem } from './address.mjs';
import { readTable } from './csv.mjs';
import { compileTemplate, fillTemplate } from './template.mjs';

const MAX_LEADS_BYTES = 10 * 1024 * 1024;
const MAX_TEMPLATE_BYTES = 64 * 1024;
/** The output keeps well under the node's 1 MiB: drafts beyond this budget are counted but not listed. */
const MAX_DRAFT_BYTES = 512 * 1024;
const MAX_REJECTED = 500;
const NEVER_SENT = 'This agent never sends anything: review the drafts and send them with your own mail tool.';

async function readInputFile(field, path, maxBytes) {
  if (typeof path !== 'string' || !isAbsolute(path)) throw new InputError(`${field}: must be an absolute path to a file on this host`);
  const info = await stat(path).catch(() => null);
  if (!info?.isFile()) throw new InputError(`${field}: no file at ${path}`);
  if (info.size > maxBytes) throw new InputError(`${field}: ${path} is over ${maxBytes / 1024} KiB`);
  return readFile(path, 'utf8');
}

/** A template that is one line starting with "/" is a file; anything else is the template itself. */
async function readTemplate(template) {
  if (typeof template !== 'string' || template.trim() === '') throw new InputError('template: must be a file path or the template text');
  if (template.startsWith('/') && !template.includes('\n')) return readInputFile('template', template, MAX_TEMPLATE_BYTES);
  if (Buffer.byteLength(template) > MAX_TEMPLATE_BYTES) throw new InputError(`template: over ${MAX_TEMPLATE_BYTES / 1024} KiB`);
  return template;
}

/** One address per line; blank lines and # comments are skipped. */
async function readSuppressed(path) {
  if (path === undefined) return new Set();
  const text = await readInputFile('suppress', path, MAX_LEADS_BYTES);
  return new Set(text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#')).map(addressKey));
}

function emailColumn(names) {
  const column = names.find((name) => /^e-?mail$/i.test(name));
  if (!column) throw new InputError(`leads: no "email" column (the header has: ${names.join(', ')})`);
  return column;
}

function summarise(counts, suppressUsed) {
  const reasons = [
    [counts.invalid, 'invalid'],
    [counts.duplicate, counts.duplicate === 1 ? 'duplicate' : 'duplicates'],
    ...(suppressUsed ? [[counts.suppressed, 'suppressed']] : []),
    [counts.missing_field, 'with an empty field'],
    [counts.malformed_row, counts.malformed_row === 1 ? 'malformed row' : 'malformed rows'],
  ].filter(([count]) => count > 0).map(([count, what]) => `${count} ${what}`);
  const skipped = reasons.length > 0 ? ` (skipped: ${reasons.join(', ')})` : '';
  return `Drafted ${counts.drafted} message${counts.drafted === 1 ? '' : 's'} from ${counts.leads} lead${counts.leads === 1 ? '' : 's'}${skipped}.\nNothing was sent: this agent only drafts.`;
}

await runAgent('agent_sales_outreach_008', async (input) => {
  refuseUnknownFields(input, ['leads', 'template', 'suppress']);
  const { names, rows } = readTable(await readInputFile('leads', input.leads, MAX_LEADS_BYTES), 'leads');
  const email = emailColumn(names);
  const template = compileTemplate(await readTemplate(input.template), names);
  const suppressed = await readSuppressed(input.suppress);

  const counts = { leads: rows.length, drafted: 0, invalid: 0, duplicate: 0, suppressed: 0, missing_field: 0, malformed_row: 0 };
  const drafts = [];
  const rejected = [];
  const drafted = new Set();
  let draftBytes = 0;
  const reject = (entry) => {
    counts[entry.reason]++;
    if (rejected.length < MAX_REJECTED) rejected.push(entry);
  };
  for (const row of rows) {
    if (row.fields.length !== names.length) {
      reject({ line: row.line, email: null, reason: 'malformed_row', detail: `has ${row.fields.length} fields; the header has ${names.length}` });
      continue;
    }
    const lead = Object.fromEntries(names.map((name, i) => [name, row.fields[i].trim()]));
    const address = lead[email];
    const problem = addressProblem(address);
    if (problem) {
      reject({ line: row.line, email: address, reason: 'invalid', detail: problem });
      continue;
    }
    const key = addressKey(address);
    if (suppressed.has(key)) {
      reject({ line: row.line, email: address, reason: 'suppressed', detail: 'is on the suppression list' });
      continue;
    }
    // A duplicate is an address already drafted, so a complete later row still counts when an earlier one was not.
    if (drafted.has(key)) {
      reject({ line: row.line, email: address, reason: 'duplicate', detail: 'was already drafted from an earlier row (addresses compare case-insensitively)' });
      continue;
    }
    const empty = template.placeholders.find((name) => lead[name] === '');
    if (empty) {
      reject({ line: row.line, email: address, reason: 'missing_field', detail: `${empty} is empty and the template uses {{${empty}}}` });
      continue;
    }
    drafted.add(key);
    counts.drafted++;
    const draft = { line: row.line, to: address, ...fillTemplate(template, lead) };
    draftBytes += Buffer.byteLength(JSON.stringify(draft));
    if (draftBytes <= MAX_DRAFT_BYTES) drafts.push(draft);
  }

  return {
    summary: summarise(counts, input.suppress !== undefined),
    sent: 0,
    note: NEVER_SENT,
    counts,
    email_column: email,
    placeholders: template.placeholders,
    drafts,
    rejected,
    truncated: drafts.length < counts.drafted || rejected.length < counts.leads - counts.drafted,
  };
});
