// The problem details every error of the service is answered with (docs/api.md "Conventions", "Error codes"), as a
// schema: the Problem of the OpenAPI document. Its `code` is every code of error-codes.ts that has an HTTP status,
// read from that table, so a code added there is in the document at once.
import { Type, type Static } from '@sinclair/typebox';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/** The codes the service answers with; the others (status null) only the client raises. */
export const SERVICE_ERROR_CODES: readonly ErrorCode[] = (Object.keys(ERROR_CODES) as ErrorCode[]).filter(
  (code) => ERROR_CODES[code].status !== null,
);

export const Problem = Type.Object(
  {
    type: Type.String({ description: 'urn:svc:problem:<code>' }),
    title: Type.String(),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    detail: Type.String(),
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: [...SERVICE_ERROR_CODES],
      description: 'The stable word to branch on (docs/api.md "Error codes")',
    }),
    remedy: Type.Optional(Type.String({ description: 'What the client can do about it' })),
    errors: Type.Optional(
      Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), { description: 'Each refused field of an invalid request' }),
    ),
  },
  // Codes add their own members (wallet_login_url, balance_cents, limit, …): docs/api.md "Error codes".
  { additionalProperties: true, description: 'RFC 9457 problem details' },
);
export type Problem = Static<typeof Problem>;
