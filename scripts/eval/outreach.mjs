// agent_sales_outreach_008's eval: labelled addresses among generated leads (typos of common mail domains, role
// addresses, invalid and valid ones), leads files in each delimiter, and 150,000 leads that must all be handled.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { figure, heading, readSet, runAgent, setParts, tempDir } from './support.mjs';

const AGENT = 'agent_sales_outreach_008';
const TEMPLATE = 'Subject: Hello {{first_name}}\n\nHi {{first_name}},\n\nA note for {{company}}.\n';
const FIRST = ['Ada', 'Bo', 'Cy', 'Di', 'Ed', 'Flo', 'Gil', 'Hu', 'Io', 'Jo', 'Ky', 'Lu', 'Mo', 'Ny', 'Ot', 'Pi'];
const COMPANIES = ['Acme, Inc.', 'Northwind', 'Brightloop "Labs"', 'Kettle & Co', 'Globex'];

function csvField(value, delimiter) {
  return /["\r\n]/.test(value) || value.includes(delimiter) ? `"${value.replace(/"/g, '""')}"` : value;
}

function writeLeads(dir, name, rows, delimiter = ',') {
  const path = join(dir, name);
  const lines = [['email', 'first_name', 'company'], ...rows].map((row) => row.map((value) => csvField(value, delimiter)).join(delimiter));
  writeFileSync(path, `${lines.join('\r\n')}\r\n`);
  return path;
}

/** Records of an RFC 4180 file: newlines outside quotes, less the header. */
function countCsvRecords(text) {
  let quoted = false;
  let records = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '"') quoted = !quoted;
    else if (char === '\n' && !quoted) records++;
  }
  return records - 1;
}

/** What became of each address: rejected (with its reason and suggestion), or drafted (with its flags). */
function fates(output) {
  const fate = new Map();
  for (const item of output?.rejected ?? []) fate.set(item.email, { rejected: item.reason, suggestion: item.suggestion });
  for (const draft of output?.drafts ?? []) fate.set(draft.to, { drafted: true, flags: draft.flags ?? [] });
  return fate;
}

async function addressesPart(set, part, dir) {
  const labelled = [...set.typos.map((typo) => typo.address), ...set.roles, ...set.invalid, ...set.valid];
  const leads = writeLeads(
    dir,
    `labelled-${part}.csv`,
    labelled.map((email, i) => [email, FIRST[i % FIRST.length], COMPANIES[i % COMPANIES.length]]),
  );
  const run = await runAgent(AGENT, { leads, template: TEMPLATE });
  const fate = fates(run.json);
  const typoRight = set.typos.filter((typo) => fate.get(typo.address)?.suggestion?.endsWith(`@${typo.meant}`)).length;
  const typoFlagged = set.typos.filter(
    (typo) => fate.get(typo.address)?.suggestion !== undefined || fate.get(typo.address)?.flags?.includes('typo'),
  ).length;
  const roles = set.roles.filter(
    (address) => fate.get(address)?.flags?.includes('role_address') || fate.get(address)?.rejected === 'role_address',
  ).length;
  const invalid = set.invalid.filter((address) => fate.get(address)?.rejected === 'invalid').length;
  const validClean = set.valid.filter((address) => fate.get(address)?.drafted && fate.get(address).flags.length === 0);
  heading(
    `${AGENT} (${part}): ${labelled.length} labelled addresses, exit ${run.exitCode}${run.exitCode === 0 ? '' : `: ${run.stderr.split('\n')[0]}`}`,
  );
  figure('typos caught with the domain meant suggested', `${typoRight} of ${set.typos.length}`, `${typoFlagged} caught at all`);
  figure('role addresses flagged', `${roles} of ${set.roles.length}`);
  figure('invalid addresses refused', `${invalid} of ${set.invalid.length}`);
  figure(
    'valid addresses drafted unflagged',
    `${validClean.length} of ${set.valid.length}`,
    set.valid.filter((address) => !validClean.includes(address)).join(', '),
  );
}

async function delimitersPart(set, part, dir) {
  const rows = Array.from({ length: 100 }, (_, i) => [
    `lead${i}@example${i % 7}.com`,
    FIRST[i % FIRST.length],
    COMPANIES[i % COMPANIES.length],
  ]);
  const results = [];
  for (const delimiter of set.delimiters) {
    const leads = writeLeads(dir, `delimited-${part}-${delimiter.charCodeAt(0)}.csv`, rows, delimiter);
    const run = await runAgent(AGENT, { leads, template: TEMPLATE });
    const sample = run.json?.drafts?.[3];
    const right = run.exitCode === 0 && run.json.counts.drafted === rows.length && sample?.body.includes(`A note for ${rows[3][2]}.`);
    results.push({ delimiter: JSON.stringify(delimiter), right });
  }
  figure(
    'leads files read right, by delimiter',
    `${results.filter((r) => r.right).length} of ${results.length}`,
    results.map((r) => `${r.delimiter} ${r.right ? 'yes' : 'no'}`).join(', '),
  );
}

async function largePart(set, part, dir) {
  const rows = Array.from({ length: set.large_leads }, (_, i) => [
    `person${i}.${part}@company${i % 997}.com`,
    FIRST[i % FIRST.length],
    COMPANIES[i % COMPANIES.length],
  ]);
  const leads = writeLeads(dir, `large-${part}.csv`, rows);
  const artifactsDir = tempDir('outreach-artifacts');
  const run = await runAgent(AGENT, { leads, template: TEMPLATE }, { artifactsDir });
  const counts = run.json?.counts ?? {};
  const REFUSALS = ['invalid', 'typo', 'no_mail', 'duplicate', 'suppressed', 'already_sent', 'missing_field', 'malformed_row'];
  const handled = (counts.drafted ?? 0) + REFUSALS.reduce((sum, key) => sum + (counts[key] ?? 0), 0);
  const files = readdirSync(artifactsDir);
  const csv = files.find((name) => name.endsWith('.csv'));
  const inArtifact = csv === undefined ? 0 : countCsvRecords(readFileSync(join(artifactsDir, csv), 'utf8'));
  figure(
    `${set.large_leads} leads: handled (drafted or refused with a reason)`,
    `${handled}`,
    `${(run.ms / 1000).toFixed(1)} s, exit ${run.exitCode}${run.exitCode === 0 ? '' : `: ${run.stderr.split('\n')[0]}`}`,
  );
  figure(
    `${set.large_leads} leads: drafts in the artifact`,
    inArtifact,
    `of ${counts.drafted ?? 0} drafted; artifacts: ${files.join(', ') || 'none'}`,
  );
}

export async function evalOutreach() {
  for (const part of setParts(AGENT)) {
    const set = readSet(AGENT, part);
    const dir = tempDir(`outreach-${part}`);
    await addressesPart(set, part, dir);
    await delimitersPart(set, part, dir);
    await largePart(set, part, dir);
  }
}
