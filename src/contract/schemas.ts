// Request and response shapes of spec §4 plus the additions (docs/api.md "Additions the flow needs"), as JSON Schema
// (TypeBox), so the server validates with them and both sides share the static types. Field names are spec §2's and
// §4's, exactly.
import { Type, type Static } from '@sinclair/typebox';
import { DEPLOY_MODE, INSTALL_PATH } from './claims.js';
import { EMAIL_PATTERN } from './email.js';
import { MAX_QUEUE_SECONDS, MAX_RUN_SECONDS, RunAttempt, RunLinks, RunTriggerField } from './jobs.js';
import { RUN_STATUSES } from './run-status.js';

export { FINISHED_RUN_STATUSES, RUN_STATUSES, isFinishedStatus, type FinishedRunStatus, type RunStatus } from './run-status.js';
import { LABEL_PATTERN, MAX_LABEL_LENGTH, MAX_LABELS } from './labels.js';
import { DOCS_SECTIONS, TIER_IDS } from './tiers.js';
import { UUID_PATTERN } from './uuid.js';
import { RunSecrets } from './secrets.js';

export { EMAIL_PATTERN, isEmailAddress, normalizeEmail } from './email.js';

export { UUID_PATTERN };
/** Ids and keys that reach logs, URLs and SQL parameters: printable, no spaces, bounded. */
export const ID_PATTERN = '^[A-Za-z0-9_.:-]{1,128}$';

const Email = Type.String({ pattern: EMAIL_PATTERN, maxLength: 254, description: 'the checkout e-mail (ASCII)' });
/**
 * An address as a payment provider reports it: the provider's word, recorded as given (any script), so a payment
 * made with a look-alike address stays that address and never matches an ASCII one.
 */
const ProviderEmail = Type.String({ pattern: '^[^\\s@]{1,64}@[^\\s@]{1,253}$', maxLength: 254 });
const TierIdSchema = Type.Union(TIER_IDS.map((id) => Type.Literal(id)));
const Id = Type.String({ pattern: ID_PATTERN });
const Timestamp = Type.String({ description: 'ISO 8601, UTC' });
const strict = { additionalProperties: false } as const;

// POST /v1/swarm/paygate/session
export const SessionRequest = Type.Object({ tier_id: TierIdSchema, user_id: Email }, strict);
export type SessionRequest = Static<typeof SessionRequest>;
export const SessionResponse = Type.Object({
  session_id: Type.String(),
  tier_id: Type.String(),
  user_id: Type.String(),
  status: Type.Literal('pending'),
  expires_at: Timestamp,
});
export type SessionResponse = Static<typeof SessionResponse>;

// POST /v1/swarm/paygate/activate
export const ActivateRequest = Type.Object({ session_id: Type.String({ pattern: UUID_PATTERN }), payment_id: Id }, strict);
export type ActivateRequest = Static<typeof ActivateRequest>;
export const ActivateResponse = Type.Object({
  session_id: Type.String(),
  status: Type.Literal('active'),
  deploy_token: Type.String(),
  deploy_token_expires_at: Timestamp,
  install_path: Type.Literal(INSTALL_PATH),
  deploy_mode: Type.Literal(DEPLOY_MODE),
});
export type ActivateResponse = Static<typeof ActivateResponse>;

// POST /v1/auth/issue-token
export const IssueTokenRequest = Type.Object(
  {
    status: Type.String({ maxLength: 32 }),
    offer_id: TierIdSchema,
    customer_email: Email,
    merchant_id: Id,
    // Additions (docs/api.md "issue-token"): the proof that the caller reads customer_email's inbox, the challenge
    // POST /v1/auth/email-code answered and the code it mailed. Optional here so that a request without them gets a
    // 400 saying how to ask for one, not a schema message.
    challenge_id: Type.Optional(Type.String({ pattern: UUID_PATTERN })),
    code: Type.Optional(Type.String({ maxLength: 32 })),
    // Addition: a payment the service may not have heard of (its webhook lost). Not a proof of anything: once the
    // inbox is proven, the provider is asked about it and its word recorded, as activation does.
    payment_id: Type.Optional(Id),
  },
  strict,
);
export type IssueTokenRequest = Static<typeof IssueTokenRequest>;
export const IssueTokenResponse = Type.Object({
  jwtToken: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_at: Timestamp,
  tier: Type.String(),
});
export type IssueTokenResponse = Static<typeof IssueTokenResponse>;

