// What keeps the wallet page safe in a browser (docs/decisions/0009-wallet-page.md): the response headers of every
// page, where the session cookie applies, and the same-origin check on the forms.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../contract/errors.js';
import type { ServiceContext } from '../context.js';
import { LOCAL_TIME_SCRIPT_SOURCE } from '../console/local-time-script.js';
import { STYLESHEET_CSP_SOURCE } from './stylesheet.js';

/** Where svc-api serves the wallet page on its own host; SVC_WALLET_URL is the public address in front of it. */
export const WALLET_BASE_PATH = '/wallet';
export const SESSION_COOKIE = 'svc_wallet';

// No image, no frame, no foreign form target, no connection: the page is HTML, one hashed stylesheet and the console's
// one hashed script that shows times in the browser's zone. That script's hash is in the policy of every page of the
// scope, those without it too (the sign-in pages): a hash allows that exact script and nothing else, so it opens no
// door there, and one policy for the scope means no console page can lack it.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src ${STYLESHEET_CSP_SOURCE}`,
  `script-src ${LOCAL_TIME_SCRIPT_SOURCE}`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * A console page with one more inline script: the policy above, plus that script by its hash, and (`connect`) its
 * connection back to this origin (the run page's log follower). No other script may run, and no other page connect.
 */
export function policyWithScript(scriptSource: string, options: { connect: boolean } = { connect: true }): string {
  return [
    "default-src 'none'",
    `style-src ${STYLESHEET_CSP_SOURCE}`,
    `script-src ${LOCAL_TIME_SCRIPT_SOURCE} ${scriptSource}`,
    ...(options.connect ? ["connect-src 'self'"] : []),
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export const WALLET_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  // The sign-in URL carries the JWT: no link or form on the page may pass it on in a Referer.
  'referrer-policy': 'no-referrer',
  // Balances and the signed-in page must not be kept by the browser or a proxy (back button after sign-out).
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** Every response of the wallet's scope gets these, unless its route chose its own (the run page's policy, an event stream's caching). */
export function setWalletPageHeaders(reply: FastifyReply): void {
  for (const [name, value] of Object.entries(WALLET_PAGE_HEADERS)) if (!reply.hasHeader(name)) reply.header(name, value);
}

export interface CookieScope {
  path: string;
  secure: boolean;
}

/**
 * The cookie follows the public wallet URL when the browser came through it (a TLS proxy in front: Secure, its
 * path); reached directly (a developer on http://127.0.0.1:PORT/wallet), it is scoped to the local base path.
 */
export function cookieScope(ctx: ServiceContext, request: FastifyRequest): CookieScope {
  const publicUrl = parseUrl(ctx.urls.walletUrl);
  if (publicUrl !== undefined && request.headers.host === publicUrl.host) {
    return { path: publicUrl.pathname.replace(/\/+$/, '') || '/', secure: publicUrl.protocol === 'https:' };
  }
  return { path: WALLET_BASE_PATH, secure: false };
}

/**
 * The forms change state, so a POST must come from the wallet page itself. The cookie is SameSite=Strict; this is
 * the second lock. Because the page sends `Referrer-Policy: no-referrer`, browsers send `Origin: null` with its
 * own form posts (Fetch standard, "serializing a request origin"), so Sec-Fetch-Site decides where the browser
 * sends it; a browser without Fetch Metadata must send a real Origin that names this host.
 */
export function assertSameOrigin(ctx: ServiceContext, request: FastifyRequest): void {
  const { fetchSite, originIsOurs } = refuseOtherSites(ctx, request);
  if (fetchSite === undefined && !originIsOurs) throw crossSite();
}

/**
 * The sign-in form ("Continue as", docs/api.md "Wallet page"). Before it there is no session cookie for SameSite to
 * protect, and Fetch Metadata alone is not enough to let it through: an Origin that names the wallet, or the form's
 * token that only a page of ours, given the pre-session cookie, could have (`formTokenMatches`), must vouch for it.
 */
export function assertSignInFormOrigin(ctx: ServiceContext, request: FastifyRequest, formTokenMatches: () => boolean): void {
  const { originIsOurs } = refuseOtherSites(ctx, request);
  if (!originIsOurs && !formTokenMatches()) throw crossSite();
}

/** Refuses what a browser says another origin sent (a foreign Origin, Fetch Metadata other than same-origin). */
function refuseOtherSites(ctx: ServiceContext, request: FastifyRequest): { fetchSite: string | undefined; originIsOurs: boolean } {
  const fetchSite = singleHeader(request.headers['sec-fetch-site']);
  const origin = singleHeader(request.headers.origin);
  const originIsOurs = origin !== undefined && origin !== 'null' && isOurOrigin(ctx, request, origin);
  if (origin !== undefined && origin !== 'null' && !originIsOurs) throw crossSite();
  if (fetchSite !== undefined && fetchSite !== 'same-origin') throw crossSite();
  return { fetchSite, originIsOurs };
}

/** How the browser came to a GET: `none` when the user typed it, chose a bookmark or another program opened it. */
export function fetchSiteOf(request: FastifyRequest): string | undefined {
  return singleHeader(request.headers['sec-fetch-site']);
}

function isOurOrigin(ctx: ServiceContext, request: FastifyRequest, origin: string): boolean {
  const originUrl = parseUrl(origin);
  if (originUrl === undefined) return false;
  const publicUrl = parseUrl(ctx.urls.walletUrl);
  if (publicUrl !== undefined && originUrl.origin === publicUrl.origin) return true;
  // Reached directly: the origin the browser shows is the Host it sent; a forged form elsewhere has another host.
  return request.headers.host !== undefined && originUrl.host === request.headers.host;
}

function crossSite(): SvcError {
  return new SvcError('forbidden', 'this form can be sent only from the wallet page itself; open the wallet page and try again');
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
