// The protocol between a node and the service for runs on the node (docs/api.md "Runs on the node"), additions to
// spec §4 like every endpoint it does not list: the node pulls work with a long poll (its heartbeat too), holds each
// run under a lease it renews by polling, and reports the result once. Every call carries the node credential.
import { Type, type Static } from '@sinclair/typebox';
import { NODE_NAME_PATTERN } from './node-name.js';
import { Labels, UUID_PATTERN } from './schemas.js';
import { RunSecrets } from './secrets.js';

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });
const strict = { additionalProperties: false } as const;

/** Most runs one node holds at once (its --concurrency), and so the most it asks for in a poll. */
export const MAX_NODE_CONCURRENCY = 32;
/** The most a node's result may carry: the agent's output (1 MiB, the node's cap) and room for its envelope. */
export const MAX_RESULT_BODY_BYTES = 1024 * 1024 + 16 * 1024;

/** The largest byte count or second count a node's health may say: JSON's exact integers (2^53 - 1). */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;
/** A load average past this is no real host's (a 10,000-core host saturated ten times over). */
export const MAX_LOAD_AVERAGE = 100_000;
const Count = Type.Integer({ minimum: 0, maximum: MAX_COUNT });
const Load = Type.Number({ minimum: 0, maximum: MAX_LOAD_AVERAGE });

/**
 * Addition (docs/api.md "Node health"): what a node says of its host at a poll, as GitHub's runners and a kubelet's
 * node status do: the load averages, the memory, the filesystem of the node's home, and how long the host has been
 * up. Flat and closed (no field beyond these, no nesting), so a poll's health is at most a few hundred bytes. The
 * disk's two are absent together when the node could not read its filesystem.
 */
export const NodeHealth = Type.Object(
  {
    load_1: Load,
    load_5: Load,
    load_15: Load,
    memory_total_bytes: Count,
    memory_available_bytes: Count,
    disk_total_bytes: Type.Optional(Count),
    disk_free_bytes: Type.Optional(Count),
    uptime_seconds: Count,
  },
  strict,
);
export type NodeHealth = Static<typeof NodeHealth>;

// POST /v1/swarm/nodes/poll
export const PollRequest = Type.Object(
  {
    hostname: Type.String({ minLength: 1, maxLength: 253 }),
    /** Addition: the node's name among several on its host (install --name); absent for the host's default node. */
    name: Type.Optional(Type.String({ pattern: NODE_NAME_PATTERN.source })),
    version: Type.String({ minLength: 1, maxLength: 64 }),
    /** How many more runs the node takes now (0: a heartbeat that renews its leases). */
    capacity: Type.Integer({ minimum: 0, maximum: MAX_NODE_CONCURRENCY }),
    /** The runs it holds and still works on: their leases are renewed. */
    running: Type.Array(Type.String({ maxLength: 64 }), { maxItems: MAX_NODE_CONCURRENCY }),
    /** Seconds the service may hold the poll open waiting for work (at most its own bound). */
    wait_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })),
    /** Addition (docs/api.md "Node health"): the host's health now; absent from a node that does not say it. */
    health: Type.Optional(NodeHealth),
  },
  strict,
);
export type PollRequest = Static<typeof PollRequest>;

export const AssignedRun = Type.Object({
  run_id: Type.String(),
  agent_id: Type.String(),
  user_id: Type.String(),
  input: Type.Unknown(),
  lease_id: Type.String(),
  lease_expires_at: Timestamp,
  /**
   * Addition (docs/api.md "Leases as durations"): the seconds the lease runs, counted from when the service received
   * this poll (a claim made during the hold adds its wait). A node counts them from when it sent the poll, on its
   * monotonic clock, so its reckoning never ends after the service's, whatever either wall clock says.
   */
  lease_seconds: Type.Optional(Type.Number({ minimum: 0 })),
  /** The uploaded bundle to run (SHA-256 of its archive, GET /v1/swarm/bundles/{digest}); absent: the built-in agent. */
  bundle_digest: Type.Optional(Type.String()),
  /** Addition (docs/api.md "Runs as jobs"): its time limit; past it the node stops the agent and fails it `timeout`. */
  timeout_seconds: Type.Optional(Type.Integer({ minimum: 1 })),
  /** Which attempt this is (a retry-safe run lost with its node runs again under the same id): 1 for the first. */
  attempt: Type.Optional(Type.Integer({ minimum: 1 })),
  /**
   * The user's secrets the run's agent declares in agent.json, by name (docs/api.md "Secrets"): given to the agent as
   * environment variables, never written to the node's disk. Absent when it declares none.
   */
  secrets: Type.Optional(RunSecrets),
});
export type AssignedRun = Static<typeof AssignedRun>;

export const PollResponse = Type.Object({
  runs: Type.Array(AssignedRun),
  /** Leases of runs the node listed as running that it no longer holds (expired and refunded): stop them. */
  lost: Type.Array(Type.String()),
  /** A lease's length: the runs this poll renewed hold theirs this long from when the service received it. */
  lease_seconds: Type.Integer(),
  /**
   * Addition (docs/api.md "Ephemeral nodes"): this ephemeral node's one run is over; it takes no other and should
   * remove itself (DELETE /v1/swarm/nodes/self). Absent otherwise.
   */
  retire: Type.Optional(Type.Literal(true)),
  /**
   * Addition (docs/api.md "Cancel"): runs the node listed as running whose user asked to cancel them: stop their
   * agents and report each failed with error `cancelled`. Absent when none.
   */
  cancel: Type.Optional(Type.Array(Type.String())),
  /**
   * Addition (docs/api.md "Draining a node"): its user drained this node; it is handed no new run until resumed, and
   * its runs already here go on. Absent otherwise.
   */
  drained: Type.Optional(Type.Literal(true)),
});
export type PollResponse = Static<typeof PollResponse>;