// POST /v1/auth/verify (the token may also come only in the Authorization header)
export const VerifyRequest = Type.Object({ token: Type.Optional(Type.String({ maxLength: 8192 })) }, strict);
export type VerifyRequest = Static<typeof VerifyRequest>;
export const VerifyResponse = Type.Object({
  valid: Type.Boolean(),
  tier_key: Type.Optional(Type.String()),
  docs_sections: Type.Optional(Type.Array(Type.String())),
  payment_rail: Type.Optional(Type.String()),
  sub: Type.Optional(Type.String()),
  expires_at: Type.Optional(Timestamp),
  reason: Type.Optional(Type.String()),
});
export type VerifyResponse = Static<typeof VerifyResponse>;

/** A node label (contract/labels.ts): any letter case here, compared and stored lowercase. */
export const Label = Type.String({ pattern: LABEL_PATTERN, maxLength: MAX_LABEL_LENGTH });
export const Labels = Type.Array(Label, { maxItems: MAX_LABELS });

// POST /v1/swarm/execute. `input`, `node_id` and `labels` are additions (docs/api.md "Execute"): the agent's input
// object, the one node that must run it, and the labels the node that runs it must all carry.
export const ExecuteRequest = Type.Object(
  {
    user_id: Email,
    agent_id: Type.String({ minLength: 1, maxLength: 128 }),
    input: Type.Optional(Type.Record(Type.String({ maxLength: 128 }), Type.Unknown())),
    node_id: Type.Optional(Type.String({ pattern: UUID_PATTERN })),
    labels: Type.Optional(Labels),
    /** How long the run may wait for a node (docs/api.md "Runs as jobs", "The queue"); absent: the service's default. */
    queue_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_QUEUE_SECONDS })),
    /** A time limit below the agent's own (agent.json timeout_seconds); never above it. */
    timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RUN_SECONDS })),
  },
  strict,
);
export type ExecuteRequest = Static<typeof ExecuteRequest>;
/** The run as execute (200 when finished in time, else 202) and GET /v1/swarm/runs/{run_id} show it. */
export const RunResponse = Type.Object({
  run_id: Type.String(),
  agent_id: Type.String(),
  status: Type.Union(RUN_STATUSES.map((s) => Type.Literal(s))),
  charged_cents: Type.Integer(),
  balance_cents: Type.Integer(),
  output: Type.Unknown(),
  started_at: Timestamp,
  finished_at: Type.Union([Timestamp, Type.Null()]),
  /** The node that runs (or ran) it; null while it waits in the queue. */
  node_id: Type.Union([Type.String(), Type.Null()]),
  /**
   * Only to the node that holds the run: what its result must carry. `seconds` (addition, docs/api.md "Leases as
   * durations"): how long the lease runs, counted from when the service received this request.
   */
  lease: Type.Optional(
    Type.Object({
      lease_id: Type.String(),
      expires_at: Timestamp,
      seconds: Type.Optional(Type.Number({ minimum: 0 })),
      secrets: Type.Optional(RunSecrets),
    }),
  ),
  /** The uploaded bundle (SHA-256) the run executes, pinned at execute; absent: the node's built-in agent. */
  bundle_digest: Type.Optional(Type.String()),
  /** Additions (docs/api.md "Runs as jobs"): its time limit on the node, in seconds. */
  timeout_seconds: Type.Optional(Type.Integer()),
  /** Which attempt runs it, from 1: a retry-safe run lost with its node runs again under the same id and charge. */
  attempt: Type.Optional(Type.Integer()),
  /** While queued: when it is refunded not_picked_up if no node took it. */
  queue_expires_at: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  /** When its user asked to cancel it (its node stops it at its next contact); null when never. */
  cancel_requested_at: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  /** Addition (docs/api.md "Triggers"): what started it; absent for a run from before it was recorded. */
  trigger: RunTriggerField,
});
export type RunResponse = Static<typeof RunResponse>;
/** GET /v1/swarm/runs/{run_id}: the run, its attempts, and where its logs and artifacts are (docs/api.md "Run history"). */
/**
 * Addition (docs/api.md "Draining a node"): a queued run pinned to a node its user drained waits for its resume; the
 * node and since when. Absent otherwise.
 */
export const WaitingForNode = Type.Object({ node_id: Type.String(), drained_at: Timestamp });
export const RunDetail = Type.Composite([
  RunResponse,
  Type.Object({ attempts: Type.Array(RunAttempt), links: RunLinks, waiting_for_node: Type.Optional(WaitingForNode) }),
]);
export type RunDetail = Static<typeof RunDetail>;
/** spec §4 names no success shape; a finished run is the RunResponse with a final status. */
export const ExecuteResponse = RunResponse;
export type ExecuteResponse = RunResponse;

