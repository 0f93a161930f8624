// The service's tables as the query builder sees them (src/api/store/sqlite-migrations.ts, postgres-schema.ts).
// Times are integer milliseconds since the epoch and money integer cents, on both engines: PostgreSQL's BIGINT is
// read back as a JS number (store.ts sets the parser), which holds both exactly far past any real value.
import type { Generated } from 'kysely';
import type { RunTrigger } from '../../contract/run-trigger.js';

export interface Tables {
  payments: {
    payment_id: string;
    status: string;
    customer_email: string;
    offer_id: string;
    merchant_id: string;
    amount_cents: number;
    confirmed_at: number | null;
    recorded_at: number;
  };
  webhook_events: { event_id: string; type: string; received_at: number };
  sessions: {
    session_id: string;
    tier_id: string;
    user_id: string;
    status: 'pending' | 'active';
    payment_id: string | null;
    created_at: number;
    expires_at: number;
    activated_at: number | null;
  };
  deploy_tokens: {
    token_hash: string;
    session_id: string | null;
    user_id: string;
    tier_id: string;
    payment_id: string;
    created_at: number;
    expires_at: number;
    used_at: number | null;
    revoked_at: number | null;
  };
  nodes: {
    node_id: string;
    session_id: string | null;
    user_id: string;
    tier_id: string;
    payment_id: string;
    enrolled_at: number;
    credential_hash: string | null;
    hostname: string | null;
    name: string | null;
    version: string | null;
    last_seen_at: number | null;
    next_credential_hash: string | null;
    /** Removed from its user's fleet (docs/api.md "Removing a node"): its credential is answered 410 node_removed. */
    removed_at: number | null;
    /** 1: an ephemeral node, which takes one run (docs/api.md "Ephemeral nodes"); 0: any other. */
    ephemeral: Generated<number>;
    /** An ephemeral node's one run, set when it is leased or started; null before (and on any other node). */
    ephemeral_run_id: string | null;
    /** When its daemon said it stopped (POST /v1/swarm/nodes/self/offline); cleared by its next poll. Offline meanwhile. */
    offline_at: number | null;
    /** Its last poll's `health`, as validated (contract/node-protocol.ts NodeHealth); null: it never said. */
    health_json: string | null;
    /** When the service received that health. */
    health_reported_at: number | null;
    /** Drained by its user (docs/api.md "Draining a node"): it takes no new run; null: it takes runs. */
    drained_at: number | null;
    /** When its daemon moved its local schedules to the service (once); null: not yet. */
    schedules_migrated_at: Generated<number | null>;
  };
  node_agents: { node_id: string; agent_id: string; registered_at: number };
  /** The labels a node carries, lowercase (contract/labels.ts). */
  node_labels: { node_id: string; label: string };
  /** The labels a run requires of the node that takes it; none: any node. */
  run_labels: { run_id: string; label: string };
  issued_tokens: {
    jti: string;
    sub: string;
    tier: string;
    kid: string;
    payment_id: string;
    issued_at: number;
    expires_at: number;
    /** When the inbox was proven for it (its auth_time claim); null for tokens issued before inbox sign-in. */
    auth_time: number | null;
    client_address: string | null;
    user_agent: string | null;
    revoked_at: number | null;
  };
  email_challenges: {
    challenge_id: string;
    email: string;
    code_hash: string;
    client_address: string;
    created_at: number;
    expires_at: number;
    attempts: Generated<number>;
    used_at: number | null;
  };
  token_revocations: { revocation_id: string; user_id: string; jti: string | null; not_before: number | null; revoked_at: number };
  audit_events: {
    event_id: string;
    user_id: string;
    kind: string;
    at: number;
    client_address: string | null;
    user_agent: string | null;
    detail_json: string;
  };
  sandbox_outbox: { message_id: string; to_address: string; subject: string; text_body: string; sent_at: number };
  /** `caps_version`: moves with every change of the user's budgets (budget-counters-migration.ts). */
  wallets: { user_id: string; balance_cents: number; updated_at: number; caps_version: Generated<number> };
  ledger_entries: {
    entry_id: Generated<number>;
    user_id: string;
    kind: 'credit' | 'debit' | 'refund';
    amount_cents: number;
    payment_id: string | null;
    run_id: string | null;
    created_at: number;
  };
  runs: {
    run_id: string;
    user_id: string;
    agent_id: string;
    status: 'queued' | 'running' | 'succeeded' | 'failed';
    /** The price debited when the run was accepted; 0 once refunded. */
    charged_cents: number;
    input_json: string | null;
    output_json: string | null;
    /** The uploaded bundle the run executes (pinned at execute); null: the node's built-in agent. */
    bundle_digest: string | null;
    pinned_node_id: string | null;
    node_id: string | null;
    lease_id: string | null;
    lease_expires_at: number | null;
    finished_by: 'node' | 'service' | null;
    started_at: number;
    claimed_at: number | null;
    finished_at: number | null;
    /** The longest the run may take on its node, in seconds (the agent's limit, or less when execute asked). */
    timeout_seconds: number | null;
    /** How long it may wait for a node, in seconds, and until when it waits this time (reset by a retry). */
    queue_seconds: number | null;
    queue_deadline_at: number | null;
    /** Which attempt runs it (from 1); a retry-safe run lost with its node is queued again as the next. */
    attempt: number;
    /** 1: the agent's version said its runs may run again from the start (agent.json retry_safe). */
    retry_safe: number;
    /** When the user asked to cancel it while it ran; its node stops it at its next contact. */
    cancel_requested_at: number | null;
    /** Set when it ended cancelled: stored as status failed, shown as `cancelled` (run-view.ts). */
    cancelled_at: number | null;
    /** What started it (contract/run-trigger.ts), set at execute; null for a run from before it was recorded. */
    trigger: RunTrigger | null;
  };
  /** The attempts of a run that ended before its last one (each lost with its node, or interrupted by a restart). */
  run_attempts: {
    run_id: string;
    attempt: number;
    node_id: string | null;
    claimed_at: number | null;
    ended_at: number;
    error: string;
    message: string;
  };
  /** A run's log as a whole (docs/api.md "Run logs"); a run without a log has no row. */
  run_logs: {
    run_id: string;
    /** The UTF-8 bytes of the entries' text stored, against MAX_LOG_BYTES_PER_RUN. */
    stored_bytes: number;
    /** The highest seq stored; -1 before the first. */
    last_seq: number;
    /** 1: the log reached its cap, its truncation marker is stored, nothing more is. */
    truncated: number;
    /** When its run ended (copied by the retention sweep); its entries expire RUN_DATA_RETENTION_DAYS after. */
    ended_at: number | null;
    /** When its entries were removed. */
    expired_at: number | null;
  };
  run_log_entries: { run_id: string; seq: number; stream: 'stdout' | 'stderr' | 'node'; at: number; text: string };
  /** A run that has events (docs/api.md "Run events"): what is counted against their caps. */
  run_event_streams: { run_id: string; stored_events: number; stored_bytes: number; last_seq: number; truncated: number };
  run_event_entries: { run_id: string; seq: number; attempt: number; type: string; name: string | null; at: number; data_json: string };
  idempotency_keys: {
    user_id: string;
    idempotency_key: string;
    request_hash: string;
    state: 'in_progress' | 'done';
    status_code: number | null;
    response_json: string | null;
    run_id: string | null;
    created_at: number;
  };
  sandbox_payments: {
    payment_id: string;
    status: string;
    customer_email: string;
    offer_id: string;
    merchant_id: string;
    amount_cents: number;
    created_at: number;
    confirmed_at: number | null;
    webhook_event_id: string | null;
    webhook_delivered_at: number | null;
    webhook_attempts: Generated<number>;
  };
  wallet_sessions: {
    session_hash: string;
    user_id: string;
    tier: string;
    token_jti: string | null;
    created_at: number;
    expires_at: number;
    /** When the inbox was last proven for it (ms): the JWT's auth_time, or a code confirmed in the console. */
    auth_time: number | null;
  };
  agent_bundles: { digest: string; content: Buffer; size_bytes: number; created_at: number };
  agent_versions: {
    user_id: string;
    agent_id: string;
    version: string;
    digest: string;
    input_schema_json: string;
    files: number;
    unpacked_bytes: number;
    uploaded_at: number;
    /** When it last stopped being current (null: never was replaced); unused since then, or since its upload. */
    released_at: number | null;
    /** What the version's agent.json asks of its runs (contract/agent-bundle.ts RunTerms); null: uploaded before, the defaults. */
    run_terms_json: string | null;
  };
  agent_current: { user_id: string; agent_id: string; digest: string; updated_at: number };
  /** A user's secret (docs/api.md "Secrets"): AES-256-GCM under the key key_id names; nonce and ciphertext base64. */
  user_secrets: {
    user_id: string;
    name: string;
    key_id: string;
    nonce: string;
    ciphertext: string;
    created_at: number;
    updated_at: number;
  };
  /** A cap on what a user spends (docs/api.md "Budgets"): scope '*' (every agent) or an agent_id; period 'day' or 'month'. */
  budgets: {
    user_id: string;
    scope: string;
    period: 'day' | 'month';
    cap_cents: number;
    created_at: number;
    updated_at: number;
    /** What the runs started in the period starting at `period_start` were charged, refunds taken off. */
    spent_cents: Generated<number>;
    period_start: Generated<number>;
  };
  /** What one subject took of one limit in the clock-aligned window starting at window_start (rate-counters-migration.ts). */
  rate_counters: { counter: string; subject: string; window_start: number; taken: number };
  /** Where a user's run events are sent (docs/api.md "Webhooks"), with its signing secret, encrypted as a secret is. */
  webhook_endpoints: {
    endpoint_id: string;
    user_id: string;
    url: string;
    /** One bit per event type (contract/webhooks.ts). */
    event_mask: number;
    description: string | null;
    secret_key_id: string;
    secret_nonce: string;
    secret_ciphertext: string;
    /** The secret before the last rotation, signed with too until previous_expires_at. */
    previous_key_id: string | null;
    previous_nonce: string | null;
    previous_ciphertext: string | null;
    previous_expires_at: number | null;
    created_at: number;
    updated_at: number;
  };
  /** One event for one endpoint: written with the state change, sent by the delivery worker. */
  webhook_deliveries: {
    event_id: string;
    endpoint_id: string;
    user_id: string;
    /** '' for a schedule's event. */
    run_id: string;
    schedule_id: Generated<string | null>;
    event_type: string;
    payload_json: string;
    created_at: number;
    status: 'pending' | 'delivered' | 'failed';
    attempts: Generated<number>;
    tries: Generated<number>;
    next_attempt_at: number | null;
    last_attempt_at: number | null;
    last_status_code: number | null;
    last_error: string | null;
    delivered_at: number | null;
  };
  webhook_attempts: {
    event_id: string;
    endpoint_id: string;
    attempt: number;
    at: number;
    status_code: number | null;
    error: string | null;
    response_excerpt: string | null;
    duration_ms: number;
  };
  /** A user's stored bytes of artifacts, once per digest (docs/api.md "Run artifacts"); 0: still being written. */
  artifact_blobs: { blob_id: string; user_id: string; sha256: string; size_bytes: number; complete: Generated<number>; created_at: number };
  /** A blob's bytes in order, 1 MiB a row. */
  artifact_chunks: { blob_id: string; seq: number; content: Buffer };
  /** A run's artifact: its name and the blob of its bytes; lease_id is the attempt that uploaded it. */
  run_artifacts: {
    run_id: string;
    name: string;
    user_id: string;
    blob_id: string;
    sha256: string;
    size_bytes: number;
    lease_id: string;
    created_at: number;
  };
  /** A user's schedule (docs/api.md "Schedules"); labels_json a sorted array, input_json the runs' input. */
  schedules: {
    schedule_id: string;
    user_id: string;
    agent_id: string;
    input_json: string | null;
    cron: string | null;
    interval_seconds: number | null;
    time_zone: string;
    overlap: string;
    catch_up_seconds: number;
    node_id: string | null;
    labels_json: string;
    daily_cap_cents: number | null;
    pause_after_failures: number | null;
    paused: number;
    pause_reason: string | null;
    consecutive_failures: number;
    next_fire_at: number | null;
    anchor_at: number;
    recheck_at: number | null;
    authorized_jti: string | null;
    /** The node whose daemon's registration this schedule was, moved by its one-time migration; null: made as such. */
    migrated_from_node: Generated<string | null>;
    created_at: number;
    updated_at: number;
  };
  /** One occurrence of a schedule, kept for the schedule's life: its key (schedule_id, fire_at) is fired once. */
  schedule_occurrences: {
    schedule_id: string;
    fire_at: number;
    state: 'pending' | 'buffered' | 'started' | 'skipped' | 'settled';
    run_id: string | null;
    price_cents: number;
    local_day: string;
    claimed_at: number;
  };
  /** Consecutive skips of a schedule for one reason, coalesced. */
  schedule_skips: {
    skip_id: string;
    schedule_id: string;
    reason: string;
    detail: string | null;
    count: number;
    first_at: number;
    last_at: number;
    open: number;
  };
}
