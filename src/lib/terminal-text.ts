// Text that others wrote (an agent's summary, its stderr, a file name it made), made safe to print on a terminal
// (docs/operations.md "Terminal output"). A terminal obeys control characters: ESC starts sequences that clear the
// screen, set the window title or write the clipboard (OSC 52), CR and BS overwrite what was printed, and the C1
// range (U+0080-U+009F, CSI among them) does the same on terminals that honour it; bidirectional controls reorder
// what is shown. Each is written as a visible \uXXXX escape instead, the form JSON uses, so the reader sees that
// something was there and what. Newline and tab stay: a summary may have lines and columns.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** A character as the visible escape JSON writes for it. */
const visible = (char: string): string => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL, visible);
}

/**
 * A name that others chose (an artifact's file name), which stands inside one line of ours: newline and tab are
 * escaped too, or a name could end our line and print one of its own that reads as ours.
 */
export function escapeName(name: string): string {
  return escapeControlCharacters(name).replace(/[\n\t]/g, visible);
}

/** Every string inside a JSON-like value, escaped; the shape (objects, arrays, numbers) stays as it is. */
export function escapeControlCharactersIn<T>(value: T): T {
  if (typeof value === 'string') return escapeControlCharacters(value) as T;
  if (Array.isArray(value)) return value.map((item) => escapeControlCharactersIn(item)) as T;
  if (value !== null && typeof value === 'object' && isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [escapeControlCharacters(key), escapeControlCharactersIn(item)]),
    ) as T;
  }
  return value;
}

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}
