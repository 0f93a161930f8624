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
 * What opens a comment a to-do marker may follow, after the start of the line or a space: the comment syntaxes of
 * leasot's table of languages (a maintained to-do finder; media/supported-languages.md), since the review judges a
 * line without its file's language (a marker in a comment is the only sign that it is one), and those of languages
 * it lacks (batch files, Go templates, Visual Basic, OCaml, Jinja, Haskell, Fortran, Razor).
 */
const COMMENT_OPENERS = [
  String.raw`\/\/+-?`, // C family, JavaScript, Go, Rust…; Pug's //-
  String.raw`\{?\/\*+`, // block comments; JSX's and MDX's {/*
  String.raw`-?#+`, // shell, Python, Ruby, YAML, Perl, R, Elixir…; Haml's -#
  String.raw`;+`, // Lisp, Clojure, INI files, assembly
  String.raw`%+`, // TeX, Erlang, MATLAB
  String.raw`--`, // SQL, Lua, Haskell, Ada
  String.raw`<!--`, // HTML, XML, Markdown, Vue, Svelte
  String.raw`<%(?:#|--)`, // EJS's and ERB's <%#, SilverStripe's and JSP's <%--
  String.raw`\{\{!(?:--)?`, // Handlebars and Mustache
  String.raw`\{\{-?\s*\/\*+`, // Go templates
  String.raw`\{#-?`, // Twig, Nunjucks, Jinja
  String.raw`\(\*+`, // F#, OCaml, Pascal
  String.raw`\{-`, // Haskell's and Elm's block comments
  String.raw`@\*`, // Razor's @* … *@
];
/** Comments known only at the start of a line, where code would not start that way. */
const LINE_COMMENTS = [
  String.raw`\*+\s*`, // a block comment's continuation
  String.raw`@?[Rr][Ee][Mm]\s+`, // batch files' REM
  String.raw`::\s*`, // batch files' ::
  String.raw`'\s+`, // Visual Basic's ' (then a space: 'TODO' is a string)
  String.raw`(?:"""|''')\s*`, // a Python or Julia docstring
  String.raw`!+\s*`, // Fortran's ! (mid-line it is an operator: x != TODO)
];
const MARKER = String.raw`(TODO|FIXME)\b`;
const TODO_COMMENT = new RegExp(
  [
    String.raw`(?:^|\s|;)(?:${COMMENT_OPENERS.join('|')})\s*${MARKER}`,
    String.raw`^\s*(?:${LINE_COMMENTS.join('|')})${MARKER}`,
    // Pascal's { … }, the whole line, as leasot reads it: `{ TODO, DOING }` in code has more around it.
    String.raw`^\s*\{\s*${MARKER}[^{}]*\}\s*$`,
  ].join('|'),
);

/**
 * The to-do marker (TODO or FIXME) opening a comment on `line`, else null: not code that holds the word
 * (`const TODO = …`, `'TODO'`).
 */
export function todoMarker(line) {
  const match = TODO_COMMENT.exec(line);
  return match ? match.slice(1).find((marker) => marker !== undefined) : null;
}

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
    ...['"', "'"].map((quote) => String.raw`\b(?:Sprintf|sprintf|format|Format)!?\(\s*${quote}\s*${sqlIn(quote)}${quote}\s*,`),
    ...['"', "'"].map((quote) => String.raw`\bf${quote}\s*${sqlIn(quote)}\{`),
    // Not a tagged template (sql`…${x}`): a tag such as Kysely's or postgres.js's sends the values as parameters.
    String.raw`(?<![\w$.)\]])\x60\s*${sqlIn('\\x60')}\$\{`,
  ].join('|'),
  'i',
);
export const SQL_FILES = /\.(?:py|pyw|[cm]?js|jsx|[cm]?ts|tsx|rb|php|go|java|kt|cs|rs)$/;

/** A double-quoted literal (or Kotlin's """) opening with an SQL statement, up to where `value` puts a value in it. */
const interpolatedSql = (opening, value) =>
  String.raw`${opening}(?:"")?(?=\s*(?:SELECT\b[^"]*?\bFROM|INSERT\s+INTO|UPDATE\b[^"]*?\bSET|DELETE\s+FROM)\b)[^"]*${value}`;
/**
 * SQL with values interpolated into the string, in the languages of SQL_FILES whose strings interpolate (Python's
 * f-strings and JavaScript's templates are above): Ruby's "…#{x}", PHP's and Kotlin's "…$x" and "…${x}" (not
 * PostgreSQL's $1), C#'s $"…{x}". And in Ruby, a string with #{…} handed to one of the ActiveRecord methods that
 * take SQL (`where("name = '#{name}'")`, with or without a receiver), as Brakeman's SQL check lists them
 * (lib/brakeman/checks/check_sql.rb).
 */
const ACTIVE_RECORD_SQL = [
  ...['where', 'rewhere', 'not', 'having', 'group', 'order', 'reorder', 'joins', 'from', 'lock', 'select', 'reselect', 'pluck'],
  ...['find_by', 'find_by!', 'find_or_create_by', 'find_or_create_by!', 'find_or_initialize_by', 'find_by_sql', 'count_by_sql'],
  ...['exists?', 'calculate', 'average', 'count', 'maximum', 'minimum', 'sum'],
  ...['delete_all', 'destroy_all', 'delete_by', 'destroy_by', 'update_all'],
  ...['execute', 'exec_query', 'select_all', 'select_one', 'select_rows', 'select_value', 'select_values'],
];
const ACTIVE_RECORD_CALL = ACTIVE_RECORD_SQL.map((name) => name.replace(/[?!]/g, '\\$&')).join('|');
const SQL_INTERPOLATED = [
  [/\.rb$/, new RegExp(interpolatedSql('"', '#\\{'), 'i')],
  [/\.rb$/, new RegExp(String.raw`(?<![\w@$:])(?:${ACTIVE_RECORD_CALL})(?![\w?!])\s*\(?\s*"[^"]*#\{`)],
  [/\.(?:php|kt)$/, new RegExp(interpolatedSql('"', String.raw`(?:\$\{|\{\$|\$[A-Za-z_])`), 'i')],
  [/\.cs$/, new RegExp(interpolatedSql(String.raw`(?:\$@?|@\$)"`, String.raw`\{(?!\{)`), 'i')],
];

/** Whether the line `text` of the file at `path` builds an SQL statement from strings. */
export function sqlBuiltFromStrings(text, path) {
  return SQL_FORMATTED.test(text) || SQL_INTERPOLATED.some(([files, pattern]) => files.test(path) && pattern.test(text));
}
