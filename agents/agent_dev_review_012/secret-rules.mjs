// The review's own rules for credentials secretlint's recommended preset does not look for (./secrets.mjs runs both):
// one regular expression each, the credential a capture group, and for the generic ones the name the value is
// given, which must say secret (namesSecret).

/** The words of a name: split at `_`, `-`, `.` and where a lower-case letter or digit meets a capital, lower-cased. */
const wordsOf = (name) => name.split(/[_.-]+|(?<=[a-z0-9])(?=[A-Z])/).filter(Boolean).map((word) => word.toLowerCase());
/** Words, or two words in a row, that say a value is secret. */
const SECRET_WORDS = new Set(['password', 'passwd', 'pwd', 'passphrase', 'secret', 'apikey', 'accesstoken', 'authtoken', 'privatekey']);
const SECRET_PAIRS = new Set(['api key', 'access token', 'auth token', 'private key']);
/** What may follow the secret word in its name: `aws_secret_key`, `secretAccessKey`, `password_value`. */
const SECRET_SUFFIX_WORDS = new Set(['key', 'access', 'token', 'value', 'string', 'text']);

/**
 * Whether a name says its value is secret: one of its words is one of those above, and any after it only say what
 * form the secret takes (`password`, `db_password`, `aws_secret_key`, `secretAccessKey`, `clientSecret`), not that the
 * value is about one (`secret_name`, `passwordHint`, `password_policy`, `secretary`).
 */
export function namesSecret(name) {
  const words = wordsOf(name);
  for (let i = 0; i < words.length; i++) {
    const pair = i + 1 < words.length && SECRET_PAIRS.has(`${words[i]} ${words[i + 1]}`);
    if (!pair && !SECRET_WORDS.has(words[i])) continue;
    if (words.slice(i + (pair ? 2 : 1)).every((word) => SECRET_SUFFIX_WORDS.has(word))) return true;
  }
  return false;
}

/** What a setter's or a builder's name may start with before the name of what it sets. */
const SETTER_WORDS = new Set(['set', 'with']);

/**
 * Whether a method's name says it takes a secret: `setPassword`, `setApiKey`, `withClientSecret`, or the builder's
 * bare `password`, `apiKey`; not a method that does something with one (`hashPassword`, `checkPassword`).
 */
function namesSecretSetter(name) {
  const words = wordsOf(name);
  if (SETTER_WORDS.has(words[0])) return words.length > 1 && namesSecret(words.slice(1).join('_'));
  return SECRET_WORDS.has(words.join('')) || SECRET_PAIRS.has(words.join(' '));
}

