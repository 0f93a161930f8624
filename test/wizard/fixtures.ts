// What the wizard tests share: a node signed in through the built binary, and what its database holds.
import { expect } from 'vitest';
import { nodeEnv, type NodeEnv } from '../helpers/cli.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { uniqueEmail } from '../helpers/temp.js';
import { nodeDb } from '../cli/fixtures.js';
import { swarmNode } from '../install/support.js';

export { nodeDb, walletBalance } from '../cli/fixtures.js';

export const AGENT = 'agent_ops_monitor_004';

export interface SignedInNode extends NodeEnv {
  email: string;
  token: string;
}

/** A paid user whose JWT this node stores (login --token-stdin of the staged package), the wallet funded if asked. */
export async function signedInNode(baseUrl: string, label: string, fundCents?: number): Promise<SignedInNode> {
  const email = uniqueEmail(label);
  const token = await signIn(baseUrl, email);
  if (fundCents !== undefined) await fundWallet(baseUrl, email, fundCents);
  const node = nodeEnv(baseUrl);
  const login = await swarmNode(['login', '--token-stdin'], { env: node.env, input: `${token}\n` });
  expect(login.exitCode, login.stderr).toBe(0);
  return { ...node, email, token };
}

export function runsOf(home: string): Array<{ agent_id: string; source: string; status: string; charged_cents: number }> {
  const db = nodeDb(home);
  try {
    return db.prepare('SELECT agent_id, source, status, charged_cents FROM runs ORDER BY started_at').all() as never;
  } finally {
    db.close();
  }
}

export function registrationsOf(home: string): Array<{ agent_id: string; every_seconds: number | null; daily_cap_cents: number | null }> {
  const db = nodeDb(home);
  try {
    return db.prepare('SELECT agent_id, every_seconds, daily_cap_cents FROM registrations ORDER BY agent_id').all() as never;
  } finally {
    db.close();
  }
}
