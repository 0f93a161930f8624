// How the demo speaks: a header per step (colour and bold only on a terminal, never under NO_COLOR), a line or two
// of narration, the commands it runs and their output indented beneath, and secrets only masked.
import { Chalk } from 'chalk';

const noColor = (process.env.NO_COLOR ?? '') !== '' || process.env.TERM === 'dumb' || !process.stdout.isTTY;
const style = new Chalk({ level: noColor ? 0 : 1 });

const GUTTER = '   │ ';

/** Replaces long scratch paths with a short name in what the demo shows (never in what it checks). */
const aliases = [];

export function alias(path, name) {
  aliases.push([path, name]);
  aliases.sort((a, b) => b[0].length - a[0].length);
}

/** Secrets the demo knows of; a JWT is recognised by its shape. Masked in everything printed, failures included. */
const secrets = new Set();
const JWT_SHAPE = /eyJ[\w-]+\.[\w-]+\.[\w-]+/g;

export function secret(value) {
  if (typeof value === 'string' && value.length >= 8) secrets.add(value);
}

function shorten(text) {
  let out = text;
  for (const value of secrets) out = out.replaceAll(value, mask(value));
  out = out.replace(JWT_SHAPE, (token) => mask(token));
  for (const [path, name] of aliases) out = out.replaceAll(path, name);
  return out;
}

export function write(line = '') {
  process.stdout.write(`${shorten(line)}\n`);
}

/** The step's marker line: `── 3/14 · Title`. The demo's test looks for these, in order. */
export function header(number, total, title) {
  write();
  write(style.bold.cyan(`── ${number}/${total} · ${title}`));
}

/** Narration: what happens and why. */
export function say(text) {
  for (const line of text.split('\n')) write(`   ${line}`);
}

/** A command as a person would type it (the program name, not the node binary and script path). */
export function showCommand(words, env = {}) {
  const prefix = Object.entries(env)
    .map(([name, value]) => `${name}=${value} `)
    .join('');
  write(`   $ ${prefix}${words.map(quoteWord).join(' ')}`);
}

/** A curl command as a person would type it, one option a line; the bearer token masked like every secret. */
export function showCurl(method, url, { token, headers = {}, body } = {}) {
  const parts = [`curl -sS${method === 'GET' ? '' : ` -X ${method}`} ${quoteWord(url)}`];
  if (token !== undefined) parts.push(`-H ${quoteWord(`Authorization: Bearer ${mask(token)}`)}`);
  for (const [name, value] of Object.entries(headers)) parts.push(`-H ${quoteWord(`${name}: ${value}`)}`);
  if (body !== undefined) parts.push(`-H 'Content-Type: application/json' -d ${quoteWord(JSON.stringify(body))}`);
  write(`   $ ${parts.join(' \\\n       ')}`);
}

/** A program's output, indented under its command. */
export function showOutput(text) {
  const lines = text.replace(/\s+$/, '').split('\n');
  if (lines.length === 1 && lines[0] === '') return;
  for (const line of lines) write(`${GUTTER}${line}`);
}

/** Key fields, aligned. */
export function showFields(pairs) {
  const width = Math.max(...pairs.map(([key]) => key.length));
  for (const [key, value] of pairs) write(`${GUTTER}${key.padEnd(width)}  ${value}`);
}

/** A secret as the demo shows it: its first six characters, never more. */
export function mask(secret) {
  return `${String(secret).slice(0, 6)}…`;
}

/** A URL with the token in its query masked. */
export function maskUrlToken(url) {
  const parsed = new URL(url);
  const token = parsed.searchParams.get('token');
  return token === null ? url : url.replace(token, mask(token));
}

export function ok(text) {
  write(`   ${style.green('✓')} ${text}`);
}

export function fail(text) {
  process.stderr.write(`${style.red.bold('✗')} ${shorten(text)}\n`);
}

/** Diagnostics after a failure (a program's output, a log), secrets masked like everything else. */
export function writeError(text) {
  process.stderr.write(`${shorten(text.replace(/\s+$/, ''))}\n`);
}

function quoteWord(word) {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
