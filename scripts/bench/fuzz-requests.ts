// Requests of the fuzz bench (./fuzz.ts) built from the OpenAPI document svc-api serves: each route's method and
// path, path parameters filled with ids the bench's setup made (./fuzz-fixtures.ts) or with garbage, its query
// parameters, its body from the route's own schema (valid, or mutated: wrong types, extra and missing fields,
// U+0000, lone surrogates, deep nesting), and a credential of the kind the route takes, or a wrong one.
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { AGENT_IDS } from '../../src/contract/agents.js';
import { DOCS_SECTIONS, TIER_IDS } from '../../src/contract/tiers.js';
import { randomText, token, type Rng } from './fuzz-random.js';

export type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
};

/** What a route's body is: JSON by its schema, a form of the console, an agent bundle, raw bytes, or none. */
export type BodyKind = 'json' | 'form' | 'bundle' | 'binary' | 'none';

export interface Route {
  method: string;
  path: string;
  params: { in: string; name: string; required: boolean; schema: JsonSchema }[];
  body: JsonSchema | undefined;
  kind: BodyKind;
  /** accessToken, nodeCredential, both, or none (wallet pages take the session cookie). */
  security: string[];
  /** A route that may hold its answer (long poll, wait, follow, execute's wait): no answer in time is no finding. */
  holds: boolean;
  /** A route that ends a credential or a session: it gets the spare user's, so the main one keeps working. */
  ends: boolean;
}

/** A user of the bench's setup and what it holds. */
export interface Principal {
  email: string;
  token: string;
  nodeCredential: string;
  nodeId: string;
  cookie: string;
}

export interface Fixtures {
  main: Principal;
  spare: Principal;
  deployToken: string;
  runIds: string[];
  leaseId: string;
  artifactName: string;
  secretName: string;
  endpointId: string;
  eventIds: string[];
  paymentId: string;
  sessionId: string;
  challengeId: string;
  version: string;
  digest: string;
  /** The port of the bench's loopback listener that no webhook delivery may reach (./fuzz-probes.ts). */
  trapPort: number;
  /** The keys the bench gave svc-api, so it can sign tokens and payment webhooks of its own. */
  jwtKey: Buffer;
  webhookSecret: string;
}

export interface HttpRequest {
  method: string;
  /** Already encoded as it goes on the request line. */
  target: string;
  headers: [string, string][];
  body: Buffer | undefined;
}

type Mode = 'valid' | 'mutated';

/** encodeURIComponent, except that a lone surrogate is sent as the three bytes UTF-8 forbids (it would throw). */
export function encode(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      const bytes = [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)];
      out += bytes.map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    } else {
      out += encodeURIComponent(char);
    }
  }
  return out;
}

const HOLDING = [/\/nodes\/poll$/, /^\/v1\/swarm\/runs\/\{run_id\}$/, /\/logs$/, /log-events$/, /\/execute$/, /^\/wallet\/fund$/];
const ENDING = [
  'POST /v1/auth/logout',
  'POST /wallet/logout',
  'GET /wallet/login',
  'DELETE /v1/swarm/nodes/self',
  'DELETE /v1/swarm/nodes/{node_id}',
  'POST /v1/swarm/nodes/{node_id}/credential',
];

/** Every route of the document, in a stable order (path, then method), so a seed means the same cases. */
export function routesOf(document: { paths: Record<string, Record<string, Record<string, unknown>>> }): Route[] {
  const routes: Route[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const content = (operation.requestBody as { content?: Record<string, { schema: JsonSchema }> } | undefined)?.content;
      const json = content?.['application/json']?.schema;
      const upper = method.toUpperCase();
      const kind: BodyKind =
        json !== undefined
          ? 'json'
          : path.startsWith('/wallet/') && upper === 'POST'
            ? 'form'
            : path.endsWith('/versions') && upper === 'POST'
              ? 'bundle'
              : path.includes('/artifacts/') && upper === 'PUT'
                ? 'binary'
                : 'none';
      routes.push({
        method: upper,
        path,
        params: ((operation.parameters ?? []) as Route['params']).map((param) => ({ ...param, required: param.required === true })),
        body: json,
        kind,
        security: ((operation.security ?? []) as Record<string, unknown>[]).flatMap((each) => Object.keys(each)),
        holds: HOLDING.some((pattern) => pattern.test(path)),
        ends: ENDING.includes(`${upper} ${path}`),
      });
    }
  }
  return routes.sort((a, b) => (a.path === b.path ? a.method.localeCompare(b.method) : a.path < b.path ? -1 : 1));
}

