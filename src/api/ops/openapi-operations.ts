// What the OpenAPI document says of each operation beyond what ops/openapi.ts derives from its route (method, path,
// schemas, config.auth, config.rateLimited): the name a client generator gives it, one line of what it does, the
// errors of its own, and what the route's schemas cannot say (a binary body, an event stream, a header it reads, a
// credential the route checks itself). Keyed by method and the document's path. A route missing here still gets a
// name and a summary from its method and path (openapiFallback in ops/openapi.ts).
import { ARCHIVE_TYPES } from '../routes/v1/swarm/agent-versions.js';
import {
  BYTES,
  TEXT,
  EVENTS,
  header,
  IDEMPOTENCY_KEY,
  PREFER,
  LAST_EVENT_ID,
  RUN_EVENTS,
  STREAMED_EXECUTE,
  type OperationDoc,
} from './openapi-operation-parts.js';
import { WALLET_OPERATIONS } from './openapi-wallet-operations.js';

export type { AnswerDoc, Content, OperationDoc, OwnCredential, ParameterDoc, Schema } from './openapi-operation-parts.js';

export const OPERATIONS: Record<string, OperationDoc> = {
  // Operations (docs/api.md "Operations").
  'GET /openapi.json': { id: 'getOpenApiDocument', summary: 'The OpenAPI document of this instance' },
  'GET /healthz': { id: 'getHealth', summary: 'Liveness: the process answers' },
  'GET /readyz': { id: 'getReadiness', summary: "Readiness: the database answers, at this program's schema" },

  // Sign-in and tokens (docs/api.md "Sign-in: a verified inbox", "Revocation and sessions", "Audit").
  'POST /v1/auth/email-code': { id: 'sendSignInCode', summary: 'Mail a sign-in code to an address' },
  'POST /v1/auth/issue-token': {
    id: 'issueAccessToken',
    summary: 'Exchange a confirmed payment and the mailed code for an access token',
    errors: ['email_code_invalid', 'payment_not_found', 'payment_not_confirmed', 'payment_mismatch'],
  },
  'POST /v1/auth/verify': {
    id: 'verifyAccessToken',
    summary: 'Say whether an access token is valid, and whose',
    credential: 'token-to-verify',
  },
  'POST /v1/auth/logout': { id: 'signOut', summary: "Revoke this access token, or every one of the user's" },
  'GET /v1/audit': { id: 'listAuditEvents', summary: "The signed-in user's own events, newest first" },

  // The pay gate (spec §4).
  'POST /v1/swarm/paygate/session': { id: 'createPaygateSession', summary: 'Open a pending session for a tier' },
  'POST /v1/swarm/paygate/activate': {
    id: 'activatePaygateSession',
    summary: 'Activate a session with its confirmed payment: a deploy token',
    errors: [
      'forbidden',
      'session_not_found',
      'payment_not_found',
      'payment_not_confirmed',
      'payment_already_used',
      'session_already_active',
      'payment_mismatch',
    ],
  },
  'POST /v1/payments/webhook': {
    id: 'receivePaymentEvent',
    summary: "The payment provider's signed confirmation of a payment",
    errors: ['unauthorized', 'payment_not_found', 'payment_mismatch'],
    parameters: [
      {
        name: 'Svc-Signature',
        in: 'header',
        description: 't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> (docs/api.md "The payment webhook")',
        schema: TEXT,
      },
      { name: 'Stripe-Signature', in: 'header', description: "Stripe's signature, with SVC_PAYMENT_PROVIDER=stripe", schema: TEXT },
    ],
  },

  // The catalog and agents of one's own (docs/api.md "Agents of one's own", "Agent upload").
  'GET /v1/swarm/agents': { id: 'listAgents', summary: "The agent catalog, with the caller's own agents" },
  'GET /v1/swarm/agents/{agent_id}': {
    id: 'getAgent',
    summary: "One agent as the caller's run would execute it: its version and input_schema",
  },
  'POST /v1/swarm/agents/{agent_id}/versions': {
    id: 'uploadAgentVersion',
    summary: 'Upload a version of an agent: its bundle archive',
    errors: ['forbidden', 'agent_not_found', 'bundle_invalid', 'version_exists', 'upload_quota_exceeded'],
    limited: true,
    body: {
      description: 'The bundle: a tar archive, gzipped or not (the bytes decide), at most 5 MiB',
      required: true,
      content: Object.fromEntries(ARCHIVE_TYPES.map((type) => [type, { schema: BYTES }])),
    },
  },
  'GET /v1/swarm/agents/{agent_id}/versions': {
    id: 'listAgentVersions',
    summary: "The user's versions of an agent, and the current one",
    errors: ['forbidden', 'agent_not_found'],
  },
  'PUT /v1/swarm/agents/{agent_id}/current': {
    id: 'setCurrentAgentVersion',
    summary: 'Make an uploaded version current (a rollback)',
    errors: ['forbidden', 'agent_not_found'],
  },
  'DELETE /v1/swarm/agents/{agent_id}/current': {
    id: 'clearCurrentAgentVersion',
    summary: 'Make no upload current: back to the built-in agent',
    errors: ['forbidden', 'agent_not_found'],
  },
  'DELETE /v1/swarm/agents/{agent_id}/versions/{version}': {
    id: 'removeAgentVersion',
    summary: 'Remove an uploaded version that is not in use',
    errors: ['forbidden', 'agent_not_found', 'version_in_use'],
  },
  'GET /v1/swarm/bundles/{digest}': {
    id: 'downloadBundle',
    summary: 'A bundle archive, for its uploader or a node handed its run',
    answers: {
      200: {
        description: 'The archive, immutable (ETag: its digest)',
        content: { 'application/gzip': { schema: BYTES }, 'application/x-tar': { schema: BYTES } },
        headers: { ETag: { description: 'The digest, quoted', schema: TEXT } },
      },
    },
  },

  // Nodes (docs/api.md "Runs on the node", "Removing a node", "Ephemeral nodes", "Credential rotation", "Labels",
  // "Node health", "Draining a node").
  'POST /v1/swarm/nodes/enroll': {
    id: 'enrollNode',
    summary: "Enroll a host with a deploy token: the node's id and credential",
    credential: 'deploy-token',
    body: {
      description: 'Optional: {"ephemeral": true} enrolls a node that takes one run, then removes itself',
      required: false,
      content: { 'application/json': { schema: { type: 'object', properties: { ephemeral: { type: 'boolean' } } } } },
    },
  },
  'POST /v1/swarm/nodes/deploy-token': {
    id: 'issueDeployToken',
    summary: 'A deploy token for one more node of the user',
    errors: ['forbidden'],
  },
  'POST /v1/swarm/nodes/poll': { id: 'pollNode', summary: "A node's heartbeat: its leases renewed, its next work" },
  'POST /v1/swarm/nodes/self/offline': {
    id: 'markNodeOffline',
    summary: 'A node that stops says it is offline',
    answers: { 204: { description: 'Offline until its next poll' } },
  },
  'GET /v1/swarm/nodes/self': {
    id: 'getThisNode',
    summary: 'The calling node as the service sees it: online by its window, last seen, agents, labels',
  },
  'GET /v1/swarm/nodes/self/agents': { id: 'listNodeAgents', summary: 'The agents the service routes to this node' },
  'PUT /v1/swarm/nodes/self/agents/{agent_id}': { id: 'serveAgent', summary: 'This node serves an agent', errors: ['agent_not_found'] },
  'DELETE /v1/swarm/nodes/self/agents/{agent_id}': { id: 'withdrawAgent', summary: 'This node no longer serves an agent' },
  'PUT /v1/swarm/nodes/self/labels': { id: 'setNodeLabels', summary: 'The labels this node carries, replacing the ones before' },
  'POST /v1/swarm/nodes/{node_id}/credential': { id: 'rotateNodeCredential', summary: "Replace a node's credential" },
  'GET /v1/swarm/nodes': { id: 'listNodes', summary: "The user's nodes" },
  'DELETE /v1/swarm/nodes/self': { id: 'removeThisNode', summary: 'A node removes itself (an ephemeral node after its run)' },
  'DELETE /v1/swarm/nodes/{node_id}': { id: 'removeNode', summary: "Remove one of the user's nodes" },
  'POST /v1/swarm/nodes/{node_id}/drain': {
    id: 'drainNode',
    summary: "Drain one of the user's nodes: it takes no new run, finishes those it holds, stays online",
    errors: ['not_found'],
  },
  'POST /v1/swarm/nodes/{node_id}/resume': {
    id: 'resumeNode',
    summary: 'Resume a drained node: it takes runs again',
    errors: ['not_found'],
  },

  // Runs (spec §4; docs/api.md "Runs on the node", "Runs as jobs", "Run logs", "Run artifacts").
  'POST /v1/swarm/execute': {
    id: 'executeAgent',
    summary: "Run an agent on one of the user's nodes, charged to the wallet",
    errors: [
      'forbidden',
      'agent_not_found',
      'insufficient_balance',
      'budget_exceeded',
      'no_node_available',
      'ephemeral_node_used',
      'request_in_progress',
      'idempotency_key_void',
      'idempotency_key_reuse',
      'input_invalid',
    ],
    parameters: [
      IDEMPOTENCY_KEY,
      PREFER,
      header('Accept', 'text/event-stream: the run streamed (its events, then its result) in place of the wait for its answer'),
      LAST_EVENT_ID,
      {
        name: 'Svc-Run-Trigger',
        in: 'header',
        required: false,
        description:
          'What started the run, recorded and shown as its trigger, never used for money or access (docs/api.md "Triggers"): manual, or schedule with a node credential only; absent: api. Anything else: 400',
        schema: { type: 'string', enum: ['manual', 'schedule'] },
      },
    ],
    answers: {
      200: {
        ...EVENTS('The run, finished within the wait; asked with Accept: text/event-stream, the run streamed instead', STREAMED_EXECUTE),
        description: 'The run, finished within the wait; asked with Accept: text/event-stream, the run streamed instead',
      },
      202: {
        description: "The run as it stands (queued or running), charged; a node's own run with its lease",
        headers: { Location: { description: 'GET it to follow the run', schema: TEXT } },
      },
    },
  },
  'GET /v1/swarm/runs': { id: 'listRuns', summary: "The user's runs, newest first, filtered" },
  'GET /v1/swarm/runs/{run_id}': {
    id: 'getRun',
    summary: 'A run as it stands, or once it finishes (wait)',
    errors: ['run_not_found'],
    parameters: [PREFER],
  },
  'POST /v1/swarm/runs/{run_id}/result': {
    id: 'reportRunResult',
    summary: "The holding node's result of a run",
    errors: ['run_not_found', 'lease_lost'],
  },
  'POST /v1/swarm/runs/{run_id}/cancel': { id: 'cancelRun', summary: 'Cancel a run', errors: ['run_not_found', 'run_finished'] },
  'POST /v1/swarm/runs/by-key': {
    id: 'settleRunByKey',
    summary: "An Idempotency-Key's run, or the key settled as never run",
    errors: ['run_not_found'],
    parameters: [{ ...IDEMPOTENCY_KEY, description: 'The key of the execute whose answer was lost' }],
  },
  'POST /v1/swarm/runs/{run_id}/logs': {
    id: 'appendRunLogs',
    summary: "The holding node's batch of a run's log",
    errors: ['run_not_found', 'lease_lost'],
  },
  'GET /v1/swarm/runs/{run_id}/logs': {
    id: 'getRunLogs',
    summary: "A run's log: a page of entries, or followed live (follow=1)",
    errors: ['run_not_found'],
    parameters: [LAST_EVENT_ID],
    answers: { 200: EVENTS('A page of entries (JSON), or with follow=1 the entries as Server-Sent Events until the run ends') },
  },
  'POST /v1/swarm/runs/{run_id}/events': {
    id: 'appendRunEvents',
    summary: "The holding node's batch of a run's structured events",
    errors: ['run_not_found', 'lease_lost', 'payload_too_large'],
  },
  'GET /v1/swarm/runs/{run_id}/events': {
    id: 'followRunEvents',
    summary: "A run's structured events as Server-Sent Events until it ends, resumable with Last-Event-ID",
    errors: ['run_not_found'],
    parameters: [LAST_EVENT_ID],
    answers: { 200: EVENTS("The run's events as Server-Sent Events (run_event, then end), until the run ends", RUN_EVENTS) },
  },
  'PUT /v1/swarm/runs/{run_id}/artifacts/{name}': {
    id: 'uploadRunArtifact',
    summary: 'The holding node uploads a file of a run',
    errors: ['run_not_found', 'lease_lost', 'artifact_exists', 'artifact_too_large', 'run_artifacts_full', 'artifact_quota_exceeded'],
    body: { description: "The file's bytes, at most 64 MiB", required: true, content: { 'application/octet-stream': { schema: BYTES } } },
  },
  'GET /v1/swarm/runs/{run_id}/artifacts': { id: 'listRunArtifacts', summary: "A run's artifacts", errors: ['run_not_found'] },
  'GET /v1/swarm/runs/{run_id}/artifacts/{name}': {
    id: 'downloadRunArtifact',
    summary: "One artifact's bytes, as an attachment",
    errors: ['run_not_found'],
    parameters: [header('If-None-Match', 'The ETag of the copy the client holds: 304 when it is this one')],
    answers: {
      200: {
        description: 'The bytes; Content-Type guessed from the name, Content-Disposition: attachment',
        content: { '*/*': { schema: BYTES } },
        headers: { ETag: { description: "The artifact's SHA-256, quoted", schema: TEXT } },
      },
      304: { description: 'The copy the client holds is this one' },
    },
  },

  // The user's account (docs/api.md "Around the runs"; the wallet and docs sections: spec §4, §5.4).
  'GET /v1/swarm/wallet': { id: 'getWallet', summary: "The user's balance and wallet" },
  'GET /v1/swarm/secrets': { id: 'listSecrets', summary: "The user's secrets: names and dates, never values" },
  'PUT /v1/swarm/secrets/{name}': { id: 'setSecret', summary: 'Set a secret', errors: ['limit_reached'] },
  'DELETE /v1/swarm/secrets/{name}': { id: 'removeSecret', summary: 'Remove a secret' },
  'GET /v1/swarm/budgets': { id: 'listBudgets', summary: "The user's budgets, with what is spent" },
  'PUT /v1/swarm/budgets/{scope}/{period}': {
    id: 'setBudget',
    summary: 'Set a cap on what runs cost a day or a month',
    errors: ['agent_not_found'],
  },
  'DELETE /v1/swarm/budgets/{scope}/{period}': { id: 'removeBudget', summary: 'Remove a cap', errors: ['agent_not_found'] },
  'GET /v1/swarm/usage': { id: 'getUsage', summary: "What the user's runs cost, by day, agent and node" },
  'POST /v1/swarm/webhooks': { id: 'createWebhook', summary: 'Add a webhook endpoint', errors: ['limit_reached'] },
  'GET /v1/swarm/webhooks': { id: 'listWebhooks', summary: "The user's webhook endpoints" },
  'GET /v1/swarm/webhooks/{endpoint_id}': { id: 'getWebhook', summary: 'A webhook endpoint' },
  'DELETE /v1/swarm/webhooks/{endpoint_id}': { id: 'removeWebhook', summary: 'Remove a webhook endpoint' },
  'POST /v1/swarm/webhooks/{endpoint_id}/rotate-secret': {
    id: 'rotateWebhookSecret',
    summary: "Replace a webhook endpoint's signing secret",
  },
  'GET /v1/swarm/webhooks/{endpoint_id}/deliveries': {
    id: 'listWebhookDeliveries',
    summary: "A webhook endpoint's deliveries, newest first",
  },
  'GET /v1/swarm/webhooks/{endpoint_id}/deliveries/{event_id}': {
    id: 'getWebhookDelivery',
    summary: 'A delivery, with its payload and attempts',
  },
  'POST /v1/swarm/webhooks/{endpoint_id}/deliveries/{event_id}/resend': {
    id: 'resendWebhookDelivery',
    summary: 'Send a delivery again',
    limited: true,
  },
  // Schedules (docs/api.md "Schedules").
  'POST /v1/swarm/schedules': {
    id: 'createSchedule',
    summary: 'Make a schedule: an agent run on a cron expression or an interval, in a time zone',
    errors: ['invalid_schedule', 'agent_not_found', 'limit_reached'],
  },
  'GET /v1/swarm/schedules': { id: 'listSchedules', summary: "The user's schedules" },
  'POST /v1/swarm/nodes/self/schedules': {
    id: 'migrateNodeSchedules',
    summary: "A node's one-time move of its daemon's schedules to the service, each pinned to it",
    errors: ['forbidden'],
  },
  'GET /v1/swarm/schedules/{schedule_id}': {
    id: 'getSchedule',
    summary: 'A schedule, its next five fire times and its coalesced skips',
    errors: ['schedule_not_found'],
  },
  'PATCH /v1/swarm/schedules/{schedule_id}': {
    id: 'changeSchedule',
    summary: 'Change a schedule (lowering its cap alone needs no recent sign-in)',
    errors: ['schedule_not_found', 'invalid_schedule', 'agent_not_found', 'step_up_required'],
  },
  'POST /v1/swarm/schedules/{schedule_id}/pause': { id: 'pauseSchedule', summary: 'Pause a schedule', errors: ['schedule_not_found'] },
  'POST /v1/swarm/schedules/{schedule_id}/resume': {
    id: 'resumeSchedule',
    summary: 'Resume a schedule from its next fire time',
    errors: ['schedule_not_found', 'invalid_schedule'],
  },
  'POST /v1/swarm/schedules/{schedule_id}/backfill': {
    id: 'backfillSchedule',
    summary: "Run a past range's occurrences that have no run (confirm_runs over 10)",
    errors: ['schedule_not_found', 'invalid_schedule', 'backfill_unconfirmed'],
  },
  'DELETE /v1/swarm/schedules/{schedule_id}': { id: 'removeSchedule', summary: 'Remove a schedule', errors: ['schedule_not_found'] },
  'GET /v1/docs': { id: 'listDocsSections', summary: "The documentation sections the caller's tier unlocks" },
  'GET /v1/docs/{section}': { id: 'getDocsSection', summary: 'A documentation section, as Markdown', errors: ['forbidden'] },

  // Releases (docs/api.md "Releases").
  'GET /v1/swarm/releases/latest': {
    id: 'getLatestRelease',
    summary: 'The newest release of swarm-node for a platform',
    credential: 'deploy-token-or-node',
    errors: ['not_found'],
  },
  'GET /v1/swarm/releases/{version}/{file}': {
    id: 'downloadReleaseFile',
    summary: 'A file of a release: tarball, checksum, manifest or signature',
    credential: 'deploy-token-or-node',
    answers: {
      200: {
        description: 'The file, immutable',
        content: { 'application/gzip': { schema: BYTES }, 'application/octet-stream': { schema: BYTES }, 'text/plain': { schema: TEXT } },
      },
    },
  },
  'GET /install.sh': {
    id: 'getInstallScript',
    summary: "The host's install script, naming this service",
    credential: 'none',
    answers: { 200: { description: 'The script (sh)', content: { 'text/x-shellscript': { schema: TEXT } } } },
  },

  ...WALLET_OPERATIONS,
};
