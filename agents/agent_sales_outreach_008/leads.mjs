// One lead's verdict: refused with a reason (and, for a mistyped provider, the address meant), or drafted with its
// flags (a role address; an MX record nobody could confirm).
import { addressKey, addressProblem, isRoleAddress, typoSuggestion } from './address.mjs';

/**
 * `{rejected: {line, email, reason, detail, suggestion?}}` or `{address, lead, flags, mx?}`. `context` holds the
 * suppressed and already drafted addresses, the MX checker (or null) and the campaign's sent log (or null).
 */
export function judgeLead(record, names, emailColumn, template, context) {
  const reject = (email, reason, detail, extra = {}) => ({ rejected: { line: record.line, email, reason, detail, ...extra } });
  if (record.fields.length !== names.length) return reject(null, 'malformed_row', `has ${record.fields.length} fields; the header has ${names.length}`);
  const lead = Object.fromEntries(names.map((name, i) => [name, record.fields[i].trim()]));
  const address = lead[emailColumn];
  const problem = addressProblem(address);
  if (problem) return reject(address, 'invalid', problem);
  const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  const meant = typoSuggestion(domain);
  if (meant) {
    const suggestion = `${address.slice(0, address.lastIndexOf('@'))}@${meant}`;
    return reject(address, 'typo', `the domain looks like a typo of ${meant}: did you mean ${suggestion}?`, { suggestion });
  }
  const key = addressKey(address);
  if (context.suppressed.has(key)) return reject(address, 'suppressed', 'is on the suppression list');
  if (context.seen.has(key)) return reject(address, 'duplicate', 'was already drafted from an earlier row (addresses compare case-insensitively)');
  if (context.sent?.has(address)) return reject(address, 'already_sent', 'this campaign mailed it in an earlier run');
  const empty = template.placeholders.find((name) => lead[name] === '');
  if (empty) return reject(address, 'missing_field', `${empty} is empty and the template uses {{${empty}}}`);
  const flags = [];
  let mx;
  if (context.mx) {
    const verdict = context.mx.verdict(domain);
    if (verdict?.ok === false) return reject(address, 'no_mail', verdict.problem);
    if (verdict?.ok) mx = verdict.mx;
    else flags.push('mx_unknown');
  }
  if (isRoleAddress(address)) flags.push('role_address');
  context.seen.add(key);
  return { address, lead, flags, ...(mx ? { mx } : {}) };
}