/** Path segments no id looks like, as they go in a URL: empty, over-long, dot segments, bad or odd encodings. */
const GARBAGE_SEGMENTS = [
  '0',
  '-1',
  '00000000-0000-0000-0000-000000000000',
  'a'.repeat(129),
  'a'.repeat(300),
  '%00',
  'x%00y',
  '%2e%2e',
  '..',
  '.',
  '%2F',
  'a%2Fb',
  '%zz',
  '%',
  '%C0%80',
  '%ED%A0%80',
  '%FF',
  '%F0%9F%98%80',
  '%C3%A9',
  '%E2%80%AE',
  '%E2%84%AA',
  '%27%20OR%201%3D1--',
  '%3Cscript%3E',
  '%0D%0ASet-Cookie:%20x=1',
  'null',
  'undefined',
  'NaN',
  '1e309',
  '99999999999999999999',
  '%24%7Bjndi:ldap://x%7D',
  '__proto__',
  'constructor',
  'CON',
  '~',
  'A%20B',
  '%EF%BB%BF',
  '%F4%90%80%80',
  ';',
  ',',
  '@',
  '*',
];

function garbageSegment(rng: Rng): string {
  return rng.chance(0.7) ? rng.pick(GARBAGE_SEGMENTS) : rng.chance(0.5) ? rng.uuid() : encode(randomText(rng, 80));
}

/** An id the setup made for a parameter of this name, as the route means it. */
function plausibleParam(rng: Rng, name: string, route: Route, fx: Fixtures, who: Principal): string {
  switch (name) {
    case 'agent_id':
      return rng.pick(AGENT_IDS);
    case 'version':
      return route.path.includes('/releases/') ? rng.pick(['0.1.0', 'latest', '0.0.0']) : fx.version;
    case 'file':
      return rng.pick(['swarm-node-linux-x64.tar.gz', 'SHA256SUMS', 'install.sh', 'swarm-node-linux-arm64.tar.gz']);
    case 'digest':
      return fx.digest;
    case 'run_id':
      return rng.pick(fx.runIds);
    case 'name':
      return route.path.includes('/artifacts/') ? fx.artifactName : rng.chance(0.5) ? fx.secretName : `FUZZ_${token(rng).toUpperCase()}`;
    case 'node_id':
      return who.nodeId;
    case 'endpoint_id':
      return fx.endpointId;
    case 'event_id':
      return fx.eventIds.length > 0 && rng.chance(0.8) ? rng.pick(fx.eventIds) : rng.uuid();
    case 'scope':
      return rng.pick(['all', ...AGENT_IDS]);
    case 'period':
      return rng.pick(['day', 'month']);
    case 'section':
      return rng.pick(DOCS_SECTIONS);
    case 'id':
      return fx.paymentId;
    default:
      return token(rng);
  }
}