// GET /v1/swarm/agents: the SKUs, and with the caller's credential their own agents too (`own: true`).
export const AgentsResponse = Type.Array(
  Type.Object({
    agent_id: Type.String(),
    name: Type.String(),
    price_cents: Type.Integer(),
    own: Type.Optional(Type.Boolean()),
  }),
);
export type AgentsResponse = Static<typeof AgentsResponse>;

// GET /v1/swarm/agents/{agent_id}: one agent as a run of the caller would execute it: the version, where it comes
// from (the caller's current upload, else the built-in agent) and the input_schema its input is checked against.
export const AgentDetailResponse = Type.Object({
  agent_id: Type.String(),
  name: Type.String(),
  price_cents: Type.Integer(),
  own: Type.Optional(Type.Boolean()),
  source: Type.Union([Type.Literal('built_in'), Type.Literal('upload')]),
  version: Type.String(),
  /** The upload's digest; null for the built-in agent. */
  digest: Type.Union([Type.String(), Type.Null()]),
  input_schema: Type.Record(Type.String(), Type.Unknown()),
});
export type AgentDetailResponse = Static<typeof AgentDetailResponse>;

// GET /v1/swarm/wallet
export const WalletResponse = Type.Object({
  user_id: Type.String(),
  balance_cents: Type.Integer(),
  currency: Type.Literal('USD'),
  chain_id: Type.Integer(),
});
export type WalletResponse = Static<typeof WalletResponse>;

// POST /v1/swarm/nodes/enroll (Bearer deploy token, no body)
export const EnrollResponse = Type.Object({
  node_id: Type.String(),
  /** Addition: the node's own long-lived secret, shown once; the service keeps only its SHA-256. */
  node_credential: Type.String(),
  user_id: Type.String(),
  tier_id: Type.String(),
  install_path: Type.Literal(INSTALL_PATH),
  deploy_mode: Type.Literal(DEPLOY_MODE),
  /** Addition: present (true) when the node was enrolled ephemeral (docs/api.md "Ephemeral nodes"). */
  ephemeral: Type.Optional(Type.Literal(true)),
});
export type EnrollResponse = Static<typeof EnrollResponse>;

// GET /v1/docs/{section}
export const DocsSectionParams = Type.Object({ section: Type.String({ maxLength: 64 }) });
export const DocsSectionResponse = Type.Object({
  section: Type.Union(DOCS_SECTIONS.map((s) => Type.Literal(s))),
  title: Type.String(),
  content_type: Type.Literal('text/markdown'),
  body: Type.String(),
});
export type DocsSectionResponse = Static<typeof DocsSectionResponse>;

// POST /v1/payments/webhook (docs/decisions/0007-payment-provider.md); the provider may add fields.
export const PaymentConfirmedData = Type.Object({
  payment_id: Id,
  status: Type.String({ maxLength: 32 }),
  customer_email: ProviderEmail,
  offer_id: Type.String({ maxLength: 64 }),
  merchant_id: Id,
  amount_cents: Type.Integer({ minimum: 0, maximum: 100_000_000 }),
});
export type PaymentConfirmedData = Static<typeof PaymentConfirmedData>;
export const WebhookEvent = Type.Object({
  id: Id,
  type: Type.String({ maxLength: 64 }),
  created: Type.Integer({ minimum: 0 }),
  data: Type.Unknown(),
});
export type WebhookEvent = Static<typeof WebhookEvent>;

// Sandbox payment provider (svc-api --sandbox)
export const SandboxPaymentRequest = Type.Object(
  {
    offer_id: TierIdSchema,
    // The sandbox stands for an external provider's checkout, which takes any address its payer types.
    customer_email: ProviderEmail,
    amount_cents: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
  },
  strict,
);
export type SandboxPaymentRequest = Static<typeof SandboxPaymentRequest>;
export const SandboxPayment = Type.Object({
  payment_id: Type.String(),
  status: Type.String(),
  offer_id: Type.String(),
  customer_email: Type.String(),
  merchant_id: Type.String(),
  amount_cents: Type.Integer(),
  created_at: Timestamp,
  confirmed_at: Type.Union([Timestamp, Type.Null()]),
  webhook_delivered: Type.Boolean(),
});
export type SandboxPayment = Static<typeof SandboxPayment>;
