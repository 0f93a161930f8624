// Hiding a run's secrets in what it wrote (docs/api.md "Secrets", "Redaction"): every value, as it is, URL-encoded
// (encodeURIComponent's %XX, in either case of hex, and a form's + for a space) and in base64 (standard and URL-safe,
// padded or not, and at each of the three alignments it can have inside a longer base64 text, as GitHub's runner
// masks them), is replaced by ***. Pure: the node's runner uses it on a run's output and error, the log shipper on
// each line it sends.

export const REDACTED = '***';
/**
 * A base64 form shorter than this is not hidden: the part of a short value that stays the same at every alignment is
 * a few letters, which would hide them wherever they occur. The value itself, and its URL-encoded forms, always are.
 */
const MIN_DERIVED_CHARS = 6;

export type Redact = (text: string) => string;

/** The texts that stand for `value`: itself, its URL-encoded and its base64 forms. */
export function redactedForms(value: string): string[] {
  if (value === '') return [];
  const forms = new Set<string>([value]);
  const percent = encodeURIComponent(value);
  for (const form of [percent, percent.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()), percent.replace(/%20/g, '+')])
    forms.add(form);
  const bytes = Buffer.from(value, 'utf8');
  for (const shift of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    // The characters that only the value's bits decide: past the shift's bits, before the bits that follow it.
    const start = Math.ceil((8 * shift) / 6);
    const end = Math.floor((8 * (shift + bytes.length)) / 6);
    const stable = encoded.slice(start, end);
    if (shift === 0) {
      // Alone, the value is encoded whole, padding and all.
      forms.add(encoded);
      forms.add(encoded.replace(/=+$/, ''));
      forms.add(Buffer.from(bytes).toString('base64url'));
    }
    if (stable.length >= MIN_DERIVED_CHARS) {
      forms.add(stable);
      forms.add(stable.replace(/\+/g, '-').replace(/\//g, '_'));
    }
  }
  return [...forms].filter((form) => form === value || form.length >= MIN_DERIVED_CHARS);
}

/** A function that hides every form of every value; the identity when there are none. */
export function createRedactor(values: Iterable<string>): Redact {
  const forms = [...new Set([...values].flatMap(redactedForms))].sort((a, b) => b.length - a.length);
  if (forms.length === 0) return (text) => text;
  // Longest first, so a value that holds another is hidden whole.
  const pattern = new RegExp(forms.map((form) => form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return (text) => text.replace(pattern, REDACTED);
}

/** A JSON value with every string in it (keys too) redacted. */
export function redactJson(value: unknown, redact: Redact): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((item) => redactJson(item, redact));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redact(key), redactJson(item, redact)]));
  }
  return value;
}
