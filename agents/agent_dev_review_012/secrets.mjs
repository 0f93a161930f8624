// Credentials in the new version of a changed file, reported on the lines the change added. secretlint's
// recommended preset (maintained, vendored at build: vendor/secretlint.mjs) finds the formats it knows; the rules of
// ./secret-rules.mjs and ./secret-contexts.mjs add what it does not look for (docs/sections/starter-agents.md lists
// both). A finding never repeats the value: the excerpt shows the line with the value replaced.
import { lintSource, recommendedPreset } from './vendor/secretlint.mjs';
import { awsSecretsBesideTheirId, kubernetesSecretValues, xmlPropertyValues } from './secret-contexts.mjs';
import { EXTRA_RULES, namesSecret, SECRET_VARIABLE } from './secret-rules.mjs';

const PRESET_ID = '@secretlint/secretlint-rule-preset-recommend';
const SECRETLINT_CONFIG = {
  rules: [
    {
      id: PRESET_ID,
      rule: recommendedPreset,
      // Access key ids are looked for too: an id beside its secret is half of a credential, and alone it names the account.
      rules: [{ id: '@secretlint/secretlint-rule-aws', options: { enableIDScanRule: true } }],
    },
  ],
};

/** Values that are not credentials: placeholders, references to a variable, templates, masks, version ranges. */
const PLACEHOLDER = /^[~^<>=]*v?\d+(?:\.[\dx*]+)+(?:[-+][\w.]+)?$|^(?:x+|\*+|\.+|-+|changeme|change_?me|example|sample|test|password|secret|token|dummy|redacted|placeholder|none|null|undefined|true|false|your[-_a-z0-9]*|my[-_]?(?:password|secret|token)|[a-z]+_here)$|^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?$|^\{\{.*\}\}$|^\{\w*\}$|^[?]$|^[:@][A-Za-z_]+$|^\$\d+$|^<[^>]*>$|^%\(?\w+\)?s?$|^\$\(.*\)$/i;

/**
 * A value in a credential's format that is a mask or a documentation example: a character repeated 8 times in a row
 * (`sk_live_xxxxxxxx…`, `AKIAXXXXXXXXXXXXXXXX`, `T00000000`), which a random key all but never holds, or AWS's
 * documented examples' `EXAMPLE` (gitleaks lets both through too).
 */
const MASKED = /(.)\1{7}|EXAMPLE/;
/**
 * An ellipsis in a value elides it, as documentation and comments write one (`"PWD=…;UID=…"`, `sk-proj-...`): no key
 * holds one. A value that starts a template's field (`{os.environ['PW']}` of an f-string, `#{SmtpPassword}#` of a
 * deployment tool's substitution) is filled in elsewhere.
 */
const ELIDED = /…|\.\.\.|^\{|^#\{/;
const isPlaceholder = (value) => PLACEHOLDER.test(value) || MASKED.test(value) || ELIDED.test(value);

/**
 * Lower-case words joined by "-" or "_" (a tool's name, a slug): what a generic rule's literal is when it names
 * something rather than holds a credential (`{ secret: 'dev-review' }`, a map of kinds to tools).
 */
const NAME_SHAPE = /^[a-z]+(?:[-_][a-z]+)*$/;


/**
 * Tests and their fixtures: there a literal assigned to `password` is a fixture, so only the formats of real
 * credentials are looked for, never the generic rules (a real key pasted into a test is still found by its format).
 */
const TEST_PATH = /(?:^|\/)(?:tests?|spec|__tests__|fixtures?|testdata)\/|\.(?:test|spec)\.[\w]+$|(?:^|\/)test_[\w]+\.py$/;
/** Lock files hold integrity hashes and registry URLs, and no credential a person wrote (gitleaks skips them too). */
const LOCK_FILE = /(?:^|\/)(?:package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml|Cargo\.lock|poetry\.lock|Pipfile\.lock|composer\.lock|Gemfile\.lock|go\.sum)$/;
/** A connection string to the host's own loopback is a local database's, a development or test setup's. */
const LOOPBACK_URL = /^[a-z][a-z0-9+.-]*:\/\/[^@/\s]*@(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|0\.0\.0\.0)(?:[:/]|$)/i;
const URL_RULES = new Set(['database-connection-string', 'basicauth']);

/**
 * `NAME=value` in a dotenv file (`.env`, `.env.production`, `prod.env`): the value needs no quotes there, so an
 * unquoted one counts when the name says it is secret.
 */
const DOTENV_FILE = /(?:^|\/)(?:\.env(?:\.[\w.-]+)?|[\w.-]+\.env)$/;
const DOTENV_SECRET = new RegExp(String.raw`^\s*(?:export\s+)?([A-Za-z0-9_]*${SECRET_VARIABLE.source}[A-Za-z0-9_]*)\s*=\s*["']?([^\s"'#]+)`, 'i');

const lineStarts = (text) => {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
};

function lineOf(starts, offset) {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (starts[middle] <= offset) low = middle;
    else high = middle - 1;
  }
  return low + 1;
}

