// What the OpenAPI document says of each operation beyond what ops/openapi.ts derives from its route (method, path,
// schemas, config.auth, config.rateLimited): the name a client generator gives it, one line of what it does, the
// errors of its own, and what the route's schemas cannot say (a binary body, an event stream, a header it reads, a
// credential the route checks itself). Keyed by method and the document's path. A route missing here still gets a
// name and a summary from its method and path (openapiFallback in ops/openapi.ts).
import { WALLET_LOGIN_INTENT } from '../../contract/claims.js';
import type { ErrorCode } from '../../contract/errors.js';
import { LOG_END_EVENT, LOG_EVENT } from '../../contract/jobs.js';
import { ARCHIVE_TYPES } from '../routes/v1/swarm/agent-versions.js';

/** The credential of a route that checks it itself rather than through `config.auth` (http/auth.ts). */
export type OwnCredential =
  /** enroll: a deploy token, spent by the enrollment. */
  | 'deploy-token'
  /** A release: a deploy token not yet used (looked at, not spent), or a node credential. */
  | 'deploy-token-or-node'
  /** verify: the JWT to verify, as the bearer or in the body; every token question is answered 200. */
  | 'token-to-verify'
  /** A wallet page that answers without a session too, and more to one (the sign-in page, sign-out). */
  | 'console-session-optional'
  /** Public. */
  | 'none';

export type Schema = Record<string, unknown>;
export type Content = Record<string, { schema: Schema }>;
export interface AnswerDoc {
  description: string;
  content?: Content;
  headers?: Record<string, { description: string; schema: Schema }>;
}
export interface ParameterDoc {
  name: string;
  in: 'query' | 'header';
  required?: boolean;
  description: string;
  schema: Schema;
}

export interface OperationDoc {
  /** The operationId: a verb and what it acts on, camelCase, unique in the document. */
  id: string;
  summary: string;
  credential?: OwnCredential;
  /** Its own errors (error-codes.ts), besides those derived from its input, credential and limits. */
  errors?: ErrorCode[];
  /** Counted by a limit of its own (uploads an hour, re-sends a minute), besides `config.rateLimited`. */
  limited?: true;
  /** The body, where the route's schema does not describe it (bytes, an optional body, a form). */
  body?: { description: string; required: boolean; content: Content };
  /** Headers and query parameters the route reads without a schema for them. */
  parameters?: ParameterDoc[];
  /** Success answers the route's response schemas do not give (other content types, no content, a redirect). */
  answers?: Record<string, AnswerDoc>;
}

const LOG_EVENTS =
  `Server-Sent Events: a \`${LOG_EVENT}\` event per entry (its seq as the id), then one \`${LOG_END_EVENT}\` event once the run ` +
  'finished; a comment line keeps a quiet stream open (docs/api.md "Run logs")';
const BYTES: Schema = { type: 'string', format: 'binary' };
const TEXT: Schema = { type: 'string' };
const HTML = (description: string): AnswerDoc => ({ description, content: { 'text/html': { schema: TEXT } } });
const EVENTS = (description: string): AnswerDoc => ({
  description,
  content: { 'text/event-stream': { schema: { type: 'string', description: LOG_EVENTS } } },
});
const SEE_OTHER = (description: string): AnswerDoc => ({
  description,
  headers: { Location: { description: 'The page to show next, relative to this one', schema: TEXT } },
});

