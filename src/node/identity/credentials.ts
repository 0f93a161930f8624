// docs/decisions/0005-tokens.md: on the node the JWT and node credentials live in one file of mode 0600. A file that
// others can read is refused rather than used, as ssh does with keys.
import { readFileSync, statSync } from 'node:fs';
import { normalizeEmail } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import { writeFileAtomic } from '../host/files.js';

export interface StoredJwt {
  token: string;
  sub: string;
  tier: string;
  /** Unix seconds. */
  exp: number;
  stored_at: string;
}

export interface NodeEnrollment {
  node_id: string;
  user_id: string;
  tier_id: string;
  enrolled_at: string;
  /** The node's own secret from enrollment (absent on nodes enrolled before it existed). */
  credential?: string;
  /**
   * SHA-256 (hex) of the spent deploy token this node enrolled with, written by install: a re-run with another token
   * is another node, refused (install-node.ts). Absent on nodes enrolled otherwise or before it existed.
   */
  deploy_token_sha256?: string;
  /** Enrolled by install --ephemeral: it takes one run, then removes itself (the daemon retires it). */
  ephemeral?: true;
  /** install --uninstall-after: once retired, the daemon also removes the install, purged (uninstall-node.ts). */
  uninstall_after?: true;
}

export interface Credentials {
  jwt?: StoredJwt;
  node?: NodeEnrollment;
  /** A sign-in code asked for (login --send-code) and not yet typed: its challenge, never the code. */
  pending_sign_in?: { email: string; challenge_id: string; expires_at: string };
}

export const CREDENTIALS_MODE = 0o600;

export function readCredentials(path: string): Credentials {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new SvcError('local_state', `cannot read the credentials file ${path}: ${(error as NodeJS.ErrnoException).code}`);
  }
  if (mode & 0o077) {
    throw new SvcError('local_state', `the credentials file ${path} is readable by others (mode ${mode.toString(8)})`, {
      remedy: `Restrict it, then retry: chmod 600 ${path}`,
    });
  }
  return parseCredentials(path, readFileSync(path, 'utf8'));
}

/**
 * A stored token that has not expired by the local clock: worth asking the service about, or sending where a sign-in
 * adds to the answer. `email`: only a token of that user (another e-mail on the command line means signing in as them).
 */
export function usableStoredJwt(credentialsFile: string, nowMs: number, email?: string): StoredJwt | undefined {
  const jwt = readCredentials(credentialsFile).jwt;
  if (jwt === undefined || jwt.exp * 1000 <= nowMs) return undefined;
  if (email !== undefined && normalizeEmail(email) !== normalizeEmail(jwt.sub)) return undefined;
  return jwt;
}

/** The credentials in `text`, the content of `path`; a local_state error saying how to repair it otherwise. */
export function parseCredentials(path: string, text: string): Credentials {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw unreadableCredentials(path, `is not valid JSON (${where(text, error)})`, error);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw unreadableCredentials(path, 'is not a JSON object');
  return parsed as Credentials;
}

/**
 * A credentials file that cannot be read as one. Writes are atomic (files.ts), so a hand edit or a damaged disk
 * made it: the remedy says where to repair it, and what starting afresh loses (the enrollment and the sign-in it
 * holds), never only "remove it". Neither the message nor the remedy quotes the file: it holds secrets.
 */
function unreadableCredentials(path: string, what: string, cause?: unknown): SvcError {
  return new SvcError('local_state', `the credentials file ${path} ${what}`, {
    remedy:
      `Repair it by hand (python3 -m json.tool ${path} names the spot): it holds this node's enrollment (its node id and credential) and the sign-in. ` +
      `Starting afresh loses both: mv ${path} ${path}.broken, then swarm-node login and swarm-node enroll (a new node: the old one stays in swarm-node nodes, offline, until you remove it).`,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Where JSON.parse stopped, as a line and column: newer Nodes quote the text around it in their message, and this
 * text holds secrets.
 */
function where(text: string, error: unknown): string {
  const position = /at position (\d+)/.exec((error as Error).message)?.[1];
  const offset = position === undefined ? text.length : Math.min(Number(position), text.length);
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

export function writeCredentials(path: string, credentials: Credentials): void {
  writeFileAtomic(path, `${JSON.stringify(credentials, null, 2)}\n`, CREDENTIALS_MODE);
}

/**
 * The credential of node `nodeId` as the file holds it now (a rotation replaces it while the node works);
 * undefined when the file names another node, none, or cannot be read.
 */
export function currentNodeCredential(path: string, nodeId: string): string | undefined {
  try {
    const node = readCredentials(path).node;
    return node?.node_id === nodeId ? node.credential : undefined;
  } catch {
    return undefined;
  }
}

/** Reads, changes and writes back; the change sees the current content. */
export function updateCredentials(path: string, change: (current: Credentials) => Credentials): Credentials {
  const next = change(readCredentials(path));
  writeCredentials(path, next);
  return next;
}
