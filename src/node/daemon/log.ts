// The daemon's log (docs/operations.md "Logs"): one logfmt line per event on stdout, for journald. No colours, no
// spinners, no multi-line values; `event` is the stable machine word, the other keys are its facts:
//   ts=2025-05-01T12:00:00.000Z level=info event=run_succeeded agent=agent_ops_monitor_004 charged_cents=4 …
// A value that is not a bare word is written as a JSON string. Secrets never reach a line: no caller passes one,
// and the known ones (the JWT in use) are masked here as a second line of defence.
import type { Clock } from '../../lib/clock.js';
import { escapeControlCharacters } from '../../lib/terminal-text.js';

export type LogLevel = 'info' | 'warn' | 'error';
export type LogValue = string | number | boolean | null | undefined;
export type LogFields = Record<string, LogValue>;

const BARE_VALUE = /^[A-Za-z0-9_.:/@+-]+$/;
const REDACTED = '[redacted]';

export class DaemonLog {
  readonly #write: (line: string) => void;
  readonly #clock: Clock;
  readonly #secrets = new Set<string>();

  readonly #listener: ((event: string, fields: LogFields) => void) | undefined;

  /** `listener` hears every event as it is logged (the health endpoint counts runs from them). */
  constructor(write: (line: string) => void, clock: Clock, listener?: (event: string, fields: LogFields) => void) {
    this.#write = write;
    this.#clock = clock;
    this.#listener = listener;
  }

  /** Masks `secret` wherever it would appear in a later line. */
  mask(secret: string): void {
    if (secret.length >= 8) this.#secrets.add(secret);
  }

  info(event: string, fields: LogFields = {}): void {
    this.#line('info', event, fields);
  }

  warn(event: string, fields: LogFields = {}): void {
    this.#line('warn', event, fields);
  }

  error(event: string, fields: LogFields = {}): void {
    this.#line('error', event, fields);
  }

  #line(level: LogLevel, event: string, fields: LogFields): void {
    let line = `ts=${new Date(this.#clock.now()).toISOString()} level=${level} event=${event}`;
    for (const [key, value] of Object.entries(fields)) {
      if (value === undefined || value === null) continue;
      line += ` ${key}=${formatValue(value)}`;
    }
    for (const secret of this.#secrets) line = line.replaceAll(secret, REDACTED);
    this.#write(`${line}\n`);
    this.#listener?.(event, fields);
  }
}

function formatValue(value: string | number | boolean): string {
  if (typeof value !== 'string') return String(value);
  // JSON.stringify escapes quotes, backslashes and the C0 controls, so a value can never break the line; what it
  // leaves (DEL, C1, bidirectional controls) a terminal reading the log (journalctl, tail -f) would still obey, so
  // those are escaped too, in the same \uXXXX form (docs/operations.md "Terminal output").
  return BARE_VALUE.test(value) ? value : escapeControlCharacters(JSON.stringify(value));
}