/** A value for a query parameter: what its schema allows, or garbage; encoded. */
function queryValue(rng: Rng, name: string, schema: JsonSchema, fx: Fixtures, who: Principal): string {
  if (rng.chance(0.25)) return encode(randomText(rng, 300));
  if (name === 'to') return encode(who.email);
  if (name === 'before' || name === 'cursor') return rng.chance(0.5) ? rng.uuid() : encode(randomText(rng, 40));
  if (name === 'since' || name === 'until' || name === 'from' || name === 'to') {
    return rng.pick(['2026-01-01', '2026-01-01T00:00:00Z', '1970-01-01', '9999-12-31', 'yesterday']);
  }
  if (name === 'node_id') return who.nodeId;
  if (name === 'lease_id') return fx.leaseId;
  const value = valueFor(rng, schema, { fx, who, name, depth: 0, mode: 'valid' });
  return encode(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
}

/** The route's target: path parameters filled, query parameters maybe, odd additions sometimes. */
function targetOf(rng: Rng, route: Route, fx: Fixtures, who: Principal, mode: Mode): string {
  const garbageRate = mode === 'valid' ? 0.1 : 0.4;
  let path = route.path.replace(/\{([^}]+)\}/g, (_whole, name: string) =>
    rng.chance(garbageRate) ? garbageSegment(rng) : encode(plausibleParam(rng, name, route, fx, who)),
  );
  if (mode === 'mutated' && rng.chance(0.1)) {
    path = rng.pick([`${path}/`, `/${path}`, path.replace(/\//g, '//'), `${path}/..`, `${path}%2F`, path.toUpperCase(), `${path};x=1`]);
  }
  const query: string[] = [];
  for (const param of route.params.filter((each) => each.in === 'query')) {
    if (param.required || rng.chance(0.5)) query.push(`${param.name}=${queryValue(rng, param.name, param.schema, fx, who)}`);
  }
  if (route.path === '/wallet/login' && rng.chance(0.6)) {
    query.push(`token=${rng.chance(0.8) ? who.token : encode(randomText(rng, 200))}`);
    if (rng.chance(0.7)) query.push(`intent=${rng.chance(0.8) ? 'swarm_private_access' : encode(randomText(rng, 20))}`);
  }
  if (rng.chance(mode === 'valid' ? 0.05 : 0.2)) {
    const odd = ['a=%zz', 'x[y]=1', '__proto__[a]=1', '&&=&', `${token(rng)}=${encode(randomText(rng, 40))}`, 'limit=1&limit=2', '%00=%00'];
    query.push(rng.pick([...odd, 'a=' + 'b'.repeat(9000)]));
  }
  return query.length === 0 ? path : `${path}?${query.join('&')}`;
}

const PLAUSIBLE_URLS = (fx: Fixtures): string[] => [
  'https://hooks.fuzz.invalid/svc',
  'https://fuzz.invalid/',
  `https://localhost:${fx.trapPort}/hook`,
  `https://127.0.0.1:${fx.trapPort}/hook`,
  `https://[::1]:${fx.trapPort}/hook`,
  `https://[::ffff:127.0.0.1]:${fx.trapPort}/hook`,
  `https://2130706433:${fx.trapPort}/`,
  'https://169.254.169.254/latest/meta-data/',
  'http://fuzz.invalid/',
  'https://user:pass@fuzz.invalid/',
  'https://fuzz.invalid/#frag',
  'javascript:alert(1)',
  `https://${'a'.repeat(2100)}.invalid/`,
];

interface ValueContext {
  fx: Fixtures;
  who: Principal;
  name: string;
  depth: number;
  mode: Mode;
}

/** A value the schema allows (mostly), guided by the field's name to the setup's ids; in 'mutated' mode, often not. */
export function valueFor(rng: Rng, schema: JsonSchema, ctx: ValueContext): unknown {
  if (ctx.mode === 'mutated' && rng.chance(0.12)) return wrongValue(rng, ctx.depth);
  if (schema.anyOf !== undefined || schema.oneOf !== undefined) return valueFor(rng, rng.pick((schema.anyOf ?? schema.oneOf)!), ctx);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum !== undefined) return rng.pick(schema.enum);
  const named = namedValue(rng, ctx);
  if (named !== undefined && rng.chance(0.85)) return named;
  const type = Array.isArray(schema.type) ? rng.pick(schema.type) : schema.type;
  switch (type) {
    case 'string':
      return stringFor(rng, schema);
    case 'integer':
    case 'number': {
      const low = schema.minimum ?? 0;
      const high = schema.maximum ?? 1000;
      const edge = rng.pick([low, high, low - 1, high + 1, 0, 2 ** 53 + 1, -0]);
      const value = rng.chance(0.2) ? edge : low + rng.int(Math.max(1, Math.min(high - low + 1, 1_000_000)));
      return type === 'number' && rng.chance(0.3) ? value + 0.5 : value;
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'null':
      return null;
    case 'array': {
      const max = Math.min(schema.maxItems ?? 4, 4);
      const length = rng.chance(0.05) ? (schema.maxItems ?? 4) + 1 : rng.between(schema.minItems ?? 0, max);
      const items = schema.items;
      const item = (): unknown =>
        items === undefined ? randomJson(rng, ctx.depth + 1) : valueFor(rng, items, { ...ctx, depth: ctx.depth + 1 });
      return Array.from({ length }, item);
    }
    case 'object':
      return objectFor(rng, schema, ctx);
    default:
      return randomJson(rng, ctx.depth + 1);
  }
}

function objectFor(rng: Rng, schema: JsonSchema, ctx: ValueContext): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const required = new Set(schema.required ?? []);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const include = required.has(name) ? !(ctx.mode === 'mutated' && rng.chance(0.1)) : rng.chance(0.5);
    if (include) out[name] = valueFor(rng, property, { ...ctx, name, depth: ctx.depth + 1 });
  }
  const free = schema.properties === undefined && schema.additionalProperties !== false;
  if (free) for (let i = rng.int(4); i > 0; i -= 1) out[randomText(rng, 12, 1)] = randomJson(rng, ctx.depth + 1);
  if (ctx.mode === 'mutated' && rng.chance(0.1)) {
    out[rng.pick(['extra', '__proto__', 'constructor', randomText(rng, 16, 1)])] = randomJson(rng, ctx.depth + 1);
  }
  return out;
}

/** Values the setup knows for fields of these names: so a body passes validation and reaches the route's work. */
function namedValue(rng: Rng, ctx: ValueContext): unknown {
  const { fx, who } = ctx;
  switch (ctx.name) {
    case 'user_id':
    case 'customer_email':
    case 'email':
      return rng.chance(0.7) ? who.email : `fuzz-${token(rng, 3, 8)}@example.com`;
    case 'agent_id':
      return rng.pick(AGENT_IDS);
    case 'offer_id':
    case 'tier_id':
      return rng.pick(TIER_IDS);
    case 'merchant_id':
      return 'merchant_local';
    case 'node_id':
      return who.nodeId;
    case 'lease_id':
      return fx.leaseId;
    case 'session_id':
      return fx.sessionId;
    case 'payment_id':
      return fx.paymentId;
    case 'challenge_id':
      return fx.challengeId;
    case 'code':
      return `${rng.between(1000, 9999)}-${rng.between(1000, 9999)}`;
    case 'status':
      return rng.pick(['CONFIRMED', 'succeeded', 'failed']);
    case 'url':
      return rng.pick(PLAUSIBLE_URLS(fx));
    case 'events':
      return rng.pick([['succeeded'], ['queued', 'started'], [], ['nope']]);
    case 'token':
      return who.token;
    case 'digest':
      return fx.digest;
    case 'version':
      return rng.chance(0.5) ? fx.version : token(rng, 1, 12);
    case 'at':
      return new Date(Date.UTC(2026, 0, 1) + rng.int(1e9)).toISOString();
    default:
      return undefined;
  }
}

function stringFor(rng: Rng, schema: JsonSchema): string {
  const max = schema.maxLength ?? 64;
  const min = schema.minLength ?? 0;
  if (schema.pattern !== undefined && rng.chance(0.6)) {
    if (schema.pattern.includes('[0-9a-fA-F]{8}-')) return rng.uuid();
    if (/^\^\[0-9\]\{1,(\d+)\}\$$/.test(schema.pattern)) return String(rng.int(100));
    return token(rng, Math.max(1, min), Math.min(max, 16));
  }
  return randomText(rng, Math.min(max, 4096), min);
}

/** A value of another type than asked, or one at an edge. */
function wrongValue(rng: Rng, depth: number): unknown {
  return rng.pick<() => unknown>([
    () => null,
    () => '',
    () => 0,
    () => -1,
    () => 1e308,
    () => 2 ** 63,
    () => 0.1,
    () => true,
    () => [],
    () => ({}),
    () => '\u0000',
    () => 'a\u0000b',
    () => '\ud800',
    () => 'x'.repeat(rng.pick([256, 4096, 20_000])),
    () => randomText(rng, 200),
    () => randomJson(rng, depth + 1),
    () => nested(rng.pick([30, 63, 64, 65, 200])),
  ])();
}

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i += 1) value = i % 2 === 0 ? [value] : { a: value };
  return value;
}