/** The line with [start, end) (offsets into the file) replaced by "[redacted]", at most 160 characters. */
function redactedLine(text, starts, line, start, end) {
  const lineStart = starts[line - 1];
  const lineEnd = line < starts.length ? starts[line] - 1 : text.length;
  const raw = text.slice(lineStart, lineEnd);
  const from = Math.max(0, start - lineStart);
  const to = Math.min(raw.length, end - lineStart);
  const shown = `${raw.slice(0, from)}[redacted]${raw.slice(to)}`.trim();
  return shown.length > 160 ? `${shown.slice(0, 157)}...` : shown;
}

function ruleName(message) {
  const short = message.ruleId.replace(/^@secretlint\/secretlint-rule-/, '');
  return `${short}/${message.messageId}`;
}

/**
 * The value a secret finding found, under a key JSON never writes: the review takes it out of everything it prints
 * (./redact.mjs), and a finding serialized carries only its redacted excerpt.
 */
export const SECRET_VALUE = Symbol('secret value');

/**
 * The secrets of one file's new content on the lines `added` (a Set of line numbers), each
 * `{line, rule, message, excerpt, source}` and its value under SECRET_VALUE; a line reported by two rules is
 * reported once, by the first.
 */
export async function findSecrets(path, text, added) {
  if (LOCK_FILE.test(path)) return [];
  const inTest = TEST_PATH.test(path);
  const starts = lineStarts(text);
  const found = new Map();
  const add = (start, end, rule, message, source) => {
    const line = lineOf(starts, start);
    if (!added.has(line) || found.has(line)) return;
    found.set(line, { line, rule, message, excerpt: redactedLine(text, starts, line, start, end), source, [SECRET_VALUE]: text.slice(start, end) });
  };
  const result = await lintSource({
    source: { filePath: `/review/${path}`, content: text, contentType: 'text' },
    options: { config: SECRETLINT_CONFIG, maskSecrets: true, noPhysicFilePath: false },
  });
  for (const message of result.messages) {
    const short = message.ruleId.replace(/^@secretlint\/secretlint-rule-/, '');
    const matched = text.slice(message.range[0], message.range[1]);
    if (URL_RULES.has(short) ? LOOPBACK_URL.test(matched) : MASKED.test(matched)) continue;
    add(message.range[0], message.range[1], ruleName(message), message.message, 'secretlint');
  }
  for (const { rule, what, pattern, name, names = namesSecret, value, generic } of EXTRA_RULES) {
    if (generic && inTest) continue;
    for (const match of text.matchAll(pattern)) {
      const secret = [value].flat().map((group) => match[group]).find((found) => found !== undefined);
      if (name !== undefined && !names([name].flat().map((group) => match[group]).find((named) => named !== undefined))) continue;
      if (isPlaceholder(secret) || (generic && NAME_SHAPE.test(secret))) continue;
      const start = match.index + match[0].lastIndexOf(secret);
      add(start, start + secret.length, rule, `adds ${what}`, 'dev-review');
    }
  }
  if (!inTest) {
    const lines = text.split('\n');
    const report = (line, column, length, rule, what) => add(starts[line - 1] + column, starts[line - 1] + column + length, rule, `adds ${what}`, 'dev-review');
    awsSecretsBesideTheirId(lines, isPlaceholder, report);
    kubernetesSecretValues(text, lines, namesSecret, isPlaceholder, report);
    xmlPropertyValues(lines, namesSecret, isPlaceholder, report);
  }
  if (DOTENV_FILE.test(path) && !inTest) {
    for (const line of added) {
      const raw = text.slice(starts[line - 1], line < starts.length ? starts[line] - 1 : text.length);
      const match = DOTENV_SECRET.exec(raw);
      if (!match || isPlaceholder(match[2]) || match[2].length < 6) continue;
      const start = starts[line - 1] + raw.indexOf(match[2], raw.indexOf('=') + 1);
      add(start, start + match[2].length, 'dotenv-secret', `adds the value of ${match[1]} to a dotenv file`, 'dev-review');
    }
  }
  return [...found.values()].sort((a, b) => a.line - b.line);
}
