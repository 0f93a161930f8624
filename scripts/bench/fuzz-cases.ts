// The cases of the fuzz bench (./fuzz.ts): case `index` of a seed is always the same request (with the ids and
// credentials the setup of that run made). Its route is the index's turn through the OpenAPI routes; its kind is
// drawn: a request through undici, valid or mutated (./fuzz-requests.ts), or bytes on a raw socket, exactly as chosen:
// broken request lines and headers, chunked encodings, bodies that are not UTF-8, pipelining, half-closed and reset
// sockets, slowloris headers and bodies, a Content-Length over the cap followed by silence.
import { caseRng, randomText, token, type Rng } from './fuzz-random.js';
import { apiRequest, type Fixtures, type HttpRequest, type Route } from './fuzz-requests.js';

export const CASE_KINDS = {
  api: 34,
  'api-mutated': 22,
  'bad-request-line': 8,
  'bad-headers': 10,
  'bad-body': 7,
  chunked: 7,
  pipeline: 3,
  'half-close': 3,
  reset: 2,
  'split-writes': 2,
  'idle-socket': 0.5,
  'slow-headers': 0.7,
  'slow-body': 0.8,
  'over-cap': 0.5,
} as const;
export type CaseKind = keyof typeof CASE_KINDS;

export interface WireStep {
  /** Waited before the bytes are written. */
  pauseMs: number;
  bytes: Buffer;
}

export interface FuzzCase {
  index: number;
  kind: CaseKind;
  route: Route;
  /** As sent, for the report. */
  method: string;
  target: string;
  http?: HttpRequest;
  /** `answers`: how many answers end the wait (1 unless told). */
  wire?: { steps: WireStep[]; end: 'wait' | 'half-close' | 'destroy' | 'reset'; answers?: number };
  /** How long the bench waits for the answer (or the close) after the last byte. */
  deadlineMs: number;
  /** A complete, well-formed request of a route that does not hold its answer: no answer is a finding. */
  answerDue: boolean;
  /** A body that stalls or trickles on a route that reads it: it must be cut off (408) or the connection closed. */
  cutDue: boolean;
  /** A console form with the session, sent as another site would: anything but a refusal is a finding. */
  crossSite: boolean;
}

export interface CaseContext {
  seed: number;
  routes: Route[];
  fx: Fixtures;
  /** host:port of the service now (it changes when svc-api is started again after an exit). */
  host: string;
  bodyIdleMs: number;
}

const ANSWER_MS = 10_000;

