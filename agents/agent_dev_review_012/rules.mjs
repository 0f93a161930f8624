// What the review flags in added lines. A small, documented set (docs/sections/starter-agents.md): precise
// patterns for well-known credential formats, one generic assignment rule, conflict markers and TODO/FIXME.

/** Files git counts as binary at or above this size are flagged: 1 MiB. */
export const LARGE_BINARY_BYTES = 1024 * 1024;

export const SECRET_RULES = [
  // RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP (… PRIVATE KEY BLOCK) and plain PKCS#8 "PRIVATE KEY".
  { rule: 'private-key', what: 'a PEM private key', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/ },
  { rule: 'aws-access-key-id', what: 'an AWS access key id', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/ },
  { rule: 'github-token', what: 'a GitHub token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\b/ },
  { rule: 'slack-token', what: 'a Slack token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/ },
  { rule: 'slack-webhook', what: 'a Slack webhook URL', pattern: /https:\/\/hooks\.slack\.com\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]+/ },
  // `password = "…"`, `api_key: '…'`: a quoted literal of 6 or more characters, not a ${VAR}, <placeholder> or %(name)s.
  {
    rule: 'password-assignment',
    what: 'a hard-coded password or key',
    pattern: /\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\b["']?\s*[:=]\s*(["'])(?![$<%{])([^"'\s]{6,})\1/i,
    valueGroup: 2,
  },
];

/** Values that are obviously not secrets, for the generic rule only. */
const PLACEHOLDER = /^(?:x+|\*+|\.+|changeme|change_me|example|password|secret|your[-_a-z]*|dummy|redacted|placeholder)$/i;

/** The line with the secret cut to its first characters, so the review never repeats a credential. */
function redact(line, match, valueGroup) {
  const value = valueGroup ? match[valueGroup] : match[0];
  const start = match.index + (valueGroup ? match[0].lastIndexOf(value) : 0);
  const kept = value.startsWith('-----BEGIN') ? value : `${value.slice(0, 4)}…[redacted]`;
  const shown = `${line.slice(0, start)}${kept}${line.slice(start + value.length)}`.trim();
  return shown.length > 160 ? `${shown.slice(0, 157)}...` : shown;
}

export function findSecrets(line) {
  const found = [];
  for (const { rule, what, pattern, valueGroup } of SECRET_RULES) {
    const match = pattern.exec(line);
    if (!match || (valueGroup && PLACEHOLDER.test(match[valueGroup]))) continue;
    found.push({ rule, message: `adds ${what}`, excerpt: redact(line, match, valueGroup) });
  }
  return found;
}

/** Start, base (diff3) and end markers always count; "=======" alone also underlines Markdown, so only beside them. */
const CONFLICT_MARKER = /^(?:<{7}|\|{7}|>{7})(?: |$)/;
const CONFLICT_SEPARATOR = /^={7}$/;

export function conflictMarkerKind(line) {
  if (CONFLICT_MARKER.test(line)) return 'marker';
  if (CONFLICT_SEPARATOR.test(line)) return 'separator';
  return null;
}

export const TODO = /\b(TODO|FIXME)\b/;

/** Shell scripts by name, or by a `#!` line naming a POSIX-family shell for an executable file with no extension. */
export const SHELL_EXTENSIONS = /\.(?:sh|bash|ksh|dash)$/;
export const SHELL_SHEBANG = /^#!\s*(?:\/usr)?\/bin\/(?:env\s+)?(?:sh|bash|dash|ksh)\b/;
