// The service speaks of its body fields ("Repeat session creation with the same user_id as the checkout e-mail",
// "/user_id: must match pattern …"); a person at a command line gave flags, not a body. A command that fills a
// body from its flags (swarm-node activate, svc-api sandbox) passes its errors through here, with its
// field-to-flag table, so they name what the person typed.
// Only the message and the remedy change: the code, the status and the problem's extensions (machine-readable,
// under --json) stay the service's.
import { SvcError, type ErrorCode } from '../contract/errors.js';

export interface FlagTerms {
  /** Body field → the flag that filled it, e.g. user_id → --email. */
  fields: Readonly<Record<string, string>>;
  /** The remedy to show instead of the service's, where its sentence names a step the CLI does not have. */
  remedies?: Readonly<Partial<Record<ErrorCode, string>>>;
}

export function inFlagTerms(error: unknown, terms: FlagTerms): unknown {
  if (!(error instanceof SvcError)) return error;
  const names = Object.keys(terms.fields);
  if (names.length === 0) return error;
  // A field as a word, or as a JSON pointer segment ("/user_id"): never inside a longer name.
  const field = new RegExp(`(?<![\\w-])/?(${names.join('|')})(?![\\w-])`, 'g');
  const say = (text: string): string => text.replace(field, (_match, name: string) => terms.fields[name]!);
  const remedy = terms.remedies?.[error.code] ?? (error.remedy === undefined ? undefined : say(error.remedy));
  return new SvcError(error.code, say(error.message), {
    status: error.status,
    extensions: error.extensions,
    ...(remedy === undefined ? {} : { remedy }),
    ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
    cause: error,
  });
}
