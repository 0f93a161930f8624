// Where a command's words go: the result to stdout (one JSON document under --json), progress,
// warnings and errors for people to stderr; colour only when wanted, decided for each stream on its own (a piped
// result gets none while the terminal's lines keep theirs); a spinner only on a TTY and never under --json. What a
// person reads never carries a control character it did not put there itself: the data a human rendering gets and
// every line are escaped here, once (src/lib/terminal-text.ts), so an agent's summary, its stderr in an error or a
// file name it made cannot clear the screen, retitle the window or write the clipboard. JSON is left to JSON.
import type { ChalkInstance } from 'chalk';
import type { SvcError } from '../contract/errors.js';
import { escapeControlCharacters, escapeControlCharactersIn } from '../lib/terminal-text.js';
import type { Spinner } from './spinner.js';

// chalk is loaded before the first action runs (loadStyles, from main.ts), not at start: its colour detection pulls
// in node:tty and node:os, a cost that `--help` and `--version` need not pay (docs/architecture.md "Build").
let chalkModule: typeof import('chalk') | undefined;

export async function loadStyles(): Promise<void> {
  chalkModule ??= await import('chalk');
}

/** Before loadStyles (never inside a command's action): the text as it is, whatever style is asked for. */
const unstyled: ChalkInstance = new Proxy(() => undefined, {
  apply: (_target, _this, args: unknown[]) => args.join(' '),
  get: (_target, key) => (key === 'level' ? 0 : unstyled),
}) as unknown as ChalkInstance;

export interface OutputOptions {
  json: boolean;
  color: boolean;
  stdout?: NodeJS.WriteStream;
  stderr?: NodeJS.WriteStream;
  env?: NodeJS.ProcessEnv;
  /**
   * Makes each swarm-node command in a text act on the node and service in force when typed (invocation.ts);
   * applied to remedies and "Next:" lines. Absent: the text as written.
   */
  carry?: (text: string) => string;
}

/**
 * The colour level for one stream: NO_COLOR, --no-color and TERM=dumb turn colour off, FORCE_COLOR turns it on,
 * otherwise the stream gets colour when it is a terminal.
 */
function colorLevel(stream: NodeJS.WriteStream, options: { color: boolean; env: NodeJS.ProcessEnv }): 0 | 1 {
  const { env } = options;
  if ((env.NO_COLOR !== undefined && env.NO_COLOR !== '') || !options.color || env.TERM === 'dumb') return 0;
  const forced = env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  return forced || stream.isTTY ? 1 : 0;
}

export class Output {
  readonly json: boolean;
  /** Styles the result, on stdout. */
  readonly #resultStyle: ChalkInstance;
  /** Styles people's lines, on stderr. */
  readonly #lineStyle: ChalkInstance;
  readonly #stdout: NodeJS.WriteStream;
  readonly #stderr: NodeJS.WriteStream;
  readonly #interactive: boolean;
  readonly #carry: (text: string) => string;
  #spinner: Spinner | undefined;
  /** A result was written: under --json an error after it (an exit code that judges the result) goes to stderr. */
  #resulted = false;

  constructor(options: OutputOptions) {
    const env = options.env ?? process.env;
    this.json = options.json;
    this.#stdout = options.stdout ?? process.stdout;
    this.#stderr = options.stderr ?? process.stderr;
    const styleFor = (stream: NodeJS.WriteStream): ChalkInstance =>
      chalkModule === undefined ? unstyled : new chalkModule.Chalk({ level: colorLevel(stream, { color: options.color, env }) });
    this.#resultStyle = styleFor(this.#stdout);
    this.#lineStyle = styleFor(this.#stderr);
    // A terminal that can move its cursor, and not a CI job's log (CI set at all, as is-interactive decides).
    this.#interactive = Boolean(this.#stderr.isTTY) && !this.json && env.CI === undefined && env.TERM !== 'dumb';
    this.#carry = options.carry ?? ((text) => text);
  }

  /** `text` with its swarm-node commands acting on the node and service in force (for remedies in results: doctor's fixes, the wizard's next steps). */
  commands(text: string): string {
    return this.#carry(text);
  }

