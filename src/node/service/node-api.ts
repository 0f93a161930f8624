// The node's side of the protocol for runs on the node (docs/api.md "Runs on the node"): every call carries the
// node credential, never the user's JWT, so the node's work never depends on a token that expires in 30 days.
import type {
  NodeRemoval,
  NodeSummary,
  PollRequest,
  PollResponse,
  ResultRequest,
  NodeAgentsResponse,
  NodeLabelsResponse,
} from '../../contract/node-protocol.js';
import { MAX_BUNDLE_BYTES } from '../../contract/agent-bundle.js';
import type { LogBatch, LogBatchResponse } from '../../contract/jobs.js';
import type { RunResponse } from '../../contract/schemas.js';
import type { SavedStream } from '../../lib/bounded-stream.js';
import { artifactTransferDeadlineMs, type ArtifactUpload } from '../../contract/artifacts.js';
import type { Readable } from 'node:stream';
import type { ServiceClient } from './service-client.js';
import type { RunEventBatch, RunEventBatchResponse } from '../../contract/run-events.js';
import type { ScheduleMigrationRequest, ScheduleMigrationResponse } from '../../contract/schedules.js';

export class NodeApi {
  readonly client: ServiceClient;
  readonly #credential: string | (() => string);

  /** `credential`: the node's, or a function giving the one in force at each call (work/caller.ts). */
  constructor(client: ServiceClient, credential: string | (() => string)) {
    this.client = client;
    this.#credential = credential;
  }