/** Any JSON value: Unicode and U+0000 in strings and keys, numbers at their edges, small arrays and objects. */
export function randomJson(rng: Rng, depth: number): unknown {
  const kind = depth > 4 ? rng.int(4) : rng.int(6);
  switch (kind) {
    case 0:
      return randomText(rng, 40);
    case 1:
      return rng.pick([0, -0, 1, -1, 1.5, 1e21, -1e-7, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 1e308]);
    case 2:
      return rng.pick([true, false, null]);
    case 3:
      return rng.pick(['\u0000', 'a\u0000', '\ud83d', '\udfff\ud800', '\u202eevil', '\u212a', '']);
    case 4:
      return Array.from({ length: rng.int(4) }, () => randomJson(rng, depth + 1));
    default: {
      const out: Record<string, unknown> = {};
      for (let i = rng.int(4); i > 0; i -= 1) out[randomText(rng, 12)] = randomJson(rng, depth + 1);
      return out;
    }
  }
}

/** A JWT signed with the service's own key (the bench chose it), with its claims changed: reaches past the signature. */
function forgedToken(rng: Rng, who: Principal, fx: Fixtures): string {
  const [head, payload] = who.token.split('.');
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  const key = rng.pick(['sub', 'jti', 'tier', 'exp', 'iat', 'auth_time', 'chainId', 'nodeAccess', 'iss', 'extra']);
  claims[key] = rng.chance(0.5) ? wrongValue(rng, 0) : randomText(rng, 80);
  let header = head ?? '';
  if (rng.chance(0.1)) {
    const alg = rng.pick(['HS256', 'none', 'HS512', 'RS256']);
    header = Buffer.from(JSON.stringify({ alg, kid: randomText(rng, 20) })).toString('base64url');
  }
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signature = createHmac('sha256', fx.jwtKey).update(`${header}.${body}`).digest('base64url');
  return `${header}.${body}.${signature}`;
}

