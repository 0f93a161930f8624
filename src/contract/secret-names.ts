// Secrets' names and bounds without TypeBox (docs/api.md "Secrets"): the CLI's command tree loads these for its
// help, and must stay light at start (test/wizard's check of what --help loads); secrets.ts adds the schemas.
/** An environment variable's name as shells write it, in capitals: what an agent reads (process.env.NAME). */
export const SECRET_NAME_PATTERN = '^[A-Z][A-Z0-9_]{0,63}$';
/** A value's bytes (UTF-8): an API key, a password, a PEM key; an environment variable of Linux holds 128 KiB. */
export const MAX_SECRET_VALUE_BYTES = 16 * 1024;
/**
 * The shortest value: shorter ones could not be redacted from a run's output without hiding every occurrence of a
 * few common letters, so they are refused rather than kept unredacted.
 */
export const MIN_SECRET_VALUE_CHARS = 4;
/** Secrets one user keeps, and names one agent.json declares. */
export const MAX_SECRETS_PER_USER = 100;
export const MAX_SECRETS_PER_AGENT = 32;

/**
 * Names the node sets itself (PATH, HOME, TMPDIR, LANG, SWARM_*), and names that change how a program starts before
 * the agent's own code runs: the sandbox's launchers (sh, bwrap, setpriv, nsenter, prlimit) run with the agent's environment,
 * some as root, so a secret named LD_PRELOAD or BASH_ENV would load code into them.
 */
const RESERVED_NAMES = new Set([
  'PATH',
  'HOME',
  'TMPDIR',
  'LANG',
  'NODE_OPTIONS',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'IFS',
  'PS4',
  'CDPATH',
]);
const RESERVED_PREFIXES = ['SWARM_', 'LD_', 'GLIBC_', 'LC_', 'MALLOC_'];

/** Why `name` cannot be a secret's name; undefined when it can. */
export function secretNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || !new RegExp(SECRET_NAME_PATTERN).test(name)) {
    return 'must be 1-64 capital letters, digits and _, starting with a letter (an environment variable name, for example OPENAI_API_KEY)';
  }
  if (RESERVED_NAMES.has(name) || RESERVED_PREFIXES.some((prefix) => name.startsWith(prefix))) {
    return `${name} is reserved: the node sets it, or it changes how programs start (${[...RESERVED_NAMES].join(', ')}, ${RESERVED_PREFIXES.map((p) => `${p}*`).join(', ')})`;
  }
  return undefined;
}

/** Why `value` cannot be a secret's value; undefined when it can. */
export function secretValueProblem(value: string): string | undefined {
  if ([...value].length < MIN_SECRET_VALUE_CHARS)
    return `must be at least ${MIN_SECRET_VALUE_CHARS} characters (a shorter one could not be redacted from outputs)`;
  if (Buffer.byteLength(value, 'utf8') > MAX_SECRET_VALUE_BYTES) return `must be at most ${MAX_SECRET_VALUE_BYTES} bytes`;
  // An environment variable cannot hold NUL: execve cuts the string there.
  if (value.includes('\u0000')) return 'must not contain a NUL character';
  return undefined;
}