export function buildCase(ctx: CaseContext, index: number): FuzzCase {
  const rng = caseRng(ctx.seed, index);
  const route = ctx.routes[index % ctx.routes.length]!;
  const kind = rng.weighted(CASE_KINDS);
  const mode = kind === 'api' || kind === 'split-writes' || kind === 'slow-headers' ? 'valid' : 'mutated';
  const valid = apiRequest(rng, route, ctx.fx, index, mode);
  const base = { index, kind, route, method: valid.method, target: valid.target, deadlineMs: ANSWER_MS, answerDue: false, cutDue: false };
  const once = (bytes: Buffer): WireStep[] => [{ pauseMs: 0, bytes }];
  const stallMs = (stalls: boolean): number => (stalls ? ctx.bodyIdleMs + ANSWER_MS : ANSWER_MS);
  const readsBody = route.kind !== 'none' && route.method !== 'GET';
  const whole = (request: HttpRequest): Buffer => serialize(request, ctx.host);
  switch (kind) {
    case 'api':
    case 'api-mutated':
      return { ...base, crossSite: crossSiteForm(route, valid, ctx.fx), http: valid, answerDue: !route.holds };
    case 'bad-request-line': {
      const request = badRequestLine(rng, valid, ctx.host);
      return { ...base, crossSite: false, ...shown(request), wire: { steps: once(request), end: 'wait' } };
    }
    case 'bad-headers':
      return { ...base, crossSite: false, wire: { steps: once(badHeaders(rng, valid, ctx.host)), end: 'wait' } };
    case 'bad-body': {
      const { bytes, stalls } = badBody(rng, valid, ctx.host);
      return { ...base, crossSite: false, wire: { steps: once(bytes), end: 'wait' }, deadlineMs: stallMs(stalls) };
    }
    case 'chunked': {
      const { bytes, stalls } = chunked(rng, valid, ctx.host);
      return { ...base, crossSite: false, wire: { steps: once(bytes), end: 'wait' }, deadlineMs: stallMs(stalls) };
    }
    case 'pipeline': {
      const count = rng.between(2, 4);
      const parts = Array.from({ length: count }, (_, i) => {
        const request = i === 0 ? valid : apiRequest(rng, route, ctx.fx, index, rng.chance(0.5) ? 'valid' : 'mutated');
        return rng.chance(0.2) ? badRequestLine(rng, request, ctx.host) : whole(request);
      });
      const end = rng.chance(0.3) ? 'half-close' : 'wait';
      return { ...base, crossSite: false, wire: { steps: once(Buffer.concat(parts)), end, answers: count } };
    }
    case 'half-close': {
      const bytes = whole(valid);
      const cut = rng.chance(0.5) ? bytes : bytes.subarray(0, rng.int(bytes.length));
      return { ...base, crossSite: false, wire: { steps: once(cut), end: 'half-close' } };
    }
    case 'reset': {
      const bytes = whole(valid);
      const cut = rng.chance(0.3) ? bytes : bytes.subarray(0, rng.int(bytes.length));
      const steps = [...once(cut), { pauseMs: rng.int(50), bytes: Buffer.alloc(0) }];
      return { ...base, crossSite: false, wire: { steps, end: rng.chance(0.5) ? 'reset' : 'destroy' }, deadlineMs: 0 };
    }
    case 'split-writes': {
      const steps = split(rng, whole(valid), rng.between(2, 10), () => rng.int(40));
      return { ...base, crossSite: false, wire: { steps, end: 'wait' }, answerDue: !route.holds };
    }
    case 'idle-socket': {
      const bytes = Buffer.from(rng.pick(['', '\r\n', '\r\n\r\n', ' ']), 'latin1');
      const steps = [...once(bytes), { pauseMs: rng.between(500, 2500), bytes: Buffer.alloc(0) }];
      return { ...base, crossSite: false, wire: { steps, end: rng.pick(['destroy', 'half-close'] as const) }, deadlineMs: 1000 };
    }
    case 'slow-headers': {
      const bytes = whole(valid);
      const headEnd = bytes.indexOf('\r\n\r\n') + 4;
      const steps: WireStep[] = [];
      let at = 0;
      let spent = 0;
      const budget = rng.between(1000, 2500);
      while (at < headEnd && spent < budget) {
        const size = rng.between(1, 3);
        const pauseMs = rng.between(150, 400);
        steps.push({ pauseMs, bytes: bytes.subarray(at, Math.min(at + size, headEnd)) });
        at += size;
        spent += pauseMs;
      }
      const finish = rng.chance(0.5);
      if (finish) steps.push({ pauseMs: 0, bytes: bytes.subarray(Math.min(at, headEnd)) });
      const wire = { steps, end: finish ? ('wait' as const) : ('destroy' as const) };
      return { ...base, crossSite: false, wire, answerDue: finish && !route.holds, deadlineMs: finish ? ANSWER_MS : 0 };
    }
    case 'slow-body': {
      const body = valid.body !== undefined && valid.body.length > 4 ? valid.body : Buffer.from(JSON.stringify({ pad: 'x'.repeat(200) }));
      const head = serializeHead({ ...valid, body }, ctx.host);
      const pause = rng.chance(0.5);
      const steps: WireStep[] = [{ pauseMs: 0, bytes: Buffer.concat([head, body.subarray(0, 2)]) }];
      if (pause) {
        steps.push({ pauseMs: ctx.bodyIdleMs + 1500, bytes: body.subarray(2) });
      } else {
        // A byte every quarter of the idle time: never idle long enough, far below the minimum rate.
        for (let at = 2; at < Math.min(body.length, 2 + 24); at += 1) {
          steps.push({ pauseMs: Math.max(100, ctx.bodyIdleMs / 4), bytes: body.subarray(at, at + 1) });
        }
      }
      return { ...base, crossSite: false, wire: { steps, end: 'wait' }, cutDue: readsBody, deadlineMs: ANSWER_MS };
    }
    case 'over-cap': {
      const length = rng.pick([65_537, 100_000, 1 << 20, 5 * (1 << 20) + 1, 20 << 20, 2 ** 31, 1e12]);
      const head = serializeHead({ ...valid, body: undefined }, ctx.host, length);
      const then = rng.weighted({ silence: 60, some: 20, close: 20 });
      const steps: WireStep[] = [{ pauseMs: 0, bytes: head }];
      if (then === 'some') steps.push({ pauseMs: rng.int(200), bytes: rng.bytes(rng.between(1, 4096)) });
      if (then === 'close') steps.push({ pauseMs: rng.int(200), bytes: Buffer.alloc(0) });
      const wire = { steps, end: then === 'close' ? ('destroy' as const) : ('wait' as const) };
      return { ...base, crossSite: false, wire, deadlineMs: then === 'close' ? 0 : ctx.bodyIdleMs + 3000 };
    }
  }
}

