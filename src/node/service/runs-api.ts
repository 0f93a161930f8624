// The user's runs as jobs at the service (docs/api.md "Runs as jobs"), with the user's access token (or, where the
// service allows it, the node credential): the history, one run with its attempts, cancel, and settling a run
// whose answer was lost by asking for its Idempotency-Key's run instead of sending it again.
import type { KeySettlement, RunList } from '../../contract/jobs.js';
import type { RunDetail, RunResponse } from '../../contract/schemas.js';
import type { ServiceClient } from './service-client.js';

export interface RunListFilters {
  agent_id?: string;
  status?: string;
  node_id?: string;
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
}

export class RunsApi {
  readonly #client: ServiceClient;

  constructor(client: ServiceClient) {
    this.#client = client;
  }

  async list(bearer: string, filters: RunListFilters = {}): Promise<RunList> {
    const query = new URLSearchParams(
      Object.entries(filters).flatMap(([name, value]): Array<[string, string]> => (value === undefined ? [] : [[name, String(value)]])),
    );
    const path = `/v1/swarm/runs${query.size === 0 ? '' : `?${query.toString()}`}`;
    return (await this.#client.call<RunList>({ method: 'GET', path, bearer, retrySafe: true })).body;
  }

  async get(bearer: string, runId: string): Promise<RunDetail> {
    return (
      await this.#client.call<RunDetail>({ method: 'GET', path: `/v1/swarm/runs/${encodeURIComponent(runId)}`, bearer, retrySafe: true })
    ).body;
  }

  /** `stopping`: the run was running, and its node stops it at its next contact (202); else it ended cancelled. */
  async cancel(bearer: string, runId: string): Promise<{ run: RunResponse; stopping: boolean }> {
    // Repeating a cancel changes nothing more: safe to retry.
    const answer = await this.#client.call<RunResponse>({
      method: 'POST',
      path: `/v1/swarm/runs/${encodeURIComponent(runId)}/cancel`,
      bearer,
      retrySafe: true,
    });
    return { run: answer.body, stopping: answer.status === 202 };
  }

  /** The key's run, or the key settled as never run (an execute with it still on its way is then refused). */
  async settleByKey(bearer: string, idempotencyKey: string): Promise<KeySettlement> {
    return (
      await this.#client.call<KeySettlement>({ method: 'POST', path: '/v1/swarm/runs/by-key', bearer, idempotencyKey, retrySafe: true })
    ).body;
  }
}
