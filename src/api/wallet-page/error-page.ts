// The wallet page's answer to an error: an HTML page that says what happened and what to do next, never a 5xx's
// internals.
import type { ErrorCode, SvcError } from '../../contract/errors.js';
import { errorPage } from './views.js';

const ERROR_TITLES: Partial<Record<ErrorCode, string>> = {
  unauthorized: 'Sign-in needed',
  forbidden: 'Not allowed',
  not_found: 'Page not found',
  invalid_request: 'This request cannot be used',
  payload_too_large: 'Form too large',
  unsupported_media_type: 'Unsupported form',
  rate_limited: 'Too many requests',
  service_unavailable: 'Try again shortly',
};

/** The whole page for `error`. */
export function errorPageOf(error: SvcError): string {
  const message =
    error.code === 'unsupported_media_type'
      ? 'Send the form from the wallet page (application/x-www-form-urlencoded).'
      : error.code === 'payload_too_large'
        ? 'The form is larger than the wallet page ever sends.'
        : error.status >= 500 && error.code !== 'service_unavailable'
          ? 'Something went wrong on our side. Try again in a moment.'
          : error.message;
  const title = ERROR_TITLES[error.code] ?? (error.status >= 500 ? 'Something went wrong' : 'This request cannot be used');
  return errorPage({ title, message, signInHelp: error.code === 'unauthorized' || error.code === 'invalid_request' });
}
