// Whether an address can receive mail at all. Only clearly invalid addresses are refused, each with the reason;
// whether the mailbox exists is not knowable without sending, and this agent never sends.

const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

/** Null when the address is plausible, else why not. */
export function addressProblem(address) {
  if (address === '') return 'no address';
  if (/[\s\x00-\x1f\x7f]/.test(address)) return 'contains a space or a control character';
  if (/[^\x20-\x7e]/.test(address)) return 'contains non-ASCII characters (internationalised addresses are not supported)';
  const at = address.lastIndexOf('@');
  if (at === -1) return 'has no @';
  if (address.indexOf('@') !== at) return 'has more than one @';
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local === '') return 'has nothing before the @';
  if (local.length > 64) return 'has more than 64 characters before the @';
  if (!LOCAL_PART.test(local)) return `has an invalid part before the @ ("${local}": a leading, trailing or double dot, or a character mail does not allow)`;
  if (domain === '') return 'has no domain after the @';
  if (domain.length > 253) return 'has a domain longer than 253 characters';
  const labels = domain.split('.');
  if (labels.length < 2) return `has a domain without a dot ("${domain}")`;
  if (!labels.every((label) => DOMAIN_LABEL.test(label))) return `has an invalid domain ("${domain}")`;
  if (!/^(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$/.test(labels.at(-1))) return `has an invalid top-level domain (".${labels.at(-1)}")`;
  return null;
}

/** Duplicates and suppressions compare addresses case-insensitively (ASCII only: non-ASCII ones are refused). */
export function addressKey(address) {
  return address.toLowerCase();
}

/**
 * Mail providers whose domains people mistype most, by the largest providers' shares of addresses: a domain within
 * one or two edits of one of these, and not one of them itself, is taken for a typo of it.
 */
const PROVIDERS = [
  'gmail.com', 'googlemail.com', 'yahoo.com', 'ymail.com', 'hotmail.com', 'outlook.com', 'live.com', 'msn.com',
  'icloud.com', 'me.com', 'mac.com', 'aol.com', 'protonmail.com', 'proton.me', 'gmx.com', 'gmx.net', 'gmx.de',
  'gmx.at', 'web.de', 'mail.com', 'yandex.ru', 'mail.ru', 'qq.com', '163.com', 'naver.com', 'comcast.net',
  'verizon.net', 'att.net', 'sbcglobal.net', 't-online.de', 'orange.fr', 'free.fr', 'libero.it', 'seznam.cz',
  'fastmail.com', 'zoho.com', 'posteo.de', 'sapo.pt', 'hotmail.co.uk', 'hotmail.fr', 'hotmail.de', 'hotmail.it',
  'yahoo.co.uk', 'yahoo.fr', 'yahoo.de', 'yahoo.co.jp', 'outlook.de', 'outlook.fr', 'live.co.uk', 'btinternet.com',
];
const KNOWN = new Set(PROVIDERS);

/** Damerau-Levenshtein distance (a swap of two neighbours is one edit: "gmial"), stopping early past `limit`. */
function distance(a, b, limit) {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  const rows = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    rows[i] = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, rows[i - 2][j - 2] + 1);
      rows[i][j] = value;
      best = Math.min(best, value);
    }
    if (best > limit) return limit + 1;
  }
  return rows[a.length][b.length];
}

/**
 * The provider's domain a mistyped domain was meant to be, or null: within one edit, or two for a domain of 9 or more
 * characters (short domains are close to many real ones), choosing the nearest, then the more common.
 */
export function typoSuggestion(domain) {
  const lower = domain.toLowerCase();
  if (KNOWN.has(lower)) return null;
  let best = null;
  for (const provider of PROVIDERS) {
    const limit = provider.length >= 9 ? 2 : 1;
    const d = distance(lower, provider, limit);
    if (d <= limit && (best === null || d < best.d)) best = { provider, d };
  }
  return best?.provider ?? null;
}

/** Addresses of a function, not a person (RFC 2142's and their everyday kin): flagged, since few answer cold mail. */
const ROLE_LOCAL_PARTS = new Set(
  ('abuse accounts admin administrator billing careers contact customerservice donotreply do-not-reply enquiries ' +
    'finance hello help helpdesk hostmaster hr info inquiries jobs legal mail mailer-daemon marketing media news ' +
    'newsletter no-reply noc noreply notifications office postmaster press privacy root sales security service ' +
    'support team webmaster').split(' '),
);

export function isRoleAddress(address) {
  const local = address.slice(0, address.lastIndexOf('@')).toLowerCase().replace(/\+.*$/, '');
  return ROLE_LOCAL_PARTS.has(local);
}
