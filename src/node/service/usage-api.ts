// What the user's runs cost (docs/api.md "Usage"): GET /v1/swarm/usage over a range of UTC days.
import type { UsageResponse } from '../../contract/usage.js';
import type { ServiceClient } from './service-client.js';

export async function usageOf(client: ServiceClient, token: string, range: { from?: string; to?: string }): Promise<UsageResponse> {
  const search = new URLSearchParams();
  if (range.from !== undefined) search.set('from', range.from);
  if (range.to !== undefined) search.set('to', range.to);
  const suffix = search.size === 0 ? '' : `?${search.toString()}`;
  return (await client.call<UsageResponse>({ method: 'GET', path: `/v1/swarm/usage${suffix}`, bearer: token, retrySafe: true })).body;
}
