// The demo's own HTTP: the customer's browser at the payment provider, and curl from a laptop at the service. Node's
// fetch sends the request (curl need not be installed); the demo shows the curl command a person would type.
import { showCurl } from './narrate.mjs';

/** One request; the answer's status, headers and body (parsed when it is JSON). */
export async function request(baseUrl, method, path, { token, headers = {}, body } = {}) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, json, text };
}

/** The same request, shown first as the curl command that sends it (the token masked, like every secret). */
export function curl(baseUrl, method, path, options = {}) {
  showCurl(method, `${baseUrl}${path}`, options);
  return request(baseUrl, method, path, options);
}
