// An agent's stdout and stderr as lines (docs/api.md "Run logs"): the bytes of each stream, as they come, become
// lines of text. UTF-8 split across chunks is joined; bytes that are not UTF-8 become U+FFFD, and so does NUL, which
// PostgreSQL's text cannot hold. A line longer than MAX_LOG_LINE_CHARS is cut there with a mark and the rest of it
// is dropped, so a stream without newlines costs at most one line of memory. A trailing CR (CRLF) is part of the
// line's end; every other control character stays in the text, escaped only where it is shown.
import { StringDecoder } from 'node:string_decoder';
import { LOG_LINE_CUT_MARK, MAX_LOG_LINE_CHARS } from '../../contract/run-log-limits.js';

export type OutputStream = 'stdout' | 'stderr';

/** One stream's bytes into lines: `line` gets each as it completes (or is cut). */
export class LineAssembler {
  readonly #decoder = new StringDecoder('utf8');
  readonly #line: (text: string) => void;
  #partial = '';
  /** The current line was cut: what comes until its newline is dropped. */
  #cutting = false;

  constructor(line: (text: string) => void) {
    this.#line = line;
  }

  write(chunk: Buffer): void {
    this.#take(this.#decoder.write(chunk));
  }

  /** The stream ended: a last line without a newline is a line too. */
  end(): void {
    this.#take(this.#decoder.end());
    if (this.#partial !== '' && !this.#cutting) this.#line(cleanLine(this.#partial));
    this.#partial = '';
    this.#cutting = false;
  }

  #take(text: string): void {
    let from = 0;
    while (from < text.length) {
      const newline = text.indexOf('\n', from);
      const piece = text.slice(from, newline < 0 ? text.length : newline);
      if (!this.#cutting) {
        this.#partial += piece;
        if (this.#partial.length > MAX_LOG_LINE_CHARS) {
          this.#line(`${cleanLine(cutAt(this.#partial, MAX_LOG_LINE_CHARS))}${LOG_LINE_CUT_MARK}`);
          this.#partial = '';
          this.#cutting = true;
        }
      }
      if (newline < 0) return;
      if (!this.#cutting) this.#line(cleanLine(this.#partial));
      this.#partial = '';
      this.#cutting = false;
      from = newline + 1;
    }
  }
}

/** The text as stored: without the CR of a CRLF, NUL as U+FFFD, no lone surrogate (text made from valid UTF-8 has none). */
function cleanLine(text: string): string {
  return (text.endsWith('\r') ? text.slice(0, -1) : text).replaceAll('\u0000', '\uFFFD');
}

/** The first `chars` UTF-16 units, not splitting a surrogate pair. */
function cutAt(text: string, chars: number): string {
  const code = text.charCodeAt(chars - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? chars - 1 : chars);
}