  get #bearer(): string {
    return typeof this.#credential === 'string' ? this.#credential : this.#credential();
  }

  /** The long poll (heartbeat, lease renewals, work); its deadline covers the service's hold. */
  async poll(request: PollRequest, signal?: AbortSignal): Promise<PollResponse> {
    const hold = request.wait_seconds ?? 20;
    const response = await this.client.call<PollResponse>({
      method: 'POST',
      path: '/v1/swarm/nodes/poll',
      body: request,
      bearer: this.#bearer,
      // A poll changes nothing but the heartbeat and the leases it renews: repeating it is safe.
      retrySafe: true,
      deadlineMs: (hold + 15) * 1000,
      ...(signal === undefined ? {} : { signal }),
    });
    return response.body;
  }

  /** The run's result, once: the service keys it by run and lease, so a repeat is acknowledged and changes nothing. */
  async report(runId: string, result: ResultRequest): Promise<RunResponse> {
    const response = await this.client.call<RunResponse>({
      method: 'POST',
      path: `/v1/swarm/runs/${encodeURIComponent(runId)}/result`,
      body: result,
      bearer: this.#bearer,
      retrySafe: true,
    });
    return response.body;
  }

  /**
   * A batch of the run's log (docs/api.md "Run logs"), with the run's lease: each entry carries its seq, so a repeat
   * is stored once. `signal` gives it up (the run's result must not wait for it long).
   */
  postLogs(runId: string, batch: LogBatch, signal?: AbortSignal): Promise<LogBatchResponse> {
    return this.#postBatch<LogBatchResponse>(runId, 'logs', batch, signal);
  }

  /** A batch of the run's events (docs/api.md "Run events"), with the run's lease: a repeat of a seq is stored once. */
  postRunEvents(runId: string, batch: RunEventBatch, signal?: AbortSignal): Promise<RunEventBatchResponse> {
    return this.#postBatch<RunEventBatchResponse>(runId, 'events', batch, signal);
  }

  /** One of a run's batches (its log's, its events'), retried as a repeat of a seq is stored once. */
  async #postBatch<T>(runId: string, stream: 'logs' | 'events', batch: unknown, signal: AbortSignal | undefined): Promise<T> {
    const response = await this.client.call<T>({
      method: 'POST',
      path: `/v1/swarm/runs/${encodeURIComponent(runId)}/${stream}`,
      body: batch,
      bearer: this.#bearer,
      retrySafe: true,
      ...(signal === undefined ? {} : { signal }),
    });
    return response.body;
  }

  /** This node as the service sees it (online by the service's window, last seen); asking does not make it seen. */
  async self(): Promise<NodeSummary> {
    return (await this.client.call<NodeSummary>({ method: 'GET', path: '/v1/swarm/nodes/self', bearer: this.#bearer, retrySafe: true }))
      .body;
  }

  /** The agents the service routes to this node. */
  async served(): Promise<NodeAgentsResponse> {
    return (
      await this.client.call<NodeAgentsResponse>({
        method: 'GET',
        path: '/v1/swarm/nodes/self/agents',
        bearer: this.#bearer,
        retrySafe: true,
      })
    ).body;
  }

  async serve(agentId: string): Promise<NodeAgentsResponse> {
    return (
      await this.client.call<NodeAgentsResponse>({
        method: 'PUT',
        path: `/v1/swarm/nodes/self/agents/${encodeURIComponent(agentId)}`,
        bearer: this.#bearer,
        retrySafe: true,
      })
    ).body;
  }

  async withdraw(agentId: string): Promise<NodeAgentsResponse> {
    return (
      await this.client.call<NodeAgentsResponse>({
        method: 'DELETE',
        path: `/v1/swarm/nodes/self/agents/${encodeURIComponent(agentId)}`,
        bearer: this.#bearer,
        retrySafe: true,
      })
    ).body;
  }

  /** Replaces the labels the service routes by with this node's whole set: a repeat changes nothing. */
  async setLabels(labels: readonly string[]): Promise<NodeLabelsResponse> {
    return (
      await this.client.call<NodeLabelsResponse>({
        method: 'PUT',
        path: '/v1/swarm/nodes/self/labels',
        body: { labels },
        bearer: this.#bearer,
        retrySafe: true,
      })
    ).body;
  }

  /**
   * The one-time move of the daemon's own schedules to the service, each pinned to this node: a repeat moves nothing
   * more and answers what the first made, so an answer lost on the way is safe to ask again.
   */
  async moveSchedules(request: ScheduleMigrationRequest): Promise<ScheduleMigrationResponse> {
    return (
      await this.client.call<ScheduleMigrationResponse>({
        method: 'POST',
        path: '/v1/swarm/nodes/self/schedules',
        body: request,
        bearer: this.#bearer,
        retrySafe: true,
      })
    ).body;
  }

  /**
   * An uploaded bundle's archive, by its digest, streamed into `file` with the upload cap (no bundle the service
   * accepts is larger): its size and SHA-256, which the caller checks against the digest before using it.
   */
  async bundle(digest: string, file: string): Promise<SavedStream> {
    const path = `/v1/swarm/bundles/${encodeURIComponent(digest)}`;
    const saveTo = { file, maxBytes: MAX_BUNDLE_BYTES };
    return (
      await this.client.call<SavedStream>({
        method: 'GET',
        path,
        bearer: this.#bearer,
        saveTo,
        headers: { accept: 'application/gzip, application/x-tar' },
        retrySafe: true,
      })
    ).body;
  }

  /**
   * The daemon stops cleanly (docs/api.md "The queue"): the service shows the node offline at once rather than a lease
   * later, and routes nothing to it meanwhile; its next poll makes it online again. Bounded: a stop never waits long.
   */
  async goingOffline(): Promise<void> {
    await this.client.call<unknown>({
      method: 'POST',
      path: '/v1/swarm/nodes/self/offline',
      bearer: this.#bearer,
      retrySafe: true,
      deadlineMs: 3_000,
    });
  }

  /**
   * One artifact of a run this node holds, streamed from `open` (called again for a retry: the same bytes again are a
   * repeat the service answers 200), within the time the service's slowest accepted rate gives `bytes`.
   */
  async putArtifact(
    run: { run_id: string; lease_id: string },
    name: string,
    bytes: number,
    open: () => Promise<{ stream: Readable; bytes: number }>,
    signal?: AbortSignal,
  ): Promise<ArtifactUpload> {
    const path = `/v1/swarm/runs/${encodeURIComponent(run.run_id)}/artifacts/${encodeURIComponent(name)}?lease_id=${encodeURIComponent(run.lease_id)}`;
    const headers = { 'content-type': 'application/octet-stream' };
    const call = {
      method: 'PUT' as const,
      path,
      bearer: this.#bearer,
      upload: open,
      headers,
      retrySafe: true,
      deadlineMs: artifactTransferDeadlineMs(bytes),
    };
    return (await this.client.call<ArtifactUpload>({ ...call, ...(signal === undefined ? {} : { signal }) })).body;
  }

  /**
   * The node removes itself from its user's nodes (an ephemeral node after its one run); its credential stops working.
   * Not retried: a repeat after a lost answer is 410 node_removed, which the caller takes as done.
   */
  async removeSelf(): Promise<NodeRemoval> {
    return (await this.client.call<NodeRemoval>({ method: 'DELETE', path: '/v1/swarm/nodes/self', bearer: this.#bearer, retrySafe: false }))
      .body;
  }
}
