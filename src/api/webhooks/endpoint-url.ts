// A webhook endpoint's URL (docs/api.md "Webhooks"): HTTPS, no credentials or fragment, and not an address the
// service refuses to deliver to when it says so itself (an IP literal, localhost). A name is resolved only when a
// delivery connects (address-policy.ts), since what it resolves to may change.
import { SvcError } from '../../contract/errors.js';
import { addressRefusal, literalAddressOf } from './address-policy.js';

export function checkEndpointUrl(text: string, allowPrivate: boolean): string {
  const refuse = (message: string): never => {
    throw new SvcError('invalid_request', `the url ${message}`, { extensions: { errors: [{ path: '/url', message }] } });
  };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse('must be an absolute https URL');
  }
  if (url.protocol !== 'https:') refuse('must be an https URL: deliveries carry run events and are signed, never sent in clear');
  if (url.username !== '' || url.password !== '') refuse('must not carry a user name or password (the signature authenticates the service)');
  if (url.hash !== '') refuse('must not have a fragment');
  const host = url.hostname.toLowerCase();
  const literal = literalAddressOf(host);
  const refusal =
    literal !== undefined ? addressRefusal(literal, allowPrivate) : !allowPrivate && (host === 'localhost' || host.endsWith('.localhost')) ? `${host} is this host` : undefined;
  if (refusal !== undefined) refuse(`must reach a public address: ${refusal}`);
  return url.toString();
}