const query = (name: string, description: string): ParameterDoc => ({ name, in: 'query', description, schema: TEXT });
const header = (name: string, description: string): ParameterDoc => ({ name, in: 'header', description, schema: TEXT });
const IDEMPOTENCY_KEY: ParameterDoc = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description: "The client's key of this run: printable ASCII, at most 255 characters (docs/api.md \"POST /v1/swarm/execute\")",
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};
const PREFER = header('Prefer', "wait=<seconds> (at most the service's wait, 30 s by default) or respond-async (RFC 7240)");
const LAST_EVENT_ID = header('Last-Event-ID', 'An EventSource that reconnects: the seq of the last entry it got (?after wins)');
const FORM = (description: string): OperationDoc['body'] => ({
  description,
  required: true,
  content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', additionalProperties: TEXT } } },
});

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
  'POST /v1/swarm/agents/{agent_id}/versions': {
    id: 'uploadAgentVersion',
    summary: "Upload a version of an agent: its bundle archive",
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

  // Nodes (docs/api.md "Runs on the node", "Removing a node", "Ephemeral nodes", "Credential rotation", "Labels").
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
  'GET /v1/swarm/nodes/self/agents': { id: 'listNodeAgents', summary: 'The agents the service routes to this node' },
  'PUT /v1/swarm/nodes/self/agents/{agent_id}': { id: 'serveAgent', summary: 'This node serves an agent', errors: ['agent_not_found'] },
  'DELETE /v1/swarm/nodes/self/agents/{agent_id}': { id: 'withdrawAgent', summary: 'This node no longer serves an agent' },
  'PUT /v1/swarm/nodes/self/labels': { id: 'setNodeLabels', summary: 'The labels this node carries, replacing the ones before' },
  'POST /v1/swarm/nodes/{node_id}/credential': { id: 'rotateNodeCredential', summary: "Replace a node's credential" },
  'GET /v1/swarm/nodes': { id: 'listNodes', summary: "The user's nodes" },
  'DELETE /v1/swarm/nodes/self': { id: 'removeThisNode', summary: 'A node removes itself (an ephemeral node after its run)' },
  'DELETE /v1/swarm/nodes/{node_id}': { id: 'removeNode', summary: 'Remove one of the user\'s nodes' },

  // Runs (spec §4; docs/api.md "Runs on the node", "Runs as jobs", "Run logs", "Run artifacts").
  'POST /v1/swarm/execute': {
    id: 'executeAgent',
    summary: 'Run an agent on one of the user\'s nodes, charged to the wallet',
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
    parameters: [IDEMPOTENCY_KEY, PREFER],
    answers: {
      200: { description: 'The run, finished within the wait' },
      202: {
        description: 'The run as it stands (queued or running), charged; a node\'s own run with its lease',
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

  // The wallet page and the console (docs/api.md "Wallet page", "Console"): HTML for a browser.
  'GET /wallet': {
    id: 'openWallet',
    summary: 'The wallet: on to its sign-in page',
    credential: 'none',
    answers: { 303: SEE_OTHER('To the sign-in page') },
  },
  'GET /wallet/login': {
    id: 'showWalletLogin',
    summary: 'The wallet page; with a sign-in link\'s token, the sign-in',
    credential: 'console-session-optional',
    // A sign-in link whose token is expired or not the service's is a 401 page.
    errors: ['unauthorized'],
    parameters: [
      query('token', 'An access token, exchanged once for the session cookie'),
      query('intent', `The sign-in link's purpose: ${WALLET_LOGIN_INTENT}`),
    ],
    answers: {
      200: HTML('The wallet (signed in) or the sign-in page'),
      303: SEE_OTHER('Signed in: the session cookie set, on to the bare page'),
    },
  },
  'POST /wallet/logout': {
    id: 'signOutOfWallet',
    summary: 'End the wallet session',
    credential: 'console-session-optional',
    answers: { 303: SEE_OTHER('Signed out: on to the sign-in page') },
  },
  'POST /wallet/fund': {
    id: 'fundWallet',
    summary: 'Fund the wallet through the sandbox provider (sandbox only)',
    body: FORM('amount: dollars, for example 10 or 2.50'),
    answers: { 303: SEE_OTHER('Credited: on to the wallet'), 202: HTML('Confirmed, not credited yet') },
  },
  'POST /wallet/confirm/send': {
    id: 'sendConsoleConfirmCode',
    summary: "Mail a code to confirm a sign-in for the console's changes",
    body: FORM('return: the page to go back to'),
    answers: { 200: HTML('The form for the mailed code') },
  },
  'POST /wallet/confirm': {
    id: 'confirmConsoleSignIn',
    summary: 'Confirm the sign-in with the mailed code',
    errors: ['email_code_invalid'],
    body: FORM('return, challenge_id, code'),
    answers: { 303: SEE_OTHER('Confirmed: back to the page it came from') },
  },
  'GET /wallet/nodes': { id: 'showConsoleNodes', summary: "The console's nodes page" },
  'GET /wallet/runs': {
    id: 'showConsoleRuns',
    summary: "The console's runs page",
    parameters: ['agent_id', 'status', 'node_id', 'cursor'].map((name) => query(name, `As GET /v1/swarm/runs takes it; empty: none`)),
  },
  'GET /wallet/runs/{run_id}': { id: 'showConsoleRun', summary: "The console's page of a run", errors: ['run_not_found'] },
  'GET /wallet/runs/{run_id}/log-events': {
    id: 'followConsoleRunLog',
    summary: "A run's log followed live, for the session's cookie",
    errors: ['run_not_found'],
    parameters: [query('after', 'The seq to follow from (-1: the first)'), LAST_EVENT_ID],
    answers: { 200: EVENTS('The entries as Server-Sent Events until the run ends') },
  },
  'GET /wallet/runs/{run_id}/artifacts/{name}': {
    id: 'downloadConsoleRunArtifact',
    summary: "Download a run's artifact from the console",
    errors: ['run_not_found'],
    answers: { 200: { description: 'The bytes, as an attachment', content: { '*/*': { schema: BYTES } } } },
  },
  'POST /wallet/runs/{run_id}/cancel': {
    id: 'cancelConsoleRun',
    summary: 'Cancel a run from the console',
    errors: ['run_not_found', 'run_finished'],
    answers: { 303: SEE_OTHER("On to the run's page") },
  },
  'GET /wallet/usage': {
    id: 'showConsoleUsage',
    summary: "The console's usage page",
    parameters: [query('from', 'The first day (YYYY-MM-DD)'), query('to', 'The last day (YYYY-MM-DD)')],
  },
  'GET /wallet/budgets': { id: 'showConsoleBudgets', summary: "The console's budgets page" },
  'POST /wallet/budgets': {
    id: 'setConsoleBudget',
    summary: 'Set a budget from the console',
    errors: ['agent_not_found'],
    body: FORM('scope, period, cap (dollars)'),
  },
  'POST /wallet/budgets/remove': {
    id: 'removeConsoleBudget',
    summary: 'Remove a budget from the console',
    errors: ['agent_not_found'],
    body: FORM('scope, period'),
  },
  'GET /wallet/secrets': { id: 'showConsoleSecrets', summary: "The console's secrets page" },
  'POST /wallet/secrets': {
    id: 'setConsoleSecret',
    summary: 'Set a secret from the console',
    errors: ['step_up_required', 'limit_reached'],
    body: FORM('name, value'),
  },
  'POST /wallet/secrets/remove': {
    id: 'removeConsoleSecret',
    summary: 'Remove a secret from the console',
    errors: ['step_up_required'],
    body: FORM('name'),
  },
  'GET /wallet/webhooks': { id: 'showConsoleWebhooks', summary: "The console's webhooks page" },
  'POST /wallet/webhooks': {
    id: 'createConsoleWebhook',
    summary: 'Add a webhook endpoint from the console',
    errors: ['step_up_required', 'limit_reached'],
    body: FORM('url, description, events'),
  },
  'GET /wallet/webhooks/{endpoint_id}': {
    id: 'showConsoleWebhook',
    summary: "The console's page of a webhook endpoint",
    parameters: [query('before', 'The event_id after which the next page of deliveries starts')],
  },
  'POST /wallet/webhooks/{endpoint_id}/remove': {
    id: 'removeConsoleWebhook',
    summary: 'Remove a webhook endpoint from the console',
    errors: ['step_up_required'],
  },
  'POST /wallet/webhooks/{endpoint_id}/deliveries/{event_id}/resend': {
    id: 'resendConsoleWebhookDelivery',
    summary: 'Send a delivery again from the console',
    limited: true,
  },

  // The sandbox provider (svc-api --sandbox only; docs/api.md "The sandbox payment provider", "Mail").
  'POST /sandbox/payments': { id: 'createSandboxPayment', summary: 'A checkout at the sandbox provider' },
  'POST /sandbox/payments/{id}/confirm': {
    id: 'confirmSandboxPayment',
    summary: 'Confirm a sandbox payment: its webhook follows',
    errors: ['payment_not_found'],
  },
  'GET /sandbox/payments/{id}': { id: 'getSandboxPayment', summary: 'A sandbox payment', errors: ['payment_not_found'] },
  'GET /sandbox/mail': { id: 'listSandboxMail', summary: 'What the sandbox mailed an address, newest first' },
};
