// agent_sales_outreach_008: drafts one message per lead of a delimited leads file from a template, after checking
// each address (syntax, a mistyped provider's domain, role addresses, MX records when asked) and leaving out
// duplicates and suppressed addresses; sends them through SMTP only when the input says so. See
// docs/sections/starter-agents.md.
import { createHash } from 'node:crypto';
import { readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { IncompleteRunError, InputError, artifactsDir, refuseUnknownFields, runAgent, timeLimitMs } from './agent-io.mjs';
import { addressKey } from './address.mjs';
import { csvArtifact } from './artifacts.mjs';
import { DELIMITERS, delimiterName, readRecords } from './csv.mjs';
import { judgeLead } from './leads.mjs';
import { configuredModel } from './model.mjs';
import { templateSuggestion } from './model-template.mjs';
import { mxChecker } from './mx.mjs';
import { createSender, sendingPlan, sentLog } from './send.mjs';
import { compileTemplate, fillTemplate } from './template.mjs';

const FIELDS = ['leads', 'template', 'suppress', 'delimiter', 'check_mx', 'dns_servers', 'send', 'from', 'unsubscribe', 'rate_per_minute', 'campaign'];
const MAX_TEMPLATE_BYTES = 64 * 1024;
const MAX_SUPPRESS_BYTES = 64 * 1024 * 1024;
/** The answer keeps well under the node's 1 MiB: drafts beyond this are counted (and in the artifact), not listed. */
const MAX_DRAFT_BYTES = 384 * 1024;
const MAX_LISTED = 500;
/** Leads judged at once: their domains' MX records are looked up together. */
const BATCH = 500;
const SEND_SHARE = 0.85;

async function inputFile(field, path) {
  if (typeof path !== 'string' || !isAbsolute(path)) throw new InputError(`${field}: must be an absolute path to a file on this host`);
  const info = await stat(path).catch(() => null);
  if (!info?.isFile()) throw new InputError(`${field}: no file at ${path}`);
  return { path: await realpath(path), size: info.size };
}

async function readTextFile(field, path, maxBytes) {
  const file = await inputFile(field, path);
  if (file.size > maxBytes) throw new InputError(`${field}: ${path} is over ${Math.round(maxBytes / 1024)} KiB`);
  const buffer = await readFile(file.path);
  if (buffer.subarray(0, 8000).includes(0)) throw new InputError(`${field}: ${path} is a binary file, not text`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer);
  } catch {
    throw new InputError(`${field}: ${path} is not UTF-8 text (save it as UTF-8)`);
  }
}

/** A template that is one line starting with "/" is a file; anything else is the template itself. */
async function readTemplate(template) {
  if (typeof template !== 'string' || template.trim() === '') throw new InputError('template: must be a file path or the template text');
  if (template.startsWith('/') && !template.includes('\n')) return readTextFile('template', template, MAX_TEMPLATE_BYTES);
  if (Buffer.byteLength(template) > MAX_TEMPLATE_BYTES) throw new InputError(`template: over ${MAX_TEMPLATE_BYTES / 1024} KiB`);
  return template;
}