/** Formats the preset does not look for. `value` is the capture group holding the credential (or the groups, one of which does). */
export const EXTRA_RULES = [
  // Stripe's keys have 24 characters after the prefix (99 in today's longer form).
  { rule: 'stripe-secret-key', what: 'a Stripe secret or restricted key', pattern: /\b([sr]k_(?:live|test)_[0-9A-Za-z]{24,})(?![0-9A-Za-z])/g, value: 1 },
  // SendGrid's "SG.<22>.<43>" in base64url: the preset's rule allows one "-" or "_" in the last part, real keys more.
  { rule: 'sendgrid-api-key', what: 'a SendGrid API key', pattern: /\b(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/g, value: 1 },
  { rule: 'google-api-key', what: 'a Google API key', pattern: /\b(AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])/g, value: 1 },
  // A signed JWT: header and payload are base64url JSON objects ("eyJ" is `{"`), then a signature.
  { rule: 'jwt', what: 'a signed JSON Web Token', pattern: /\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,})/g, value: 1 },
  // Slack's webhooks of workflows and their triggers (the preset knows `/services/` only), as gitleaks' rule has them.
  { rule: 'slack-webhook', what: 'a Slack webhook URL', pattern: /(https:\/\/hooks\.slack\.com\/(?:workflows|triggers)\/T[A-Za-z0-9]+\/[A-Za-z0-9]+\/[A-Za-z0-9/]{16,})/g, value: 1 },
  // The password of a database's or broker's URL, also with a driver in its scheme (SQLAlchemy's
  // `postgresql+psycopg2://`, `mysql+pymysql://`), which the preset's rules do not read as theirs.
  {
    rule: 'connection-string-password',
    what: 'a connection string with a password',
    pattern: /\b(?:postgres(?:ql)?|mysql|mariadb|mssql|sqlserver|oracle|mongodb(?:\+srv)?|redis|rediss|amqps?)\+[a-z0-9_]+:\/\/[^:@/\s'"]+:([^@/\s'"]+)@(?!(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|0\.0\.0\.0)(?:[:/'"\s]|$))/gi,
    value: 1,
    generic: true,
  },
  // A PEM private key of any type, also where its line breaks are escapes (`"-----BEGIN EC PRIVATE KEY-----\nMHc…"`
  // in JSON, a string in code) or indented: the preset's rule wants it as a key file holds it.
  // Its body, not only the header a text may name, makes it a key.
  { rule: 'private-key', what: 'a private key', pattern: /(-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----(?:\\[rn]|\s)+[A-Za-z0-9+/]{40,}(?:\\[rn]|[A-Za-z0-9+/=\s])*(?:-----END \2-----)?)/g, value: 1 },
  // The password parameter of a connection string: JDBC's `?user=…&password=…`, SQL Server's and ODBC's
  // `;Password=…`, `;PWD=…`, also first in its string (`"PWD=…;UID=…"`).
  { rule: 'connection-parameter-password', what: 'a connection string with a password', pattern: /[?&;"'](?:password|pwd)=([^&;\s'"`]+)/gi, value: 1, generic: true },
  {
    // A credential handed by its name to a call: WordPress's `define('DB_PASSWORD', '…')`, `os.environ.setdefault(
    // "API_KEY", "…")`, `config.set('password', '…')`: a call's first argument a quoted name that says secret
    // (namesSecret), its second a quoted literal of 6 or more characters. Only a call's: a list of names
    // (`['SMTP_PASSWORD', 'OPENAI_API_KEY']`) holds no value.
    rule: 'password-argument',
    what: 'a hard-coded password or key',
    pattern: /[\w$]\s*\(\s*(["'])([A-Za-z_][\w.-]*)\1\s*,\s*(["'])([^"'\s]{6,})\3\s*[,)]/g,
    name: 2,
    value: 4,
    generic: true,
  },
  {
    // A setter or builder handed a literal: `ds.setPassword("…")`, `Stripe::setApiKey('…')`, `.password("…")`.
    rule: 'password-setter',
    what: 'a hard-coded password or key',
    pattern: /(?<![\w$])([A-Za-z_]\w*)\s*\(\s*(["'])([^"'\s]{6,})\2\s*\)/g,
    name: 1,
    names: namesSecretSetter,
    value: 3,
    generic: true,
  },
  {
    // `NAME=value` in one string, as putenv("DB_PASSWORD=…") or a list of a process's environment takes it.
    rule: 'password-in-environment-string',
    what: 'a hard-coded password or key',
    pattern: /(["'])([A-Za-z_][\w.]*)=([^"'\s]{6,})\1/g,
    name: 2,
    value: 3,
    generic: true,
  },
  {
    // An entry of a map named by a quoted name or a symbol that says secret, set to a literal: `ENV['DB_PASSWORD'] =
    // '…'`, `os.environ["API_KEY"] = "…"`, Flask's `app.config['SECRET_KEY'] = '…'`, `config[:password] ||= '…'`.
    rule: 'password-entry',
    what: 'a hard-coded password or key',
    pattern: /\[\s*(?:(["'])([A-Za-z_][\w.-]*)\1|:([A-Za-z_]\w*))\s*\]\s*(?:\|\|)?=(?!=)\s*(["'])([^"'\s]{6,})\4/g,
    name: [2, 3],
    value: 5,
    generic: true,
  },
  {
    // The secret handed to a credential's constructor after its user, by position: .NET's `new NetworkCredential(
    // "user", "…")`, `UsernamePasswordCredentials`, Python's `HTTPBasicAuth('user', '…')`.
    rule: 'credential-argument',
    what: 'a hard-coded password or key',
    pattern: /\b([A-Za-z_]\w*)\s*\(\s*(["'])[^"'\n]*\2\s*,\s*(["'])([^"'\s]{6,})\3\s*[,)]/g,
    name: 1,
    names: (name) => /(?:Credentials?|BasicAuth|PasswordAuthentication)$/.test(name),
    value: 4,
    generic: true,
  },
  {
    // A key and its value as attributes: .NET's `<add key="SmtpPassword" value="…" />`, `<entry name=… value=…>`.
    rule: 'password-attribute',
    what: 'a hard-coded password or key',
    pattern: /\b(?:key|name)\s*=\s*(["'])([A-Za-z_][\w.:-]*)\1\s+value\s*=\s*(["'])([^"'\s]{6,})\3/g,
    name: 2,
    value: 4,
    generic: true,
  },
  {
    // An element that says secret holding a literal: Maven's `<password>…</password>`, `<apiKey>…</apiKey>`.
    rule: 'password-element',
    what: 'a hard-coded password or key',
    pattern: /<([A-Za-z_][\w.-]*)>([^<\s]{6,})<\/\1>/g,
    name: 1,
    value: 2,
    generic: true,
  },
  // libpq's keyword string (`"host=… dbname=… user=… password=…"`, psycopg2.connect's, a DSN): a password keyword
  // among other keywords of a connection, before or after them.
  {
    rule: 'connection-keyword-password',
    what: 'a connection string with a password',
    pattern:
      /(?<=\b(?:host|hostaddr|dbname|user|port|sslmode|server|database)=\S*\s+(?:\w+=\S*\s+)*)(?:password|pwd)=([^\s"';]+)|(?<=^|[\s"'])(?:password|pwd)=([^\s"';]+)(?=(?:\s+\w+=\S*)*\s+(?:host|hostaddr|dbname|user|server|database)=)/gi,
    value: [1, 2],
    generic: true,
  },
  {
    // A variable of a process's environment set on a line of its own, in any file that holds one: a shell's `export
    // NAME=value` (a script, direnv's .envrc, a profile), a Dockerfile's `ENV NAME=value`, a compose file's or a CI
    // job's `- NAME=value` list entry; unquoted, as a dotenv file's, and the name says secret as a dotenv name does
    // (PGPASSWORD, MARIADB_PASSWORD, GITHUB_TOKEN, OPENAI_API_KEY).
    rule: 'exported-secret',
    what: 'a secret set in an environment',
    pattern: /^[ \t]*(?:export[ \t]+|ENV[ \t]+|-[ \t]+)([A-Za-z_]\w*)=(["']?)([^\s"'#;]{6,})\2/gm,
    name: 1,
    // Not where a secret is kept (DB_PASSWORD_FILE=/run/secrets/db, Docker's and systemd's convention): a path.
    names: (name) => SECRET_VARIABLE.test(name) && !/_(?:FILE|PATH|DIR)$/i.test(name),
    value: 3,
    generic: true,
  },
  {
    // `password = "…"`, `"api_key": '…'`, `aws_secret_key = "…"`, `dbPassword: '…'`: a quoted literal of 6 or more
    // characters assigned to a name that says secret (namesSecret).
    rule: 'password-assignment',
    what: 'a hard-coded password or key',
    // Not a name inside a package or a path ("@inquirer/password"): a name stands alone.
    pattern: /(?<![\w@/.-])([A-Za-z_][\w.-]*)["']?\s*(?::=|=>|[:=])\s*(["'])([^"'\s]{6,})\2/g,
    name: 1,
    value: 3,
    generic: true,
  },
];

/** An environment variable's name that says secret, as a dotenv file's rule reads it too (./secrets.mjs). */
export const SECRET_VARIABLE = /(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY)/i;
