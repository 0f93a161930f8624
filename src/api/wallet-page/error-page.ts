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
  step_up_required: 'Recent sign-in needed',
  run_not_found: 'Page not found',
};

/** The whole page for `error`; `base` leads back to the wallet from the page's depth (relative-links.ts). */
export function errorPageOf(error: SvcError, base: string): string {
  const message =
    error.code === 'unsupported_media_type'
      ? 'Send the form from the wallet page (application/x-www-form-urlencoded).'
      : error.code === 'payload_too_large'
        ? 'The form is larger than the wallet page ever sends.'
        : error.status >= 500 && error.code !== 'service_unavailable'
          ? 'Something went wrong on our side. Try again in a moment.'
          : error.code === 'step_up_required' && error.remedy !== undefined
            ? `${error.message}. ${error.remedy}`
            : error.message;
  const title = ERROR_TITLES[error.code] ?? (error.status >= 500 ? 'Something went wrong' : 'This request cannot be used');
  return errorPage({ title, message, base, signInHelp: error.code === 'unauthorized' || error.code === 'invalid_request' });
}
