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