/** The method and target of mangled bytes, for the report. */
function shown(bytes: Buffer): { method: string; target: string } {
  const line =
    bytes
      .subarray(0, Math.min(bytes.length, 200))
      .toString('latin1')
      .split(/\r?\n|\r/)[0] ?? '';
  const [method = '', target = ''] = line.split(' ');
  return { method: method.slice(0, 40), target: target.slice(0, 120) };
}

/** Would the console refuse it as a cross-site form? (security.ts: same-origin Fetch Metadata, no foreign Origin.) */
function crossSiteForm(route: Route, request: HttpRequest, fx: Fixtures): boolean {
  if (!route.path.startsWith('/wallet/') || route.method !== 'POST') return false;
  const header = (name: string): string | undefined => request.headers.find(([each]) => each === name)?.[1];
  const who = route.ends ? fx.spare : fx.main;
  if (header('cookie') !== `svc_wallet=${who.cookie}`) return false;
  const site = header('sec-fetch-site');
  const origin = header('origin');
  return !(site === 'same-origin' && (origin === undefined || origin === 'null'));
}

const headerLines = (request: HttpRequest): string[] => request.headers.map(([name, value]) => `${name}: ${value}`);

export function serializeHead(request: HttpRequest, host: string, contentLength = request.body?.length, eol = '\r\n'): Buffer {
  const lines = [`${request.method} ${request.target} HTTP/1.1`, `host: ${host}`, ...headerLines(request)];
  if (contentLength !== undefined) lines.push(`content-length: ${contentLength}`);
  return Buffer.from(`${lines.join(eol)}${eol}${eol}`, 'utf8');
}

export function serialize(request: HttpRequest, host: string): Buffer {
  return Buffer.concat([serializeHead(request, host), request.body ?? Buffer.alloc(0)]);
}

/** The bytes in `parts` writes, each after a pause. */
function split(rng: Rng, bytes: Buffer, parts: number, pause: () => number): WireStep[] {
  const cuts = [...new Set(Array.from({ length: parts - 1 }, () => rng.int(bytes.length)))].sort((a, b) => a - b);
  const edges = [0, ...cuts, bytes.length];
  return edges.slice(1).map((end, i) => ({ pauseMs: i === 0 ? 0 : pause(), bytes: bytes.subarray(edges[i]!, end) }));
}

const utf8AsLatin1 = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

