// git for the review, always through argument arrays (never a shell), always read-only.
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { InputError } from './agent-io.mjs';

/**
 * Options given to every git call. The agent's uid does not own the repository, so safe.directory must be waived
 * (only the command line and the agent's own HOME can waive it, never the repository). The repository's own
 * config can name programs to run; the read-only commands below are chosen so none runs: --no-ext-diff and
 * --no-textconv on diffs, no fsmonitor, no pager (no terminal), no prompts.
 */
const CONFIG = ['-c', 'safe.directory=*', '-c', 'core.fsmonitor=false', '-c', 'core.quotePath=false'];
const ENV = { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', GIT_PAGER: 'cat', LC_ALL: 'C' };
const TIMEOUT_MS = 20_000;

export function git(repo, args, { encoding = 'utf8', input } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile('git', [...CONFIG, '-C', repo, ...args], { env: ENV, encoding, timeout: TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(Object.assign(new Error(`git ${args[0]} failed: ${String(stderr).trim() || error.message}`), { exitCode: error.code, stderr: String(stderr) }));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin.end(input);
  });
}

/** Calls `onLine` for every line git prints, without holding the whole output (a diff can be large). */
export function gitEachLine(repo, args, onLine) {
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...CONFIG, '-C', repo, ...args], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk).length > 65_536 && (stderr = stderr.slice(-65_536)));
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', (line) => {
      if (onLine(line) === false) child.kill();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0 || signal === 'SIGTERM') resolve();
      else reject(new Error(`git ${args[0]} failed: ${stderr.trim() || `exit ${code ?? signal}`}`));
    });
  });
}

/**
 * A revision as the user wrote it: one commit-ish, or a range `a..b` / `a...b`. Refused before git sees it when it
 * could be read as an option (a leading `-`) or holds whitespace or control characters; git then resolves it
 * after `--end-of-options`.
 */
export function parseRev(rev) {
  if (typeof rev !== 'string' || rev.length === 0 || rev.length > 256) throw new InputError('rev: must be a revision of 1 to 256 characters');
  if (/[\s\x00-\x1f\x7f]/.test(rev)) throw new InputError('rev: must not contain whitespace or control characters');
  const threeDot = rev.indexOf('...');
  const twoDot = rev.indexOf('..');
  const range = threeDot !== -1 ? { from: rev.slice(0, threeDot), to: rev.slice(threeDot + 3), mergeBase: true } : twoDot !== -1 ? { from: rev.slice(0, twoDot), to: rev.slice(twoDot + 2), mergeBase: false } : null;
  for (const side of range ? [range.from, range.to] : [rev]) {
    if (side.startsWith('-')) throw new InputError(`rev: "${side}" starts with "-"; a revision cannot`);
    if (side.includes('..')) throw new InputError(`rev: "${rev}" is not a commit or a range a..b`);
  }
  // git reads an empty side of a range as HEAD (`main..` is main..HEAD).
  return range ? { from: range.from || 'HEAD', to: range.to || 'HEAD', mergeBase: range.mergeBase } : { commit: rev };
}

