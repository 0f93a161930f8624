// U+0000 (NUL) in what a client writes (docs/api.md "Conventions"): no path, query, JSON string or key, or form field
// of this API takes one, and PostgreSQL's text cannot hold one (a query with it fails, which answered 500 and logged
// an error where SQLite stored it). Refused in one place for every route, so a route added later is covered by
// itself: the raw URL here, JSON bodies in json-body.ts, forms in wallet-page/form-body.ts. Bodies that are bytes (an
// upload, an artifact) are no text and are not looked at. What an agent wrote, as its node ships it, may hold NUL:
// a route names those parts in `config.nulAllowedIn`, and keeps them safely itself (a result's output is stored as
// JSON, whose escape holds it; a log line's NUL becomes U+FFFD).
import type { FastifyRequest } from 'fastify';
import { SvcError } from '../../contract/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The parts of this route's JSON body whose strings and keys may hold U+0000: JSON pointers, `*` standing for
     * any one key or index; a part's whole subtree is included.
     */
    nulAllowedIn?: readonly string[];
  }
}

const REMEDY = 'Remove the U+0000 (NUL) character, or the %00 or \\u0000 that spells it: no path, query or field of this API takes one.';

/** 400 invalid_request for a NUL in `where` (the path, the query, the request body); `pointer`: the field. */
export function nulRefused(where: string, pointer?: string): SvcError {
  return new SvcError('invalid_request', `${where} holds U+0000 (NUL)${pointer === undefined ? '' : ` at ${pointer}`}`, {
    remedy: REMEDY,
    ...(pointer === undefined ? {} : { extensions: { errors: [{ path: pointer, message: 'must not contain U+0000 (NUL)' }] } }),
  });
}

/**
 * onRequest, on the root: %00 anywhere in the URL as sent, which the router and the query parser decode to NUL. The
 * only spelling of NUL a URL has: Node's HTTP parser refuses a raw NUL byte in the request line before any route.
 */
export async function refuseNulInUrl(request: FastifyRequest): Promise<void> {
  const url = request.raw.url ?? '';
  if (!url.includes('%00')) return;
  const query = url.indexOf('?');
  throw nulRefused(query >= 0 && url.indexOf('%00') > query ? 'the query' : 'the request path');
}

/**
 * The JSON pointer of the first string or key of `value` that holds NUL outside the `allowed` parts, or undefined.
 * `text`, the JSON `value` was parsed from, skips the walk when it spells no NUL (nearly every body).
 */
export function findNul(value: unknown, text: string, allowed: readonly string[] = []): string | undefined {
  if (!text.includes('\\u0000') && !text.includes('\u0000')) return undefined;
  const patterns = allowed.map((pointer) => pointer.split('/').slice(1));
  const isAllowed = (path: readonly string[]) =>
    patterns.some((pattern) => pattern.length <= path.length && pattern.every((key, index) => key === '*' || key === path[index]));
  // Depth-first, by hand: the body nests at most MAX_JSON_DEPTH (json-body.ts), but a walk needs no recursion.
  const pending: Array<{ value: unknown; path: string[] }> = [{ value, path: [] }];
  while (pending.length > 0) {
    const { value: each, path } = pending.pop()!;
    if (isAllowed(path)) continue;
    // The key that leads here (an index never holds one).
    if (path.at(-1)?.includes('\u0000') === true || (typeof each === 'string' && each.includes('\u0000'))) return pointerOf(path);
    if (each === null || typeof each !== 'object') continue;
    const entries = Array.isArray(each) ? each.map((item, index) => [String(index), item] as const) : Object.entries(each);
    // Reversed onto the stack, so the first NUL in the body's order is the one named.
    for (const [key, item] of entries.reverse()) pending.push({ value: item, path: [...path, key] });
  }
  return undefined;
}

/** RFC 6901, with the NUL itself written as \u0000 so the pointer can be read and echoed. */
function pointerOf(path: readonly string[]): string {
  return path.map((key) => `/${key.replaceAll('~', '~0').replaceAll('/', '~1').replaceAll('\u0000', '\\u0000')}`).join('');
}
