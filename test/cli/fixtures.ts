// A node signed in to a real svc-api, for the CLI tests: a paid user, the JWT stored through `login --token-stdin`.
import { expect } from 'vitest';
import { openNodeStore } from '../../src/node/store/database.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import { nodeEnv, swarmNode, type NodeEnv } from '../helpers/cli.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import type { CliResult } from '../helpers/cli.js';
import { apiClient } from '../helpers/http.js';
import { uniqueEmail } from '../helpers/temp.js';
import { join } from 'node:path';

export interface SignedInNode extends NodeEnv {
  email: string;
  token: string;
}

/** A paid user's JWT stored by `login --token-stdin`, and (unless told) this home enrolled as a node of theirs. */
export async function signedInNode(
  baseUrl: string,
  options: { fundCents?: number; offer?: string; label?: string; enroll?: boolean } = {},
): Promise<SignedInNode> {
  const email = uniqueEmail(options.label ?? 'node');
  const token = await signIn(baseUrl, email, options.offer);
  if (options.fundCents !== undefined) await fundWallet(baseUrl, email, options.fundCents);
  const node = nodeEnv(baseUrl);
  const login = await swarmNode(['login', '--token-stdin'], { env: node.env, input: `${token}\n` });
  expect(login.exitCode, login.stderr).toBe(0);
  if (options.enroll !== false) {
    const enroll = await swarmNode(['enroll'], { env: node.env });
    expect(enroll.exitCode, enroll.stderr).toBe(0);
  }
  return { ...node, email, token };
}

export async function walletBalance(baseUrl: string, token: string): Promise<number> {
  const wallet = await apiClient(baseUrl).get('/v1/swarm/wallet', token);
  expect(wallet.status, wallet.text).toBe(200);
  return wallet.body.balance_cents as number;
}

/** The node's own database, opened as the CLI opens it. */
export function nodeDb(home: string): SqliteDatabase {
  return openNodeStore(join(home, 'var', 'swarm-node.db'));
}

/** A pid that belonged to a process which has exited: a row it wrote is no longer awaited by anyone. */
export async function deadPid(): Promise<number> {
  const { execa } = await import('execa');
  const child = execa('node', ['-e', '0']);
  const pid = child.pid!;
  await child;
  return pid;
}

/** No ANSI escape sequence anywhere. */
export const ESC = '\u001b';

/**
 * `swarm-node login` by mail, as a script does it: --send-code, the code read from the inbox (the run's SMTP server),
 * then the login that types it on standard input. `extra`: more options of that second login (--offer, --json).
 */
export async function loginByMail(env: Record<string, string>, email: string, extra: string[] = []): Promise<CliResult> {
  const sent = await swarmNode(['--json', 'login', '--email', email, '--send-code'], { env });
  expect(sent.exitCode, sent.stderr).toBe(0);
  const reference = String(sent.json.challenge_id).slice(0, 8);
  const mail = await nextMailTo(email, { match: (each) => each.text.includes(`reference ${reference}`) });
  return swarmNode(['login', '--email', email, ...extra], { env, input: `${signInCodeOf(mail)}\n` });
}
