// The forms of the wallet page and the console: a few short urlencoded fields, read strictly.
import { SvcError } from '../../contract/errors.js';
import { decodeUtf8Body } from '../http/json-body.js';
import { nulRefused } from '../http/nul-input.js';

/**
 * application/x-www-form-urlencoded, strictly: the bytes and every percent-decoded value must be UTF-8
 * (decodeURIComponent throws on a sequence that is not), where a lenient parser would keep U+FFFD; and none holds
 * U+0000 (http/nul-input.ts).
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
    if (name.includes('\u0000') || value.includes('\u0000')) throw nulRefused('a field of the form');
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

/** One text field of a form: '' when absent; a repeated one or one longer than `maxChars` is no form of ours (400). */
export function textField(body: unknown, name: string, maxChars: number): string {
  const value = body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new SvcError('invalid_request', `the form's field ${name} is given more than once`);
  if ([...value].length > maxChars) throw new SvcError('invalid_request', `the form's field ${name} is longer than ${maxChars} characters`);
  return value;
}

/** The values of a field that may repeat (checkboxes), each at most `maxChars`. */
export function listField(body: unknown, name: string, maxChars: number): string[] {
  const value = body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  const values = value === undefined ? [] : [value].flat();
  if (values.some((each) => typeof each !== 'string' || each.length > maxChars))
    throw new SvcError('invalid_request', `the form's field ${name} holds a value longer than ${maxChars} characters`);
  return values as string[];
}