function badRequestLine(rng: Rng, request: HttpRequest, host: string): Buffer {
  let method = request.method;
  let target = request.target;
  let version = 'HTTP/1.1';
  let eol = '\r\n';
  let prefix = '';
  const changes = rng.between(1, 2);
  for (let i = 0; i < changes; i += 1) {
    switch (rng.int(5)) {
      case 0:
        method = rng.pick([
          'get',
          'GET ',
          ' GET',
          'G\tET',
          'PROPFIND',
          'TRACE',
          'CONNECT',
          'OPTIONS',
          'PATCH',
          'HEAD',
          'QUERY',
          'M-SEARCH',
          'PRI',
          'X'.repeat(rng.pick([20, 300, 20_000])),
          'POST\u0000',
          utf8AsLatin1('PÖST'),
          '',
          '0',
          'GET GET',
        ]);
        break;
      case 1:
        target = rng.pick([
          '*',
          `http://${host}${target}`,
          `https://evil.example${target}`,
          `${target} x`,
          target.replace('/', '\\'),
          `${target}#frag`,
          `${target}%`,
          `/${'a'.repeat(rng.pick([8000, 70_000]))}`,
          `${target}\u0000`,
          `${target}${utf8AsLatin1(randomText(rng, 20))}`,
          `${target}\u00ff\u00fe`,
          '',
          'no-slash',
          `//${target}`,
          `${target}?${'q'.repeat(20_000)}`,
          `${target}\t`,
          `${target}/%2e%2e/%2e%2e/etc/passwd`,
        ]);
        break;
      case 2:
        version = rng.pick([
          'HTTP/1.0',
          'HTTP/0.9',
          'HTTP/2.0',
          'HTTP/1.2',
          'HTTP/3',
          'http/1.1',
          'HTTP/1.1 x',
          'HTTP/',
          'HTTP/1.10',
          '',
          'HTTP/1.1\u0000',
        ]);
        break;
      case 3:
        eol = rng.pick(['\n', '\r', '\r\r\n', '\n\r']);
        break;
      default:
        // Blank lines (allowed before a request), a space, U+0000, the start of a TLS ClientHello, HTTP/2's preface.
        prefix = rng.pick([
          '\r\n',
          '\r\n\r\n',
          ' ',
          '\u0000',
          '\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u00a1\u0003\u0003',
          'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
        ]);
    }
  }
  const lines = [`${method} ${target} ${version}`.replace(/ $/, ''), `host: ${host}`, ...headerLines(request)];
  if (request.body !== undefined) lines.push(`content-length: ${request.body.length}`);
  return Buffer.concat([Buffer.from(`${prefix}${lines.join(eol)}${eol}${eol}`, 'latin1'), request.body ?? Buffer.alloc(0)]);
}