  /** The command's result: JSON on stdout under --json, else the human rendering on stdout. */
  result<T>(data: T, human: (data: T, style: ChalkInstance) => string): void {
    this.stopSpinner();
    this.#resulted = true;
    if (this.json) this.#stdout.write(`${JSON.stringify(data, null, 2)}\n`);
    else {
      // The data is escaped before it is styled: the styles are ours, the strings inside the data are not.
      const text = human(escapeControlCharactersIn(data), this.#resultStyle);
      if (text !== '') this.#stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    }
  }

  /**
   * One piece of a result that comes a piece at a time (a followed log): a JSON document on its own line under
   * --json (JSON Lines), else its human line on stdout, escaped as result() escapes.
   */
  resultLine<T>(data: T, human: (data: T, style: ChalkInstance) => string): void {
    this.stopSpinner();
    if (this.json) this.#stdout.write(`${JSON.stringify(data)}\n`);
    else this.#stdout.write(`${human(escapeControlCharactersIn(data), this.#resultStyle)}\n`);
  }

  /** A line for people: progress, the next step. Always stderr, so it never mixes into a piped result. */
  info(line: string): void {
    this.#line(escapeControlCharacters(line));
  }

  /** The next step, a command: as info, with the options in force carried into its swarm-node commands. */
  next(line: string): void {
    this.info(this.#carry(line));
  }

  warn(line: string): void {
    this.#line(this.#lineStyle.yellow(`warning: ${escapeControlCharacters(line)}`));
  }

  success(line: string): void {
    this.#line(this.#lineStyle.green(escapeControlCharacters(line)));
  }

  /** Reports a failure: {"error": {...}} on stdout under --json (one document), a message and remedy on stderr otherwise. */
  error(error: SvcError): void {
    this.stopSpinner(false);
    // The result is already the one document on stdout (run --fail-on's answer, status's report, upgrade --check's
    // answer); the exit code is the verdict on it.
    if (this.json && this.#resulted) {
      this.#stderr.write(`${escapeControlCharacters(error.message)}\n`);
      return;
    }
    if (this.json) {
      const { code, message } = error;
      const remedy = error.remedy === undefined ? undefined : this.#carry(error.remedy);
      this.#stdout.write(`${JSON.stringify({ error: { code, message, ...(remedy ? { remedy } : {}), ...error.extensions } }, null, 2)}\n`);
      return;
    }
    this.#stderr.write(`${this.#lineStyle.red('error:')} ${escapeControlCharacters(error.message)}\n`);
    if (error.remedy) this.#stderr.write(`${this.#lineStyle.dim(escapeControlCharacters(this.#carry(error.remedy)))}\n`);
  }

  /** Runs `work` under a spinner on a TTY; elsewhere says what it is doing once, on stderr. */
  async spin<T>(text: string, work: (update: (text: string) => void) => Promise<T>): Promise<T> {
    if (!this.#interactive) {
      if (!this.json) this.#line(`${escapeControlCharacters(text)}…`);
      return work(() => undefined);
    }
    const { Spinner } = await import('./spinner.js');
    this.#spinner = new Spinner(this.#stderr, escapeControlCharacters(text), (frame) => this.#lineStyle.cyan(frame)).start();
    try {
      const value = await work((next) => {
        if (this.#spinner) this.#spinner.text = escapeControlCharacters(next);
      });
      this.stopSpinner(true);
      return value;
    } catch (error) {
      this.stopSpinner(false);
      throw error;
    }
  }

  stopSpinner(succeeded?: boolean): void {
    if (!this.#spinner) return;
    this.#spinner.stop(succeeded === undefined ? undefined : succeeded ? this.#lineStyle.green('✔') : this.#lineStyle.red('✖'));
    this.#spinner = undefined;
  }

  #line(text: string): void {
    // A line printed while a spinner runs goes above it; the spinner keeps spinning below.
    this.#spinner?.clear();
    this.#stderr.write(`${text}\n`);
    this.#spinner?.render();
  }
}
