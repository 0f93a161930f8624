// What the benchmarks share: a paid, funded user through the sandbox provider over plain HTTP, a server started
// as its own process, and the printing of figures.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

declare const REPO_ROOT: string;

/** Starts `node <args>` and resolves with the first capture of `ready` in its stdout (its URL). */
export async function startServer(args: string[], env: Record<string, string>, ready: RegExp, children: ChildProcess[]): Promise<string> {
  return (await startServerProcess(args, env, ready, children)).origin;
}

/** As startServer, with the server's process id. */
export function startServerProcess(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  children: ChildProcess[],
): Promise<{ origin: string; pid: number }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      seen += chunk;
      const match = ready.exec(seen);
      if (match) resolve({ origin: match[1]!, pid: child.pid! });
    });
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code} before it was ready`)));
  });
}

/** The CPU time (user and system) a process has used so far, in milliseconds, from /proc (Linux). */
export function cpuMillisecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ');
  // After the command: state is field 3, so utime (14) and stime (15) are at 11 and 12; in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The built swarm-node with `args` (a secret only ever on stdin); throws with its stderr unless it exits 0. */
export function swarmNode(args: string[], env: NodeJS.ProcessEnv, input?: string): void {
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'swarm-node.js'), ...args], { env, input, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`swarm-node ${args[0]} exited ${result.status}: ${result.stderr}`);
}

/**
 * A confirmed starter-agents payment, then the sign-in of docs/api.md "Sign-in: a verified inbox": a code mailed to
 * the address, read from the sandbox's outbox (svc-api --sandbox keeps what it mails), and issue-token with it.
 */
export async function signIn(api: string, email: string): Promise<string> {
  await payAndConfirm(api, { offer_id: 'svc_starter_agents', customer_email: email });
  const challenge = await postJson(api, '/v1/auth/email-code', { email });
  const reference = `reference ${(challenge.challenge_id as string).slice(0, 8)}`;
  let code: string | undefined;
  await until(async () => {
    const outbox = (await (await fetch(`${api}/sandbox/mail?to=${encodeURIComponent(email)}`)).json()) as {
      messages: Array<{ text: string }>;
    };
    code = /\b(\d{4}-\d{4})\b/.exec(outbox.messages.find((message) => message.text.includes(reference))?.text ?? '')?.[1];
    return code !== undefined;
  }, 'the sign-in code in the sandbox outbox');
  const issued = await postJson(api, '/v1/auth/issue-token', {
    status: 'CONFIRMED',
    offer_id: 'svc_starter_agents',
    customer_email: email,
    merchant_id: process.env.SVC_MERCHANT_ID ?? 'merchant_local',
    challenge_id: challenge.challenge_id,
    code,
  });
  return issued.jwtToken as string;
}

export async function fundWallet(api: string, email: string, token: string, amountCents: number): Promise<void> {
  await payAndConfirm(api, { offer_id: 'svc_pay_wallet_fund', customer_email: email, amount_cents: amountCents });
  await until(async () => {
    const wallet = (await (await fetch(`${api}/v1/swarm/wallet`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      balance_cents: number;
    };
    return wallet.balance_cents >= amountCents;
  }, 'the wallet to be funded');
}

export async function payAndConfirm(api: string, checkout: Record<string, unknown>): Promise<string> {
  const payment = await postJson(api, '/sandbox/payments', checkout);
  await postJson(api, `/sandbox/payments/${payment.payment_id as string}/confirm`);
  await until(async () => {
    const current = (await (await fetch(`${api}/sandbox/payments/${payment.payment_id as string}`)).json()) as {
      webhook_delivered: boolean;
    };
    return current.webhook_delivered;
  }, 'the payment webhook');
  return payment.payment_id as string;
}

async function postJson(api: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${api}${path}`, {
    method: 'POST',
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`POST ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 10_000, everyMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Rows of cells as aligned columns: the first left-aligned, the figures right-aligned. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((cells) => cells[column]!.length)));
  return rows
    .map((cells) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  '))
    .join('\n');
}

export function positiveInteger(text: string, flag: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${flag} must be a positive whole number, got ${text}`);
  return value;
}

/**
 * An operator's own bundle of `agentId` in the node's home (it takes precedence over the package's reference agent,
 * src/node/runner/bundles.ts) that reads its run on stdin and prints `{}`: a run that costs only the process.
 */
export function installNoopAgent(home: string, agentId: string): string {
  const dir = join(home, 'agents', agentId);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  writeFileSync(
    join(dir, 'agent.json'),
    JSON.stringify({ agent_id: agentId, version: '0.0.0-bench', entry: ['node', 'main.mjs'], input_schema: { type: 'object' } }),
  );
  writeFileSync(join(dir, 'main.mjs'), NOOP_AGENT);
  return dir;
}

const NOOP_AGENT = `process.stdin.resume();
process.stdin.on('end', () => process.stdout.write('{}'));
`;

/** The middle value; of an even count, the mean of the two middle ones. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The nearest-rank percentile (`fraction` of 1) of unsorted values. */
export function percentileOf(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!;
}

/**
 * Rounds whose middle half of ratios (p25 to p75) spans more than this share of their median say more about the
 * machine than about the program. The interquartile range, not min–max: one round hit by another process's burst
 * should not void ten (min–max is printed beside it).
 */
export const SPREAD_LIMIT = 0.2;

/** The interquartile range over the median. */
export function spreadOf(values: number[]): number {
  return (percentileOf(values, 0.75) - percentileOf(values, 0.25)) / median(values);
}

/** The rounds' ratios summed up in one line, with whether they are narrow enough to judge. */
export function spreadLine(ratios: number[], spread: number = spreadOf(ratios)): string {
  const range = (low: number, high: number): string => `${low.toFixed(2)}–${high.toFixed(2)}`;
  return (
    `rounds' ratios: median ${median(ratios).toFixed(2)}x, p25–p75 ${range(percentileOf(ratios, 0.25), percentileOf(ratios, 0.75))} ` +
    `(${(spread * 100).toFixed(0)}% of the median), min–max ${range(Math.min(...ratios), Math.max(...ratios))}: ` +
    (spread <= SPREAD_LIMIT ? 'narrow enough to judge' : 'TOO WIDE TO JUDGE')
  );
}