/** A credential the route does not take, or a broken one. */
function wrongAuthorization(rng: Rng, who: Principal, fx: Fixtures): string {
  const jwt = who.token;
  return rng.pick<() => string>([
    () => 'Bearer',
    () => 'Bearer ',
    () => `Bearer ${token(rng, 1, 40)}`,
    () => 'Basic dXNlcjpwYXNz',
    () => `Bearer ${jwt.slice(0, -2)}${jwt.endsWith('A') ? 'B' : 'A'}A`,
    () => `Bearer ${jwt.split('.').slice(0, 2).join('.')}.`,
    () => 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJmdXp6LW1haW5AZXhhbXBsZS5jb20ifQ.',
    () => `Bearer svcn_${token(rng, 8, 60)}`,
    () => `Bearer ${'a'.repeat(rng.pick([300, 5000]))}`,
    () => `bearer ${jwt}`,
    () => `Bearer  ${jwt}`,
    () => `Bearer ${jwt} ${jwt}`,
    () => `Bearer ${fx.deployToken}`,
    () => `Bearer ${forgedToken(rng, who, fx)}`,
    () => `Bearer ${forgedToken(rng, who, fx)}`,
    () => `Bearer ${who.nodeCredential}x`,
  ])();
}

function authorizationFor(rng: Rng, route: Route, who: Principal, fx: Fixtures): string | undefined {
  const jwt = route.security.includes('accessToken');
  const node = route.security.includes('nodeCredential');
  if (route.path === '/v1/swarm/nodes/enroll') return rng.chance(0.6) ? `Bearer ${fx.deployToken}` : wrongAuthorization(rng, who, fx);
  if (jwt && node) {
    if (rng.weighted({ jwt: 45, node: 35, wrong: 20 }) === 'jwt') return `Bearer ${who.token}`;
    return rng.chance(0.64) ? `Bearer ${who.nodeCredential}` : wrongAuthorization(rng, who, fx);
  }
  if (jwt) return rng.chance(0.8) ? `Bearer ${who.token}` : wrongAuthorization(rng, who, fx);
  if (node) return rng.chance(0.8) ? `Bearer ${who.nodeCredential}` : wrongAuthorization(rng, who, fx);
  return rng.chance(0.1) ? rng.pick([`Bearer ${who.token}`, wrongAuthorization(rng, who, fx)]) : undefined;
}

