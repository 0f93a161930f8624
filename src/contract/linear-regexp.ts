// The regular expressions of an agent's input_schema (`pattern`, `patternProperties`; docs/api.md "Agent upload")
// run on RE2's engine (re2js, pure JavaScript), never on V8's backtracking RegExp: RE2 matches in time linear in the
// input, so `^(a+)+$` against `aaaa…!` costs microseconds instead of freezing the service for seconds. RE2 refuses
// what it cannot run in linear time (lookaround, backreferences), and such a schema is refused at upload.
import { RE2JS } from 're2js';

/** What Ajv's `code.regExp` option asks for: a function from (pattern, flags) to an object with `test`. */
export interface LinearRegExpEngine {
  (pattern: string, flags: string): LinearRegExp;
  /** Ajv writes this into standalone code; never used here (schemas are compiled in the process). */
  code: string;
}

export interface LinearRegExp {
  test(text: string): boolean;
  /** Ajv caches compiled patterns by this string: it must tell two patterns apart. */
  toString(): string;
}

/** A pattern RE2 cannot run (ECMAScript lookaround, a backreference, a syntax error): its schema is refused. */
export class PatternRefused extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(
      `${JSON.stringify(pattern)} is not a regular expression RE2 runs in linear time (${reason.replace(/^error parsing regexp: /, '')})`,
    );
  }
}

export class LinearPattern implements LinearRegExp {
  #compiled: RE2JS | undefined;
  #used = false;
  readonly #translated: string;

  constructor(readonly source: string) {
    // ECMAScript spellings RE2 writes otherwise (\u{…}, (?<name>…), an escaped /) are translated; what remains
    // unknown to RE2 throws here, at compile time: a schema RE2 cannot run is refused at upload.
    try {
      this.#translated = RE2JS.translateRegExp(source);
      this.#compiled = RE2JS.compile(this.#translated);
    } catch (error) {
      throw new PatternRefused(source, (error as Error).message);
    }
  }

  test(text: string): boolean {
    this.#compiled ??= RE2JS.compile(this.#translated);
    this.#used = true;
    return this.#compiled.test(text);
  }

  /**
   * Drops what matching built. RE2's lazy DFA keeps the states it met, up to 8 MB a pattern: kept across checks, an
   * uploaded schema of a thousand patterns, cached for its digest, could make the service hold gigabytes, one check
   * at a time. Released, the next check starts from the pattern alone (tens of microseconds to compile again).
   */
  release(): void {
    if (!this.#used) return;
    this.#compiled = undefined;
    this.#used = false;
  }

  toString(): string {
    return `re2:${this.source}`;
  }
}

/** For Ajv's `code: { regExp }`: each pattern of the schema compiled becomes an RE2 pattern, listed in `made`. */
export function linearRegExpEngine(made: LinearPattern[]): LinearRegExpEngine {
  return Object.assign(
    (pattern: string): LinearRegExp => {
      const compiled = new LinearPattern(pattern);
      made.push(compiled);
      return compiled;
    },
    { code: 're2js' },
  );
}