/** One address per line; blank lines and # comments are skipped. */
async function readSuppressed(path) {
  if (path === undefined) return new Set();
  const text = await readTextFile('suppress', path, MAX_SUPPRESS_BYTES);
  return new Set(text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#')).map(addressKey));
}

function emailColumn(names) {
  const column = names.find((name) => /^e-?mail(?:[ _-]?address)?$/i.test(name));
  if (!column) throw new InputError(`leads: no "email" column (the header has: ${names.join(', ')}); is the delimiter right?`);
  return column;
}

function summarise(counts, sending, kept) {
  const reasons = Object.entries({ invalid: 'invalid', typo: 'mistyped domain', no_mail: 'domain takes no mail', duplicate: 'duplicate', suppressed: 'suppressed', already_sent: 'mailed before', missing_field: 'with an empty field', malformed_row: 'malformed row' })
    .filter(([key]) => counts[key] > 0)
    .map(([key, what]) => `${counts[key]} ${what}`);
  const skipped = reasons.length > 0 ? ` (skipped: ${reasons.join(', ')})` : '';
  const flagged = counts.role_address > 0 ? ` ${counts.role_address} are role addresses (info@, sales@…).` : '';
  const first = `Drafted ${counts.drafted} message${counts.drafted === 1 ? '' : 's'} from ${counts.leads} lead${counts.leads === 1 ? '' : 's'}${skipped}.${flagged}`;
  const where = kept ? ' All drafts are in the artifact drafts.csv.' : '';
  if (!sending) return `${first}${where}\nNothing was sent: the input did not ask to send.`;
  const later = counts.deferred > 0 ? `; ${counts.deferred} left for the next run (time limit)` : '';
  return `${first}${where}\nSent ${counts.sent}${counts.send_failed > 0 ? `, ${counts.send_failed} failed` : ''}${later}.`;
}

await runAgent('agent_sales_outreach_008', async (input) => {
  const started = Date.now();
  refuseUnknownFields(input, FIELDS);
  if (input.delimiter !== undefined && !DELIMITERS.includes(input.delimiter)) throw new InputError('delimiter: must be one of "," ";" "\\t" "|" (found from the header row when not given)');
  const plan = sendingPlan(input);
  const leads = await inputFile('leads', input.leads);
  const templateText = await readTemplate(input.template);
  const suppressed = await readSuppressed(input.suppress);
  const mx = input.check_mx === true ? mxChecker(input.dns_servers) : null;
  if (input.dns_servers !== undefined && mx === null) throw new InputError('dns_servers: only with check_mx: true');
  const campaign = input.campaign ?? createHash('sha256').update(`${leads.path}\0${templateText}`).digest('hex').slice(0, 16);
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(campaign)) throw new InputError('campaign: 1 to 64 letters, digits and . _ -');
  const sent = sentLog(process.env.SWARM_STATE_DIR, campaign);
  const sender = plan ? await createSender(plan, started + timeLimitMs() * SEND_SHARE) : null;
  const dir = artifactsDir();
  const files = dir
    ? {
        drafts: csvArtifact(dir, 'drafts.csv', ['line', 'to', 'subject', 'body', 'flags', 'suggestion', 'mx']),
        rejected: csvArtifact(dir, 'rejected.csv', ['line', 'email', 'reason', 'detail', 'suggestion']),
        ...(plan ? { sent: csvArtifact(dir, 'sent.csv', ['line', 'to', 'status', 'message_id', 'error']) } : {}),
      }
    : null;

  const counts = { leads: 0, drafted: 0, role_address: 0, invalid: 0, typo: 0, no_mail: 0, mx_unknown: 0, duplicate: 0, suppressed: 0, already_sent: 0, missing_field: 0, malformed_row: 0, ...(plan ? { sent: 0, send_failed: 0, deferred: 0 } : {}) };
  const drafts = [];
  const rejected = [];
  const sentList = [];
  let draftBytes = 0;
  let names = null;
  let email = null;
  let template = null;
  let delimiter = null;
  const seen = new Set();
  const context = { suppressed, seen, mx, sent: plan ? sent : null };

  const handle = async (record) => {
    const verdict = judgeLead(record, names, email, template, context);
    if (verdict.rejected) {
      counts[verdict.rejected.reason]++;
      if (rejected.length < MAX_LISTED) rejected.push(verdict.rejected);
      await files?.rejected.write(verdict.rejected);
      return;
    }
    counts.drafted++;
    if (verdict.flags.includes('role_address')) counts.role_address++;
    if (verdict.flags.includes('mx_unknown')) counts.mx_unknown++;
    const draft = { line: record.line, to: verdict.address, ...fillTemplate(template, verdict.lead), flags: verdict.flags, ...(verdict.mx ? { mx: verdict.mx } : {}) };
    draftBytes += Buffer.byteLength(JSON.stringify(draft));
    if (draftBytes <= MAX_DRAFT_BYTES) drafts.push(draft);
    await files?.drafts.write({ ...draft, flags: draft.flags.join(' ') });
    // Role addresses are drafted but not mailed: few answer cold mail, and complaints from them hurt a sender most.
    if (!sender || verdict.flags.includes('role_address')) return;
    const result = await sender.send(draft);
    counts[result.status === 'sent' ? 'sent' : result.status === 'deferred' ? 'deferred' : 'send_failed']++;
    if (result.status === 'sent') sent.add(draft.to);
    if (result.status !== 'deferred' && sentList.length < MAX_LISTED) sentList.push({ line: record.line, to: draft.to, status: result.status, ...(result.message_id ? { message_id: result.message_id } : {}), ...(result.error ? { error: result.error } : {}) });
    await files?.sent.write({ line: record.line, to: draft.to, ...result });
  };

  let batch = [];
  const flush = async () => {
    if (mx) await mx.prefetch(batch.map((record) => record.fields[names.indexOf(email)]?.trim().split('@').at(-1)?.toLowerCase()).filter(Boolean));
    for (const record of batch) await handle(record);
    batch = [];
  };
  try {
    for await (const record of readRecords(leads.path, 'leads', { delimiter: input.delimiter })) {
      if (record.delimiter !== undefined) {
        delimiter = record.delimiter;
        continue;
      }
      if (names === null) {
        names = record.fields.map((name) => name.trim());
        names.forEach((name, i) => {
          if (name === '') throw new InputError(`leads: column ${i + 1} of the header row has no name`);
          if (names.indexOf(name) !== i) throw new InputError(`leads: the header names "${name}" twice`);
        });
        email = emailColumn(names);
        template = compileTemplate(templateText, names);
        continue;
      }
      counts.leads++;
      batch.push(record);
      if (batch.length === BATCH) await flush();
    }
    if (names === null) throw new InputError('leads: the file is empty; it needs a header row with an "email" column');
    await flush();
  } finally {
    sender?.close();
    for (const file of Object.values(files ?? {})) await file.close();
  }
  if (plan && counts.sent === 0 && counts.send_failed > 0) {
    throw new IncompleteRunError(`nothing could be sent: ${sentList.find((item) => item.error)?.error}`, `drafted ${counts.drafted}; the drafts are in the artifact when the node keeps artifacts`);
  }
  const suggestion = configuredModel() ? await templateSuggestion(configuredModel(), templateText) : null;
  return {
    summary: summarise(counts, Boolean(plan), Boolean(files)),
    sent: plan ? counts.sent : 0,
    counts,
    delimiter: delimiterName(delimiter),
    email_column: email,
    placeholders: template.placeholders,
    campaign,
    ...(plan ? { sending: { from: plan.from, rate_per_minute: plan.ratePerMinute, unsubscribe: plan.unsubscribe, sent_log_kept: sent.kept }, sent_messages: sentList } : {}),
    ...(mx ? { mx: { domains_checked: mx.asked } } : {}),
    ...(suggestion ? { template_suggestion: suggestion } : {}),
    artifacts: files ? Object.values(files).map((file) => file.name) : [],
    drafts,
    rejected,
    truncated: drafts.length < counts.drafted || rejected.length < counts.leads - counts.drafted,
  };
});