async function resolveCommit(repo, rev) {
  try {
    return (await git(repo, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`])).trim();
  } catch {
    throw new InputError(`rev: "${rev}" is not a commit of ${repo}`);
  }
}

/**
 * The two trees to compare. A commit is compared with its first parent (for a merge: what the merge brought
 * in), a root commit with the empty tree; `a..b` compares a with b, `a...b` their merge base with b.
 */
export async function resolveReview(repo, rev) {
  const parsed = parseRev(rev);
  if (parsed.commit !== undefined) {
    const head = await resolveCommit(repo, parsed.commit);
    const parent = await git(repo, ['rev-parse', '--verify', '--quiet', `${head}^1`]).then((out) => out.trim(), () => null);
    const base = parent ?? (await git(repo, ['hash-object', '-t', 'tree', '/dev/null'])).trim();
    const subject = (await git(repo, ['log', '-1', '--format=%s', head])).trim();
    return { base, head, parent, commits: 1, subject };
  }
  const from = await resolveCommit(repo, parsed.from);
  const head = await resolveCommit(repo, parsed.to);
  let base = from;
  if (parsed.mergeBase) {
    try {
      base = (await git(repo, ['merge-base', from, head])).trim();
    } catch {
      throw new InputError(`rev: ${parsed.from} and ${parsed.to} have no common ancestor`);
    }
  }
  const commits = Number((await git(repo, ['rev-list', '--count', `${base}..${head}`])).trim());
  return { base, head, parent: base, commits, subject: null };
}

/** The changed files: status, new mode, new blob and path, from `git diff --raw -z` (paths exactly, never quoted). */
export async function changedFiles(repo, base, head) {
  const fields = (await git(repo, ['diff', '--raw', '-z', '--no-abbrev', '--find-renames', '--no-ext-diff', '--no-textconv', base, head, '--'])).split('\0');
  const files = [];
  for (let i = 0; i < fields.length - 1; ) {
    const [, newMode, , newBlob, status] = fields[i].slice(1).split(' ');
    const renamed = status.startsWith('R') || status.startsWith('C');
    const path = renamed ? fields[i + 2] : fields[i + 1];
    files.push({ status: status[0], mode: newMode, blob: newBlob, path });
    i += renamed ? 3 : 2;
  }
  return files;
}

/** Paths git itself counts as binary (numstat prints `-` for them; .gitattributes is honoured). */
export async function binaryPaths(repo, base, head) {
  const fields = (await git(repo, ['diff', '--numstat', '-z', '--find-renames', '--no-ext-diff', '--no-textconv', base, head, '--'])).split('\0');
  const binary = new Set();
  for (let i = 0; i < fields.length - 1; ) {
    const [added, , path] = fields[i].split('\t');
    // A rename's record is "added\tdeleted\t" followed by the old and the new path as fields of their own.
    const newPath = path === '' ? fields[i + 2] : path;
    if (added === '-') binary.add(newPath);
    i += path === '' ? 3 : 1;
  }
  return binary;
}

/** Sizes of blobs by id, in one `git cat-file --batch-check`. */
export async function blobSizes(repo, blobs) {
  if (blobs.length === 0) return new Map();
  const out = await git(repo, ['cat-file', '--batch-check=%(objectname) %(objectsize)'], { input: `${blobs.join('\n')}\n` });
  return new Map(out.trim().split('\n').map((line) => line.split(' ')).map(([id, size]) => [id, Number(size)]));
}

export async function blobText(repo, blob) {
  return git(repo, ['cat-file', 'blob', blob]);
}

/**
 * The contents of several blobs, by id, from one `git cat-file --batch`: each answer is a header line
 * "<id> blob <size>" and the bytes. Decoded as UTF-8 (a byte that is not becomes U+FFFD, and is no secret's).
 */
export function blobTexts(repo, blobs) {
  return new Promise((resolve, reject) => {
    const texts = new Map();
    if (blobs.length === 0) return resolve(texts);
    const child = spawn('git', [...CONFIG, '-C', repo, 'cat-file', '--batch'], { env: ENV, stdio: ['pipe', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
    let buffer = Buffer.alloc(0);
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const newline = buffer.indexOf(10);
        if (newline === -1) return;
        const [id, type, size] = buffer.subarray(0, newline).toString('utf8').split(' ');
        if (type === 'missing') {
          buffer = buffer.subarray(newline + 1);
          continue;
        }
        const end = newline + 1 + Number(size);
        if (buffer.length < end + 1) return;
        texts.set(id, buffer.subarray(newline + 1, end).toString('utf8'));
        buffer = buffer.subarray(end + 1);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(texts) : reject(new Error(`git cat-file failed: ${stderr.trim() || `exit ${code}`}`))));
    child.stdin.on('error', () => {});
    child.stdin.end(`${blobs.join('\n')}\n`);
  });
}

/**
 * The lines of one blob as git streams them, never the whole blob in memory: the review searches text files too
 * large to read whole for secrets this way. Ends early, git stopped, when the reader stops.
 */
export async function* blobLines(repo, blob) {
  const child = spawn('git', [...CONFIG, '-C', repo, 'cat-file', 'blob', blob], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk).length > 65_536 && (stderr = stderr.slice(-65_536)));
  const closed = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  let done = false;
  try {
    for await (const line of createInterface({ input: child.stdout, crlfDelay: Infinity })) yield line;
    done = true;
  } finally {
    if (!done) child.kill();
  }
  const { code, signal } = await closed;
  if (code !== 0) throw new Error(`git cat-file failed: ${stderr.trim() || `exit ${code ?? signal}`}`);
}