function badHeaders(rng: Rng, request: HttpRequest, host: string): Buffer {
  const body = request.body ?? Buffer.alloc(0);
  const size = body.length;
  let lines: string[] = [`host: ${host}`, ...headerLines(request), `content-length: ${size}`];
  const replace = (name: string, value: () => string): string[] =>
    lines.map((line) => (line.startsWith(`${name}:`) ? `${name}: ${value()}` : line));
  const changes = rng.between(1, 3);
  for (let i = 0; i < changes; i += 1) {
    const change = rng.int(14);
    if (change === 0) {
      lines.push(`content-length: ${rng.pick([size + 1, Math.max(0, size - 1), 0, 7])}`);
    } else if (change === 1) {
      lines = replace('content-length', () =>
        rng.pick([
          '-1',
          'abc',
          '1e3',
          ` ${size}`,
          `0x${size.toString(16)}`,
          `+${size}`,
          '99999999999999999999',
          `${size}, ${size}`,
          `${size},1`,
          '',
        ]),
      );
    } else if (change === 2) {
      lines = rng.chance(0.5)
        ? lines.filter((line) => !line.startsWith('host:'))
        : [...lines, `host: ${rng.pick(['', 'evil.example', 'a'.repeat(300), '[::1', 'host:99999', host])}`];
    } else if (change === 3) {
      lines.push(`x-folded: a${rng.pick(['\r\n continued', '\r\n\tcontinued', '\r\n'])}`);
    } else if (change === 4) {
      lines.push(
        rng.pick([
          'garbage header line',
          ': empty-name',
          'x y: 1',
          'x@y: 1',
          `${utf8AsLatin1('é')}: 1`,
          'content-type : application/json',
          'x-a:\u0000',
          'x-a: b\rc',
          'x-a: \u007f',
        ]),
      );
    } else if (change === 5) {
      lines.push(`x-${token(rng, 1, 8)}: ${utf8AsLatin1(randomText(rng, 80))}`);
    } else if (change === 6) {
      lines.push(`x-big: ${'a'.repeat(rng.pick([17_000, 70_000]))}`);
    } else if (change === 7) {
      for (let n = rng.pick([200, 2000]); n > 0; n -= 1) lines.push(`x-h${n}: ${n}`);
    } else if (change === 8) {
      lines.push(
        rng.pick([
          'expect: 100-continue',
          'expect: garbage',
          'connection: upgrade\r\nupgrade: websocket',
          'connection: upgrade\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAAP__',
          'connection: keep-alive, close',
          'connection: \u0000',
        ]),
      );
    } else if (change === 9) {
      const encodings = ['transfer-encoding: identity', 'transfer-encoding: gzip', 'content-encoding: gzip', 'content-encoding: br, gzip'];
      lines.push(rng.pick(encodings));
    } else if (change === 10) {
      lines = replace('content-type', () => utf8AsLatin1(randomText(rng, 60)));
    } else if (change === 11) {
      lines.push(
        rng.pick([
          `authorization: Bearer \u0000${token(rng)}`,
          `authorization: ${utf8AsLatin1('Bearer é')}`,
          `cookie: svc_wallet=${utf8AsLatin1(randomText(rng, 40))}`,
          'cookie: \u00ff\u00fe',
        ]),
      );
    } else if (change === 12) {
      lines.push(`x-request-id: ${rng.pick(['dup', utf8AsLatin1('ü'), 'a b', 'x'.repeat(200)])}`);
    } else {
      lines = lines.map((line) => (rng.chance(0.3) ? line.toUpperCase() : line));
    }
  }
  return Buffer.concat([Buffer.from(`${request.method} ${request.target} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** Bodies that are not what they claim: not UTF-8, U+0000, a BOM, UTF-16, nested past the bound, framed wrong. */
function badBody(rng: Rng, request: HttpRequest, host: string): { bytes: Buffer; stalls: boolean } {
  const body = request.body ?? Buffer.from('{}');
  const at = rng.int(body.length + 1);
  const insert = (bytes: number[]): Buffer => Buffer.concat([body.subarray(0, at), Buffer.from(bytes), body.subarray(at)]);
  const withHead = (bytes: Buffer, length = bytes.length): Buffer =>
    Buffer.concat([serializeHead({ ...request, body: bytes }, host, length), bytes]);
  switch (rng.int(12)) {
    case 0: {
      // A byte that starts nothing, an overlong '/', a surrogate, past U+10FFFF, a sequence cut short, a UTF-16 BOM.
      const invalid = rng.pick([[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0xfe, 0xff]]);
      return { bytes: withHead(insert(invalid)), stalls: false };
    }
    case 1:
      return { bytes: withHead(insert([0])), stalls: false };
    case 2:
      return { bytes: withHead(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body])), stalls: false };
    case 3:
      return { bytes: withHead(Buffer.from(body.toString('utf8'), 'utf16le')), stalls: false };
    case 4: {
      const depth = rng.pick([63, 64, 65, 5000, 30_000]);
      return { bytes: withHead(Buffer.from(`${'['.repeat(depth)}${']'.repeat(depth)}`)), stalls: false };
    }
    case 5:
      return { bytes: withHead(body.subarray(0, at)), stalls: false };
    case 6:
      return { bytes: withHead(Buffer.concat([body, Buffer.from(rng.pick([' x', '}', '\u0000', '{}', ']]]']))])), stalls: false };
    case 7:
      return {
        bytes: withHead(
          Buffer.from(
            rng.pick([
              'NaN',
              '1e400',
              '-',
              '{"a":1,"a":2}',
              `{"n":${'9'.repeat(10_000)}}`,
              '"\\ud800"',
              '{"\\u0000":"\\u0000"}',
              '{"__proto__":{"x":1}}',
              '/*c*/{}',
              "{'a':1}",
              '{"a":"\\x41"}',
              '\u0000',
            ]),
          ),
        ),
        stalls: false,
      };
    case 8:
      // Longer than sent: the body stalls, and is cut off by the idle time.
      return { bytes: withHead(body, body.length + rng.between(1, 100)), stalls: true };
    case 9:
      return { bytes: withHead(body, Math.max(0, body.length - rng.between(1, 5))), stalls: false };
    case 10:
      return { bytes: withHead(Buffer.alloc(0)), stalls: false };
    default:
      // At the 64 KiB cap: a byte under it, on it, a byte over.
      return { bytes: withHead(Buffer.from(JSON.stringify('x'.repeat(rng.pick([65_533, 65_534, 65_535]))))), stalls: false };
  }
}

function chunked(rng: Rng, request: HttpRequest, host: string): { bytes: Buffer; stalls: boolean } {
  const body = request.body ?? Buffer.from(JSON.stringify({ x: randomText(rng, 40) }));
  const te = rng.chance(0.7)
    ? 'chunked'
    : rng.pick([
        'chunked, chunked',
        'gzip, chunked',
        'Chunked',
        ' chunked',
        'chunked;q=1',
        'xchunked',
        'chunked\r\ntransfer-encoding: chunked',
        'identity, chunked',
      ]);
  const withLength = rng.chance(0.15) ? `\r\ncontent-length: ${rng.pick([body.length, 0, 5])}` : '';
  const lines = [`${request.method} ${request.target} HTTP/1.1`, `host: ${host}`, ...headerLines(request)];
  const head = Buffer.from(`${lines.join('\r\n')}\r\ntransfer-encoding: ${te}${withLength}\r\n\r\n`, 'latin1');
  const eol = rng.chance(0.1) ? '\n' : '\r\n';
  const chunks: string[] = [];
  let stalls = false;
  for (let at = 0; at < body.length;) {
    const size = Math.min(body.length - at, rng.between(1, 64));
    const data = body.subarray(at, at + size).toString('latin1');
    at += size;
    let sizeText = size.toString(16);
    if (rng.chance(0.05)) {
      sizeText = rng.pick([
        'zz',
        '-1',
        ` ${sizeText}`,
        `${sizeText} `,
        `0x${sizeText}`,
        'ffffffffffffffff',
        `${sizeText};ext=${'e'.repeat(rng.pick([5, 10_000]))}`,
        `${sizeText};a="b"`,
        '',
      ]);
    }
    if (rng.chance(0.03)) {
      stalls = true;
      sizeText = (size + rng.between(1, 10)).toString(16);
    }
    chunks.push(`${sizeText}${eol}${data}${rng.chance(0.03) ? '' : eol}`);
  }
  const last = rng.weighted({ plain: 80, trailer: 8, none: 6, bigTrailer: 3, garbage: 3 });
  if (last === 'plain') chunks.push(`0${eol}${eol}`);
  if (last === 'trailer') chunks.push(`0${eol}x-trailer: 1${eol}content-length: 5${eol}${eol}`);
  if (last === 'bigTrailer') chunks.push(`0${eol}x-t: ${'t'.repeat(20_000)}${eol}${eol}`);
  if (last === 'garbage') chunks.push(`0${eol}${eol}GARBAGE`);
  if (last === 'none') stalls = true;
  return { bytes: Buffer.concat([head, Buffer.from(chunks.join(''), 'latin1')]), stalls };
}
