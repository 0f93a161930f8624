// What the review flags in added lines besides secrets (./secrets.mjs) and the analyzers' findings: conflict markers,
// large binaries and to-do markers in comments (docs/sections/starter-agents.md).

/** Files git counts as binary at or above this size are flagged: 1 MiB. */
export const LARGE_BINARY_BYTES = 1024 * 1024;

/** Start, base (diff3) and end markers always count; "=======" alone also underlines Markdown, so only beside them. */
const CONFLICT_MARKER = /^(?:<{7}|\|{7}|>{7})(?: |$)/;
const CONFLICT_SEPARATOR = /^={7}$/;

export function conflictMarkerKind(line) {
  if (CONFLICT_MARKER.test(line)) return 'marker';
  if (CONFLICT_SEPARATOR.test(line)) return 'separator';
  return null;
}

/**
 * A to-do marker opening a comment (`// TODO`, `# FIXME:`, `/* TODO`, ` * TODO`, `<!-- TODO`, `-- TODO`, `% TODO` of
 * TeX, Erlang and MATLAB, `REM TODO` and `:: TODO` of batch files, `{{/* TODO` of Go templates): not code that holds
 * the word (`const TODO = …`, `'TODO'`), which a marker in a comment is the only sign of.
 */
export const TODO = /(?:^|\s|;)(?:\/\/+|#+|\/\*+|<!--|--|;+|%+|\{\{-?\s*\/\*+)\s*(TODO|FIXME)\b|^\s*\*+\s*(TODO|FIXME)\b|^\s*(?:@?[Rr][Ee][Mm]\s+|::\s*)(TODO|FIXME)\b/;

/** Shell scripts by name, or by a `#!` line naming a POSIX-family shell for an executable file with no extension. */
export const SHELL_EXTENSIONS = /\.(?:sh|bash|ksh|dash)$/;
export const SHELL_SHEBANG = /^#!\s*(?:\/usr)?\/bin\/(?:env\s+)?(?:sh|bash|dash|ksh)\b/;

/**
 * SQL made by formatting a string with values (`"SELECT … %s" % name`, `.format(`, an f-string, a template literal,
 * `+`, PHP's `.`, a format call such as Go's `fmt.Sprintf("SELECT … '%s'", name)`), the injection bandit's B608 looks for: bandit 1.6 (Debian 12's) no longer sees it on Python 3.8 and
 * later, so the review looks for it itself, in any language. A statement needs its second keyword (SELECT … FROM,
 * INSERT INTO, UPDATE … SET, DELETE FROM), so prose like "select a file" is not SQL.
 */
/** An SQL statement inside a literal quoted by `quote` (whose other quotes it may hold). */
const sqlIn = (quote) => String.raw`(?:SELECT\b[^${quote}]*?\bFROM|INSERT\s+INTO|UPDATE\b[^${quote}]*?\bSET|DELETE\s+FROM)\b[^${quote}]*`;
const SQL_FORMATTED = new RegExp(
  [
    // Then `%`, `.format(`, `+`, or PHP's `.` before a variable or call.
    ...['"', "'"].map((quote) => String.raw`${quote}\s*${sqlIn(quote)}${quote}\s*(?:%|\.format\(|\+|\.\s*[$\w(])`),
    // A format call: Go's fmt.Sprintf, Java's String.format, C's and PHP's sprintf, with the statement as the format.
    ...['"', "'"].map((quote) => String.raw`\b(?:Sprintf|sprintf|format|Format)\(\s*${quote}\s*${sqlIn(quote)}${quote}\s*,`),
    ...['"', "'"].map((quote) => String.raw`\bf${quote}\s*${sqlIn(quote)}\{`),
    // Not a tagged template (sql`…${x}`): a tag such as Kysely's or postgres.js's sends the values as parameters.
    String.raw`(?<![\w$.)\]])\x60\s*${sqlIn('\\x60')}\$\{`,
  ].join('|'),
  'i',
);
export const SQL_FILES = /\.(?:py|pyw|[cm]?js|jsx|[cm]?ts|tsx|rb|php|go|java|kt|cs)$/;

export function sqlBuiltFromStrings(text) {
  return SQL_FORMATTED.test(text);
}
