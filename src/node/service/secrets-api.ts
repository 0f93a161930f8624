// The user's secrets at the service (docs/api.md "Secrets"): names and dates read, values written, never read back.
// Setting and removing need a recent sign-in (the caller wraps them in withRecentSignIn).
import type { SecretRemoved, SecretsResponse, SecretWritten } from '../../contract/secrets.js';
import type { ServiceClient } from './service-client.js';

const pathOf = (name: string): string => `/v1/swarm/secrets/${encodeURIComponent(name)}`;

export async function listSecrets(client: ServiceClient, token: string): Promise<SecretsResponse> {
  return (await client.call<SecretsResponse>({ method: 'GET', path: '/v1/swarm/secrets', bearer: token, retrySafe: true })).body;
}

/** A PUT of the whole value: repeating it changes nothing more, so it is retried like a read. */
export async function setSecret(client: ServiceClient, token: string, name: string, value: string): Promise<SecretWritten> {
  return (await client.call<SecretWritten>({ method: 'PUT', path: pathOf(name), body: { value }, bearer: token, retrySafe: true })).body;
}

export async function removeSecret(client: ServiceClient, token: string, name: string): Promise<SecretRemoved> {
  return (await client.call<SecretRemoved>({ method: 'DELETE', path: pathOf(name), bearer: token, retrySafe: false })).body;
}
