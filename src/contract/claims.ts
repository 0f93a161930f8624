// spec §2 (JWT, activation result), §5 (authentication), §8 (limits); docs/decisions/0005-tokens.md,
// 0009-wallet-page.md.

export const CHAIN_ID = 1202;
export const NODE_ACCESS = 'isolated_svc_server';
export const JWT_ALGORITHM = 'HS256';
export const JWT_ISSUER = 'svc';
export const JWT_LIFETIME_SECONDS = 30 * 24 * 60 * 60;
export const PAYMENT_RAIL = `svc_pay_wallet:${CHAIN_ID}`;

export const INSTALL_PATH = '/opt/svc/swarm-node';
export const DEPLOY_MODE = 'bare_metal';
export const DEPLOY_TOKEN_LIFETIME_SECONDS = 15 * 60;
export const PENDING_SESSION_LIFETIME_SECONDS = 24 * 60 * 60;
export const IDEMPOTENCY_KEY_LIFETIME_SECONDS = 24 * 60 * 60;

export const PAYMENT_CONFIRMED = 'CONFIRMED';
export const PAYMENT_PENDING = 'PENDING';
export const WALLET_LOGIN_INTENT = 'swarm_private_access';

/** The claims of every access token the service issues (spec §5.1, docs/decisions/0005-tokens.md). */
export interface AccessTokenClaims {
  sub: string;
  tier: string;
  chainId: typeof CHAIN_ID;
  nodeAccess: typeof NODE_ACCESS;
  iss: string;
  iat: number;
  exp: number;
  /** Recorded at issue; a token without one, or whose jti the service never recorded, is refused. */
  jti?: string;
  /**
   * When the subject last proved its inbox, Unix seconds (OpenID Connect's auth_time). What changes the fleet or the
   * code needs it within STEP_UP_MAX_AGE_SECONDS (docs/api.md "Step-up"); absent on tokens issued before inbox sign-in.
   */
  auth_time?: number;
}

/** How recent a sign-in must be for what changes the fleet or the code (RFC 9470's max_age). */
export const STEP_UP_MAX_AGE_SECONDS = 15 * 60;

/** spec §4: the wallet page URL a user opens to sign in with a JWT. */
export function walletLoginUrl(walletBaseUrl: string, token?: string): string {
  const url = new URL(`${walletBaseUrl.replace(/\/+$/, '')}/login`);
  if (token !== undefined) {
    url.searchParams.set('token', token);
    url.searchParams.set('intent', WALLET_LOGIN_INTENT);
  }
  return url.toString();
}