// POST /v1/swarm/runs/{run_id}/result
export const RESULT_STATUSES = ['succeeded', 'failed'] as const;
export const ResultRequest = Type.Object(
  {
    lease_id: Type.String({ minLength: 1, maxLength: 64 }),
    status: Type.Union(RESULT_STATUSES.map((s) => Type.Literal(s))),
    /** The agent's one JSON document (succeeded), or {error, message} saying why it failed. */
    output: Type.Unknown(),
  },
  strict,
);
export type ResultRequest = Static<typeof ResultRequest>;

// PUT and DELETE /v1/swarm/nodes/self/agents/{agent_id}
export const AgentParams = Type.Object({ agent_id: Type.String({ maxLength: 128 }) });
export const NodeAgentsResponse = Type.Object({ node_id: Type.String(), agents: Type.Array(Type.String()) });
export type NodeAgentsResponse = Static<typeof NodeAgentsResponse>;

// PUT /v1/swarm/nodes/self/labels: the node's whole set of labels, replacing the one before (so a repeat is harmless).
export const NodeLabelsRequest = Type.Object({ labels: Labels }, strict);
export type NodeLabelsRequest = Static<typeof NodeLabelsRequest>;
export const NodeLabelsResponse = Type.Object({ node_id: Type.String(), labels: Type.Array(Type.String()) });
export type NodeLabelsResponse = Static<typeof NodeLabelsResponse>;

/** A node's health as its user's fleet shows it: as the node said it, and when the service received it. */
export const NodeHealthReport = Type.Object({ ...NodeHealth.properties, reported_at: Timestamp });
export type NodeHealthReport = Static<typeof NodeHealthReport>;

// GET /v1/swarm/nodes
export const NodeSummary = Type.Object({
  node_id: Type.String(),
  hostname: Type.Union([Type.String(), Type.Null()]),
  /** Addition: its name among several nodes on its host (install --name); null for the host's default node. */
  name: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.String(), Type.Null()]),
  tier_id: Type.String(),
  enrolled_at: Timestamp,
  last_seen_at: Type.Union([Timestamp, Type.Null()]),
  online: Type.Boolean(),
  agents: Type.Array(Type.String()),
  /** Its labels (lowercase, sorted): an execute that names labels goes only to a node that carries them all. */
  labels: Type.Array(Type.String()),
  /** Addition: enrolled to take one run, then remove itself (docs/api.md "Ephemeral nodes"). */
  ephemeral: Type.Boolean(),
  /** Runs this node finished since 00:00 UTC. */
  runs_today: Type.Integer(),
  /**
   * Addition (docs/api.md "Node health"): what the node said of its host at its last poll that said it, and when;
   * null when it never did (an older daemon). Stale while the node is offline: the time says how stale.
   */
  health: Type.Optional(Type.Union([NodeHealthReport, Type.Null()])),
  /**
   * Addition (docs/api.md "Draining a node"): when its user drained it (it takes no new run until resumed); null
   * when it takes runs.
   */
  drained_at: Type.Optional(Type.Union([Timestamp, Type.Null()])),
});
export type NodeSummary = Static<typeof NodeSummary>;
export const NodesResponse = Type.Object({ nodes: Type.Array(NodeSummary) });
export type NodesResponse = Static<typeof NodesResponse>;

// DELETE /v1/swarm/nodes/{node_id} (the user's JWT): the node leaves its user's fleet for good.
export const NodeParams = Type.Object({ node_id: Type.String({ pattern: UUID_PATTERN }) });
export const NodeRemoval = Type.Object({
  node_id: Type.String(),
  removed_at: Timestamp,
  /** Seen within the lease time when it was removed: its daemon gets 410 node_removed at its next poll. */
  was_online: Type.Boolean(),
  /** The agents the service no longer routes to it (none when the removal is repeated). */
  agents_withdrawn: Type.Array(Type.String()),
});
export type NodeRemoval = Static<typeof NodeRemoval>;

// POST /v1/swarm/nodes/{node_id}/drain and /resume (the user's JWT): the node takes no new run, or takes them again.
export const NodeDrain = Type.Object({
  node_id: Type.String(),
  /** When it was drained (a repeat keeps the first time); null once resumed. */
  drained_at: Type.Union([Timestamp, Type.Null()]),
  /** False when it already was as asked: the repeat changed nothing. */
  changed: Type.Boolean(),
});
export type NodeDrain = Static<typeof NodeDrain>;

// POST /v1/swarm/nodes/self/credential
export const CredentialRotation = Type.Object({
  node_id: Type.String(),
  node_credential: Type.String(),
});
export type CredentialRotation = Static<typeof CredentialRotation>;

// POST /v1/swarm/nodes/deploy-token (the user's JWT): one more node of the signed-in user, the way a runner
// registration token comes from the API. Single use, 15 minutes, like an activation's.
export const NodeDeployToken = Type.Object({
  deploy_token: Type.String(),
  deploy_token_expires_at: Timestamp,
  tier_id: Type.String(),
  install_path: Type.String(),
  deploy_mode: Type.String(),
});
export type NodeDeployToken = Static<typeof NodeDeployToken>;