const FORM_FIELDS = ['amount', 'scope', 'period', 'cap', 'name', 'value', 'url', 'events', 'description', 'code', 'challenge_id', 'return'];

function formBody(rng: Rng, fx: Fixtures, who: Principal, mode: Mode): Buffer {
  const fields: string[] = [];
  for (const name of FORM_FIELDS) {
    if (!rng.chance(0.4)) continue;
    const named = namedValue(rng, { fx, who, name, depth: 0, mode });
    const value =
      typeof named === 'string'
        ? named
        : name === 'amount' || name === 'cap'
          ? rng.pick(['1', '2.50', '0', '-1', '1e9', '0.001', '10000000'])
          : randomText(rng, 60);
    fields.push(`${name}=${encode(value)}`);
  }
  if (mode === 'mutated') {
    if (rng.chance(0.3)) {
      const odd = ['a=%zz', 'name=1&name=2', '%FF=%FF', '=', '&&&', `value=${'x'.repeat(2000)}`, 'amount=%00'];
      fields.push(rng.pick([...odd, `url=${'%41'.repeat(3000)}`]));
    }
    if (rng.chance(0.1)) return Buffer.concat([Buffer.from(fields.join('&')), rng.bytes(rng.between(1, 40))]);
  }
  return Buffer.from(fields.join('&'));
}

/** A request of `route` for undici: well-formed at the HTTP level; its contents valid, or mutated. */
export function apiRequest(rng: Rng, route: Route, fx: Fixtures, index: number, mode: Mode): HttpRequest {
  const who = route.ends ? fx.spare : fx.main;
  const headers: [string, string][] = [['x-request-id', `fuzz-${index}`]];
  const authorization = route.path.startsWith('/wallet/') ? undefined : authorizationFor(rng, route, who, fx);
  if (authorization !== undefined) headers.push(['authorization', authorization]);
  if (route.path.startsWith('/wallet/')) {
    const cookie = rng.weighted({ ours: 75, none: 10, broken: 15 });
    if (cookie === 'ours') headers.push(['cookie', `svc_wallet=${who.cookie}`]);
    if (cookie === 'broken') {
      const broken = [
        'svc_wallet=',
        `svc_wallet=${token(rng, 10, 60)}`,
        `svc_wallet=${who.cookie}; svc_wallet=x`,
        'svc_wallet',
        `svc_wallet=${'a'.repeat(4000)}`,
        `svc_wallet="${who.cookie}"`,
        '; ; ;',
      ];
      headers.push(['cookie', rng.pick(broken)]);
    }
    if (route.method === 'POST') {
      const site = rng.weighted({ 'same-origin': 80, 'cross-site': 8, 'same-site': 4, none: 4, missing: 4 });
      if (site !== 'missing') headers.push(['sec-fetch-site', site]);
      if (rng.chance(0.3)) headers.push(['origin', rng.pick(['null', 'https://evil.example', 'http://127.0.0.1', `http://${token(rng)}`])]);
    }
  }
  let body: Buffer | undefined;
  switch (route.kind) {
    case 'json': {
      const value = valueFor(rng, route.body!, { fx, who, name: '', depth: 0, mode });
      body = Buffer.from(JSON.stringify(value) ?? 'null');
      headers.push(['content-type', mode === 'valid' || rng.chance(0.7) ? 'application/json' : rng.pick(CONTENT_TYPES)]);
      break;
    }
    case 'form':
      body = formBody(rng, fx, who, mode);
      headers.push(['content-type', mode === 'valid' || rng.chance(0.8) ? 'application/x-www-form-urlencoded' : rng.pick(CONTENT_TYPES)]);
      break;
    case 'bundle':
    case 'binary':
      body = binaryBody(rng);
      headers.push(['content-type', rng.pick([...UPLOAD_TYPES, ...CONTENT_TYPES])]);
      break;
    default:
      if (mode === 'mutated' && rng.chance(0.2)) {
        body = Buffer.from(JSON.stringify(randomJson(rng, 0)) ?? '{}');
        headers.push(['content-type', 'application/json']);
      }
  }
  if (route.method === 'POST' && rng.chance(route.path.endsWith('/execute') ? 0.9 : 0.3)) {
    const keys = [rng.uuid(), token(rng, 1, 64), 'k'.repeat(300), '', randomText(rng, 40).replace(/[^\x21-\x7e]/g, '')];
    headers.push(['idempotency-key', rng.pick(keys)]);
  }
  if (rng.chance(0.1)) {
    const prefer = ['wait=0', 'wait=1', 'wait=99999', 'respond-async', 'handling=strict', 'wait=-1', randomAscii(rng, 40)];
    headers.push(['prefer', rng.pick(prefer)]);
  }
  if (rng.chance(0.1)) {
    headers.push(['accept', rng.pick(['*/*', 'text/event-stream', 'application/json', 'text/html', '', randomAscii(rng, 30)])]);
  }
  if (rng.chance(0.05)) {
    headers.push(['x-forwarded-for', rng.pick(['1.2.3.4', '::1, 10.0.0.1', 'garbage', '999.999.999.999', randomAscii(rng, 100)])]);
  }
  if (rng.chance(0.05)) headers.push(['if-none-match', rng.pick(['*', `"${rng.hex(64)}"`, 'W/"x"', randomAscii(rng, 40)])]);
  if (rng.chance(0.05)) headers.push(['range', rng.pick(['bytes=0-0', 'bytes=-1', 'bytes=10-5', 'bytes=0-99999999999', 'bytes=a-b'])]);
  if (rng.chance(0.05)) headers.push(['accept-encoding', rng.pick(['gzip', 'br', 'gzip;q=0, identity;q=0', randomAscii(rng, 30)])]);
  if (route.path === '/v1/payments/webhook' && body !== undefined && rng.chance(0.6)) {
    const now = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', Buffer.from(fx.webhookSecret, 'utf8')).update(`${now}.`).update(body).digest('hex');
    headers.push(['svc-signature', rng.chance(0.9) ? `t=${now},v1=${signature}` : `t=${now - 100_000},v1=${signature}`]);
  }
  return { method: route.method, target: targetOf(rng, route, fx, who, mode), headers, body };
}

