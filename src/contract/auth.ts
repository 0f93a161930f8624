// The sign-in's own endpoints, beside spec §4's issue-token and verify (docs/api.md "Sign-in: a verified inbox",
// "Revocation and sessions", "Audit"): what the client and the service share of them.
import { Type, type Static } from '@sinclair/typebox';
import { EMAIL_PATTERN } from './email.js';
import { PageLimit } from './page-limit.js';

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });
const strict = { additionalProperties: false } as const;

// POST /v1/auth/email-code
export const EmailCodeRequest = Type.Object({ email: Type.String({ pattern: EMAIL_PATTERN, maxLength: 254 }) }, strict);
export type EmailCodeRequest = Static<typeof EmailCodeRequest>;
export const EmailCodeResponse = Type.Object({
  /** Names the code for issue-token; the same answer whatever the address. */
  challenge_id: Type.String(),
  expires_at: Timestamp,
  /** How many tries the code takes before it is spent. */
  attempts: Type.Integer(),
});
export type EmailCodeResponse = Static<typeof EmailCodeResponse>;

// POST /v1/auth/logout
export const LogoutRequest = Type.Object({ everywhere: Type.Optional(Type.Boolean()) }, strict);
export type LogoutRequest = Static<typeof LogoutRequest>;
export const LogoutResponse = Type.Object({
  /** Tokens revoked by this call: 1 for this token, every live one of the user for everywhere. */
  revoked: Type.Integer(),
  everywhere: Type.Boolean(),
  /** The schedules this revocation paused (docs/api.md "Schedules"): those the revoked tokens made or last resumed. */
  schedules_paused: Type.Optional(Type.Array(Type.String())),
});
export type LogoutResponse = Static<typeof LogoutResponse>;

// GET /v1/audit
export const AUDIT_KINDS = [
  'sign_in',
  'tokens_revoked',
  'deploy_token_issued',
  'session_activated',
  'node_enrolled',
  'node_removed',
  'node_drained',
  'node_resumed',
  'credential_rotated',
  'agent_uploaded',
  'agent_current_changed',
  'agent_version_removed',
  'secret_changed',
  'webhook_changed',
  'budget_changed',
  'schedule_changed',
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

// A query string is text (the service never coerces types).
export const AuditQuery = Type.Object(
  {
    limit: PageLimit(200, 50),
    /** An event_id from a page before: the events older than it. */
    before: Type.Optional(Type.String({ pattern: '^[0-9a-f-]{36}$' })),
  },
  strict,
);
export type AuditQuery = Static<typeof AuditQuery>;
export const AuditEvent = Type.Object({
  event_id: Type.String(),
  kind: Type.String(),
  at: Timestamp,
  /** The client address the request came from, as the service saw it. */
  client_address: Type.Union([Type.String(), Type.Null()]),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  detail: Type.Record(Type.String(), Type.Unknown()),
});
export type AuditEvent = Static<typeof AuditEvent>;
export const AuditResponse = Type.Object({ events: Type.Array(AuditEvent), next_before: Type.Union([Type.String(), Type.Null()]) });
export type AuditResponse = Static<typeof AuditResponse>;
