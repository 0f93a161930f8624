// E-mail identity (spec §5.6: the checkout e-mail is the user). No dependencies: the CLI's command definitions
// import it, and they load on every start, --help included.

/**
 * An e-mail address a client gives (checkout e-mail, session user_id, execute user_id): ASCII only, an
 * internationalised domain in its xn-- form. Unicode look-alikes (the Kelvin sign K, a Cyrillic а) can then never
 * fold into another person's address (see normalizeEmail).
 */
export const EMAIL_PATTERN =
  "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

/**
 * E-mail addresses are compared without regard to the case of ASCII letters, so the checkout e-mail and the
 * session's user_id resolve to one user however the client typed them (spec §5.6). Only A-Z fold: String's
 * toLowerCase would fold the Kelvin sign (U+212A) into "k" and let a payment made as "\u212Aate@victim.com" stand
 * for kate@victim.com.
 */
export function normalizeEmail(email: string): string {
  return email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

const emailAddress = new RegExp(EMAIL_PATTERN);

/** Whether a client may use this address (the service has the last word; the CLI checks it before sending). */
export function isEmailAddress(text: string): boolean {
  return text.length <= 254 && emailAddress.test(text);
}
