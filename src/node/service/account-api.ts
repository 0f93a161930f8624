// The user's own calls beyond spec §4's (docs/api.md "Sign-in: a verified inbox", "Revocation and sessions",
// "Audit", "Credential rotation"), over the service client's retries and errors: the JWT is the bearer of each, but
// the code request, which proves nothing yet.
import type { AuditResponse, EmailCodeResponse, LogoutResponse } from '../../contract/auth.js';
import type { CredentialRotation } from '../../contract/node-protocol.js';
import type { ServiceClient } from './service-client.js';

/** Mails a sign-in code to `email`. Not retried: each call mails one. */
export async function requestEmailCode(client: ServiceClient, email: string): Promise<EmailCodeResponse> {
  return (await client.call<EmailCodeResponse>({ method: 'POST', path: '/v1/auth/email-code', body: { email }, retrySafe: false })).body;
}

/** Revokes this token, or every token of its user issued before now. */
export async function revokeTokens(client: ServiceClient, token: string, everywhere: boolean): Promise<LogoutResponse> {
  const body = everywhere ? { everywhere: true } : {};
  return (await client.call<LogoutResponse>({ method: 'POST', path: '/v1/auth/logout', body, bearer: token, retrySafe: true })).body;
}

export async function auditEvents(
  client: ServiceClient,
  token: string,
  query: { limit?: number; before?: string },
): Promise<AuditResponse> {
  const search = new URLSearchParams();
  if (query.limit !== undefined) search.set('limit', String(query.limit));
  if (query.before !== undefined) search.set('before', query.before);
  const suffix = search.size === 0 ? '' : `?${search.toString()}`;
  return (await client.call<AuditResponse>({ method: 'GET', path: `/v1/audit${suffix}`, bearer: token, retrySafe: true })).body;
}

/** A new credential for the user's node; every other credential of it stops working (a recent sign-in needed). */
export async function replaceNodeCredential(client: ServiceClient, token: string, nodeId: string): Promise<CredentialRotation> {
  const path = `/v1/swarm/nodes/${encodeURIComponent(nodeId)}/credential`;
  return (await client.call<CredentialRotation>({ method: 'POST', path, bearer: token, retrySafe: false })).body;
}
