// The error codes' table (docs/decisions/0003-errors-as-problem-details.md): each code's HTTP status, title and
// remedy, read by the service (problem details) and the client (messages, exit codes) alike; errors.ts holds the
// error class that carries them.

export interface ErrorCodeInfo {
  /** HTTP status when the service answers with this code; null for codes only the client raises. */
  status: number | null;
  title: string;
  /** What the client can do about it (spec §7 "Client remedy" where it gives one). */
  remedy?: string;
}

export const ERROR_CODES = {
  invalid_request: { status: 400, title: 'Invalid request', remedy: 'Correct the request body and send it again.' },
  invalid_schedule: {
    status: 400,
    title: 'Invalid schedule',
    remedy: 'Give a cron expression (5 fields or @hourly-style) or an interval of at least 60 s, and an IANA time zone.',
  },
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    remedy: 'Sign in again to get a valid token: swarm-node login',
  },
  email_code_invalid: {
    status: 401,
    title: 'Sign-in code invalid',
    remedy: 'Type the code of the newest sign-in mail (it works once, for 10 minutes), or ask for a new one.',
  },
  step_up_required: {
    status: 401,
    title: 'Recent sign-in required',
    remedy: 'Sign in again with the code mailed to you (swarm-node login), then retry within 15 minutes.',
  },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  session_not_found: {
    status: 404,
    title: 'Session not found',
    remedy: 'Repeat session creation with the same user_id as the checkout e-mail.',
  },
  payment_not_found: {
    status: 404,
    title: 'Payment not found',
    remedy: 'Check the payment id given by the payment provider at checkout.',
  },
  schedule_not_found: {
    status: 404,
    title: 'Schedule not found',
    remedy: 'Use a schedule_id of your own: swarm-node schedule list (GET /v1/swarm/schedules).',
  },
  run_not_found: { status: 404, title: 'Run not found', remedy: 'Use the run_id that execute answered with, as the user who started it.' },
  agent_not_found: {
    status: 404,
    title: 'Agent not found',
    remedy: 'Use an agent_id from the catalog (swarm-node agents).',
  },
  payment_not_confirmed: {
    status: 409,
    title: 'Payment not confirmed',
    remedy: 'Wait for the payment provider to confirm the payment, then retry activation.',
  },
  session_already_active: {
    status: 409,
    title: 'Session already active',
    remedy: 'Activate again with the payment that activated this session, or create a new session.',
  },
  payment_already_used: {
    status: 409,
    title: 'Payment already used',
    remedy: 'A payment activates one session; activate the session it already activated.',
  },
  no_node_available: {
    status: 409,
    title: 'No node available',
    remedy:
      'Start the daemon of a node that serves this agent (on it: systemctl start svc-swarm-node, or swarm-node daemon), or register the agent on one of your online nodes; your nodes and what they serve: swarm-node nodes.',
  },
  lease_lost: {
    status: 409,
    title: 'Run not held',
    remedy: 'This node no longer holds the run: its lease ran out and the run was failed and refunded. Drop the result.',
  },
  ephemeral_node_used: {
    status: 409,
    title: 'Ephemeral node used',
    remedy:
      'An ephemeral node takes one run and then removes itself; start the run on another node (yours: swarm-node nodes), or install a new ephemeral node for it.',
  },
  request_in_progress: {
    status: 409,
    title: 'Request in progress',
    remedy: 'Wait for the first request with this Idempotency-Key to finish, then retry.',
  },
  version_exists: {
    status: 409,
    title: 'Version exists',
    remedy: 'A version is never replaced: raise "version" in agent.json, then upload again.',
  },
  version_in_use: {
    status: 409,
    title: 'Version in use',
    remedy: 'Make another version current first, or wait for the runs pinned to it to finish, then remove it.',
  },
  backfill_unconfirmed: {
    status: 409,
    title: 'Backfill not confirmed',
    remedy: "Send the backfill again with confirm_runs set to the runs it names; in a terminal the CLI's schedule backfill asks for them.",
  },
  limit_reached: {
    status: 409,
    title: 'Limit reached',
    remedy: 'Remove what you no longer need of it, then try again; limit names how many you may keep.',
  },
  budget_exceeded: {
    status: 402,
    title: 'Budget exceeded',
    remedy: 'Wait until resets_at, or raise the cap (your caps: swarm-node budget list); nothing was charged.',
  },
  node_drained: {
    status: 409,
    title: 'Node drained',
    remedy:
      'The node is drained and takes no new run, its own included: resume it with nodes resume and its id (the ids: swarm-node nodes), then run again.',
  },
  artifact_exists: {
    status: 409,
    title: 'Artifact exists',
    remedy: "A run's artifact is never replaced by other bytes: write the other content under another name.",
  },
  bundle_invalid: {
    status: 422,
    title: 'Agent bundle invalid',
    remedy: 'Fix what errors names in the bundle (docs section agent-upload, "Bundle format"), then upload again.',
  },
  input_invalid: {
    status: 422,
    title: 'Input refused by the agent schema',
    remedy: "Send an input that meets the agent's input_schema (errors names each failing field); nothing was charged.",
  },
  payment_mismatch: {
    status: 422,
    title: 'Payment mismatch',
    remedy: 'Use a payment made for this tier and merchant.',
  },
  run_finished: {
    status: 409,
    title: 'Run already finished',
    remedy: 'Nothing is left to stop: the run already ended; GET /v1/swarm/runs/{run_id} says how.',
  },
  idempotency_key_void: {
    status: 409,
    title: 'Idempotency-Key settled as never run',
    remedy:
      'This key was looked up and settled as never run, and nothing was charged for it: send the run again with a new Idempotency-Key.',
  },
  idempotency_key_reuse: {
    status: 422,
    title: 'Idempotency-Key reused',
    remedy: 'Use a new Idempotency-Key for a different request.',
  },
  node_removed: {
    status: 410,
    title: 'Node removed',
    remedy:
      'This node was removed from your nodes (by you, or after it was offline longer than the service keeps offline nodes); its credential no longer works. To serve again, enroll the host anew, signed in: sudo swarm-node install --reenroll (an installed node), or swarm-node enroll --reenroll (a node run from a home).',
  },
  deploy_token_invalid: {
    status: 401,
    title: 'Deploy token invalid',
    remedy:
      'Get a fresh deploy token: activate the session again, or sign in and let install or enroll ask the service for one (swarm-node login).',
  },
  insufficient_balance: {
    status: 402,
    title: 'Insufficient balance',
    remedy: 'Fund the wallet at wallet_login_url, then retry execute.',
  },
  payload_too_large: { status: 413, title: 'Payload too large', remedy: 'Send a body of at most 64 KiB.' },
  upload_quota_exceeded: {
    status: 413,
    title: 'Upload quota exceeded',
    remedy: 'Remove versions you no longer need, then upload again.',
  },
  artifact_too_large: {
    status: 413,
    title: 'Artifact too large',
    remedy: 'Keep each artifact of a run to at most 64 MiB: split or compress it (docs/api.md "Run artifacts").',
  },
  run_artifacts_full: {
    status: 413,
    title: 'Run artifacts full',
    remedy: 'A run keeps at most 100 artifacts and 128 MiB of them: write fewer or smaller files into SWARM_ARTIFACTS_DIR.',
  },
  artifact_quota_exceeded: {
    status: 413,
    title: 'Artifact quota exceeded',
    remedy:
      "Your runs' artifacts are over your quota; room comes back as they expire, 30 days after their runs ended (your runs: swarm-node runs).",
  },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    remedy: 'Send the body as application/json.',
  },
  headers_too_large: {
    status: 431,
    title: 'Request header fields too large',
    remedy: 'Send smaller headers (drop oversized cookies or custom headers), then retry.',
  },
  rate_limited: { status: 429, title: 'Too many requests', remedy: 'Wait for Retry-After seconds, then retry.' },
  internal: { status: 500, title: 'Internal error', remedy: 'Retry later; the service logged the failure.' },
  service_unavailable: { status: 503, title: 'Service unavailable', remedy: 'Retry later.' },

  // Raised by the client only.
  usage: { status: null, title: 'Usage error', remedy: 'See --help.' },
  not_signed_in: { status: null, title: 'Not signed in', remedy: 'Sign in first: swarm-node login' },
  token_expired: { status: null, title: 'Token expired', remedy: 'Sign in again: swarm-node login' },
  not_enrolled: {
    status: null,
    title: 'Not an enrolled node',
    remedy: 'Enroll this host, signed in: sudo swarm-node install (an installed node), or swarm-node enroll (a node run from a home).',
  },
  service_unreachable: {
    status: null,
    title: 'Service unreachable',
    remedy: 'Check the base URL (swarm-node config get base_url) and the network, then retry.',
  },
  not_a_terminal: { status: null, title: 'Not a terminal', remedy: 'Pass the answers as flags (see --help).' },
  local_state: { status: null, title: 'Local state error' },
  interrupted: { status: null, title: 'Interrupted' },
  update_staged: {
    status: null,
    title: 'Update staged',
    remedy:
      'Nothing to do: the unit starts the daemon again, and its ExecStartPre (swarm-node upgrade --pending) switches to the staged release first.',
  },
  failed: { status: null, title: 'Failed' },
  status_alert: {
    status: null,
    title: "Agent's status at or above --fail-on",
    remedy: "The run succeeded and was charged; its answer says what needs attention (its findings, or --json's output).",
  },
  update_available: {
    status: null,
    title: 'Update available',
    remedy: 'Upgrade it, as root, when it suits you; a node with auto_update on takes it by itself.',
  },
  release_unverified: {
    status: null,
    title: 'Release not verified',
    remedy:
      'Nothing of it was installed. Download the release again; if it still fails, check which keys you trust (docs/operations.md "Releases").',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
