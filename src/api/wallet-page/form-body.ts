// The wallet page's forms (sign out, sandbox funding): a few short urlencoded fields.
import { SvcError } from '../../contract/errors.js';
import { decodeUtf8Body } from '../http/json-body.js';

/**
 * application/x-www-form-urlencoded, strictly: the bytes and every percent-decoded value must be UTF-8
 * (decodeURIComponent throws on a sequence that is not), where a lenient parser would keep U+FFFD.
 */
export function parseFormBody(bytes: Buffer): Record<string, string | string[]> {
  // No prototype: a field named __proto__ is just a field. A repeated name keeps every value (never our form's).
  const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  const text = decodeUtf8Body(bytes);
  for (const pair of text === '' ? [] : text.split('&')) {
    const separator = pair.indexOf('=');
    const [rawName, rawValue] = separator < 0 ? [pair, ''] : [pair.slice(0, separator), pair.slice(separator + 1)];
    let name: string;
    let value: string;
    try {
      name = decodeURIComponent(rawName.replaceAll('+', ' '));
      value = decodeURIComponent(rawValue.replaceAll('+', ' '));
    } catch {
      throw new SvcError('invalid_request', 'the form is not valid URL-encoded UTF-8');
    }
    const previous = fields[name];
    fields[name] = previous === undefined ? value : [previous, value].flat();
  }
  return fields;
}

export function amountField(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const amount = (body as Record<string, unknown>).amount;
  return typeof amount === 'string' ? amount : undefined;
}

