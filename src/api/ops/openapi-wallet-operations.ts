// The wallet page's and the console's operations, and the sandbox provider's, for the OpenAPI document: the
// second half of ops/openapi-operations.ts's table, in a file of its own to keep each under the length files keep.
import { WALLET_LOGIN_INTENT } from '../../contract/claims.js';
import { BYTES, HTML, EVENTS, SEE_OTHER, query, LAST_EVENT_ID, FORM, type OperationDoc, RUN_EVENTS } from './openapi-operation-parts.js';

export const WALLET_OPERATIONS: Record<string, OperationDoc> = {
  // The wallet page and the console (docs/api.md "Wallet page", "Console"): HTML for a browser.
  'GET /wallet': {
    id: 'openWallet',
    summary: 'The wallet: on to its sign-in page',
    credential: 'none',
    answers: { 303: SEE_OTHER('To the sign-in page') },
  },
  'GET /wallet/login': {
    id: 'showWalletLogin',
    summary: "The wallet page; with a sign-in link's token, the sign-in",
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
  // A sign-in link followed from another page (docs/api.md "GET {wallet_url}/login"): asked before it signs in.
  'GET /wallet/sign-in': {
    id: 'showWalletSignInConfirmation',
    summary: 'Ask "Continue as <address>?" for a sign-in link followed from another page',
    credential: 'console-session-optional',
    answers: { 200: HTML('The question, with the form that signs in'), 303: SEE_OTHER('No sign-in waiting: on to the sign-in page') },
  },
  'POST /wallet/sign-in': {
    id: 'confirmWalletSignIn',
    summary: "Sign in with the link that was asked about, from the wallet's own page",
    credential: 'console-session-optional',
    errors: ['forbidden'],
    body: FORM('form_token: the token of the page that asked; replace: the address of the session it replaces'),
    answers: { 200: HTML('Asked again: the browser holds a session for another account'), 303: SEE_OTHER('Signed in: on to the wallet') },
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
  'GET /wallet/nodes/{node_id}/remove': {
    id: 'showConsoleNodeRemoval',
    summary: "The page that says what a node's removal does, before it",
    errors: ['not_found'],
  },
  'POST /wallet/nodes/{node_id}/remove': {
    id: 'removeConsoleNode',
    summary: 'Remove a node from the console, after a recent sign-in',
    errors: ['not_found', 'step_up_required'],
    answers: { 303: SEE_OTHER('On to the nodes page') },
  },
  'POST /wallet/nodes/{node_id}/drain': {
    id: 'drainConsoleNode',
    summary: 'Drain a node from the console: it takes no new run until resumed',
    errors: ['not_found'],
    answers: { 303: SEE_OTHER('On to the nodes page') },
  },
  'POST /wallet/nodes/{node_id}/resume': {
    id: 'resumeConsoleNode',
    summary: 'Resume a drained node from the console',
    errors: ['not_found'],
    answers: { 303: SEE_OTHER('On to the nodes page') },
  },
  'GET /wallet/runs': {
    id: 'showConsoleRuns',
    summary: "The console's runs page",
    parameters: [
      ...['agent_id', 'status', 'node_id', 'cursor'].map((name) => query(name, `As GET /v1/swarm/runs takes it; empty: none`)),
      query('since', 'The first UTC day (YYYY-MM-DD), or an ISO time'),
      query('until', 'The last UTC day (YYYY-MM-DD), included, or an ISO time'),
      query('q', 'A run id (opens it), a status, or words of an agent id or name'),
      query('refresh', 'off: the page does not reload itself while runs are in flight'),
    ],
  },
  'GET /wallet/runs/{run_id}': { id: 'showConsoleRun', summary: "The console's page of a run", errors: ['run_not_found'] },
  'GET /wallet/runs/{run_id}/log-events': {
    id: 'followConsoleRunLog',
    summary: "A run's log followed live, for the session's cookie",
    errors: ['run_not_found'],
    parameters: [query('after', 'The seq to follow from (-1: the first)'), LAST_EVENT_ID],
    answers: { 200: EVENTS('The entries as Server-Sent Events until the run ends') },
  },
  'GET /wallet/runs/{run_id}/run-events': {
    id: 'followConsoleRunEvents',
    summary: "A run's structured events followed live, for the session's cookie",
    errors: ['run_not_found'],
    parameters: [query('after', 'The seq to follow from (-1: the first)'), LAST_EVENT_ID],
    answers: { 200: EVENTS('The events as Server-Sent Events until the run ends', RUN_EVENTS) },
  },
  'GET /wallet/runs/{run_id}/artifacts/{name}': {
    id: 'downloadConsoleRunArtifact',
    summary: "Download a run's artifact from the console",
    errors: ['run_not_found'],
    answers: { 200: { description: 'The bytes, as an attachment', content: { '*/*': { schema: BYTES } } } },
  },
  'GET /wallet/runs/{run_id}/rerun': {
    id: 'showConsoleRerun',
    summary: "The page naming a re-run's price, before it",
    errors: ['run_not_found'],
  },
  'POST /wallet/runs/{run_id}/rerun': {
    id: 'rerunConsoleRun',
    summary: 'A new billed run of the same agent and input, from the console',
    errors: ['run_not_found', 'insufficient_balance', 'budget_exceeded', 'input_invalid', 'no_node_available'],
    body: FORM('idempotency_key'),
    answers: { 303: SEE_OTHER("On to the new run's page") },
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
  'GET /wallet/schedules': { id: 'showConsoleSchedules', summary: "The console's schedules: next runs in their zone and the browser's" },
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