const UPLOAD_TYPES = ['application/gzip', 'application/x-tar', 'application/octet-stream', 'application/x-gzip'];

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'Application/JSON',
  'application/problem+json',
  'application/vnd.api+json',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'application/json;;',
  'application/json, text/plain',
  '*/*',
  'json',
];

function randomAscii(rng: Rng, max: number): string {
  let out = '';
  for (let i = rng.int(max + 1); i > 0; i -= 1) out += String.fromCharCode(rng.between(0x20, 0x7e));
  return out;
}

/** Bytes for an upload: random, a gzip or tar header with garbage after it, or a gzip that inflates far. */
function binaryBody(rng: Rng): Buffer {
  switch (rng.int(5)) {
    case 0:
      return rng.bytes(rng.between(0, 2000));
    case 1:
      return Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03]), rng.bytes(rng.between(0, 500))]);
    case 2: {
      const header = Buffer.alloc(512);
      header.write(rng.pick(['agent.json', '../etc/passwd', '/abs', 'a'.repeat(100), 'x\u0000y']), 0);
      header.write('0000644\u0000', 100);
      header.write(rng.pick(['00000001000', '77777777777', 'zzzzzzzzzzz']), 124);
      header.write('ustar', 257);
      header[156] = rng.pick([0x30, 0x32, 0x35, 0x4c, 0x78, 0x67]);
      return Buffer.concat([header, rng.bytes(rng.between(0, 1024))]);
    }
    case 3:
      return Buffer.alloc(0);
    default:
      return GZIP_OF_ZEROS;
  }
}

/** 20 MiB and a byte of zeros, gzipped (some 20 KB): past what a bundle may unpack to. */
const GZIP_OF_ZEROS = gzipSync(Buffer.alloc(20 * 1024 * 1024 + 1));
