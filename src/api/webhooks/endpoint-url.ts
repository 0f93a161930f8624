// A webhook endpoint's URL (docs/api.md "Webhooks"): HTTPS, no credentials or fragment, and, when it is written as
// an IP address, one deliveries may reach. A name is not resolved here: what it resolves to may change, so it is
// judged before each delivery connects (deliver.ts, http/outbound-guard.ts), localhost included.
import { SvcError } from '../../contract/errors.js';
import { addressRefusal, literalAddressOf } from '../http/outbound-guard.js';

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
  if (url.username !== '' || url.password !== '')
    refuse('must not carry a user name or password (the signature authenticates the service)');
  if (url.hash !== '') refuse('must not have a fragment');
  const literal = literalAddressOf(url.hostname);
  const refusal = literal === undefined ? undefined : addressRefusal(literal, { allowPrivate });
  if (refusal !== undefined) refuse(`must reach a public address: ${refusal}`);
  return url.toString();
}
