// A one-line spinner on stderr, in place of ora. ora clears what it drew by moving the cursor up
// one line per `ceil(width / columns)`: a terminal reporting 0 columns (serial consoles, `script`) made that
// Infinity, and `swarm-node run` looped writing ESC[1A ESC[0K at full CPU after charging the run, deaf to Ctrl+C
// (its stdin discarder had put the terminal in raw mode) and to SIGTERM; 1 column wiped 30 lines of the screen.
// This one never leaves its line: `\r`, the frame and the text cut to the width, then erase-to-end-of-line. It
// never reads stdin, so Ctrl+C stays the terminal's SIGINT, and its timer is unref'd, so it never keeps the
// process alive.

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FRAME_MS = 80;
/** What a terminal that reports no width (0, or none) is taken to have. */
const UNKNOWN_WIDTH = 80;
/** Narrower terminals still get a readable start of the text; the line wraps there, and is never counted. */
const MIN_WIDTH = 20;
const CLEAR_LINE = '\r\u001b[K';
const HIDE_CURSOR = '\u001b[?25l';
const SHOW_CURSOR = '\u001b[?25h';

export class Spinner {
  readonly #stream: NodeJS.WriteStream;
  readonly #paintFrame: (frame: string) => string;
  #text: string;
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;
  // A process that ends while the spinner runs (an uncaught error, an exit from main.ts) gets its cursor back.
  readonly #restoreCursor = (): void => void this.#stream.write(SHOW_CURSOR);

  /** `paintFrame` colours a frame, or leaves it as it is where the stream gets no colour. */
  constructor(stream: NodeJS.WriteStream, text: string, paintFrame: (frame: string) => string) {
    this.#stream = stream;
    this.#text = text;
    this.#paintFrame = paintFrame;
  }

  start(): this {
    if (this.#timer !== undefined) return this;
    this.#stream.write(HIDE_CURSOR);
    process.once('exit', this.#restoreCursor);
    this.render();
    this.#timer = setInterval(() => {
      this.#frame = (this.#frame + 1) % FRAMES.length;
      this.render();
    }, FRAME_MS).unref();
    return this;
  }

  set text(text: string) {
    this.#text = text;
    if (this.#timer !== undefined) this.render();
  }

  get text(): string {
    return this.#text;
  }

  /** Draws the current frame and text over the spinner's line. */
  render(): void {
    this.#stream.write(`\r${this.#paintFrame(FRAMES[this.#frame]!)} ${fit(this.#text, this.#width() - 3)}\u001b[K`);
  }

  /** Empties the spinner's line, so a line for people can be written there. */
  clear(): void {
    this.#stream.write(CLEAR_LINE);
  }

  /** Stops; with a symbol, the text stays on its line after it (in full: nothing is redrawn over it). */
  stop(symbol?: string): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    process.off('exit', this.#restoreCursor);
    this.#stream.write(`${CLEAR_LINE}${symbol === undefined ? '' : `${symbol} ${this.#text}\n`}${SHOW_CURSOR}`);
  }

  #width(): number {
    const columns = this.#stream.columns;
    return columns === undefined || !Number.isFinite(columns) || columns <= 0 ? UNKNOWN_WIDTH : Math.max(MIN_WIDTH, columns);
  }
}

/** At most `width` characters (code points: the spinner's texts are ids, amounts and words), `…` when cut. */
function fit(text: string, width: number): string {
  const characters = [...text.replace(/\s+/g, ' ')];
  return characters.length <= width ? characters.join('') : `${characters.slice(0, width - 1).join('')}…`;
}
