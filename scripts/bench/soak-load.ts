// The load generator of scripts/bench/soak.ts, in a process of its own (forked with IPC): executes at a fixed rate,
// open loop (each is sent on time whether or not the ones before it were answered, as users would), each with its
// own Idempotency-Key, so every one is a new run. The service's slowness shows as latency, never as a lower rate.
// It answers `window` with the latencies and statuses since the last window, and `stop` with the totals.
import { randomUUID } from 'node:crypto';
import { Agent } from 'undici';

export type SoakLoadCommand =
  { op: 'start'; origin: string; users: { token: string; body: string }[]; perSecond: number } | { op: 'window' } | { op: 'stop' };

export interface SoakWindow {
  /** Executes answered in the window, and their latency (ms, sent to the end of the body; 0 when none was). */
  answered: number;
  p50: number;
  p99: number;
  /** Status → how many (0: no answer: refused connection, timeout). */
  statuses: Record<string, number>;
  /** Executes sent and not yet answered at the end of the window. */
  inFlight: number;
}

/** Far above execute's hold (--execute-wait-seconds): an answer that late is counted, not cut. */
const TIMEOUT_MS = 120_000;
const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 30_000 });

let latencies: number[] = [];
let statuses: Record<string, number> = {};
let inFlight = 0;
let timer: NodeJS.Timeout | undefined;
const total = { answered: 0, statuses: {} as Record<string, number> };

function count(into: Record<string, number>, status: number): void {
  into[String(status)] = (into[String(status)] ?? 0) + 1;
}

async function execute(origin: string, user: { token: string; body: string }): Promise<void> {
  inFlight += 1;
  const sent = performance.now();
  let status = 0;
  try {
    const response = await fetch(`${origin}/v1/swarm/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'idempotency-key': randomUUID() },
      body: user.body,
      signal: AbortSignal.timeout(TIMEOUT_MS),
      // @ts-expect-error undici's own option, which Node's fetch takes
      dispatcher,
    });
    await response.arrayBuffer();
    status = response.status;
  } catch {
    status = 0;
  }
  inFlight -= 1;
  latencies.push(performance.now() - sent);
  count(statuses, status);
  count(total.statuses, status);
  total.answered += 1;
}

function start(command: Extract<SoakLoadCommand, { op: 'start' }>): void {
  const began = performance.now();
  let sent = 0;
  // Paced against the clock since the start, not by a fixed delay: a late tick sends what it owes.
  const tick = (): void => {
    const due = Math.floor(((performance.now() - began) / 1000) * command.perSecond);
    for (; sent < due; sent += 1) void execute(command.origin, command.users[sent % command.users.length]!);
  };
  timer = setInterval(tick, Math.max(10, 1000 / command.perSecond / 2));
}

function percentile(sorted: number[], fraction: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

process.on('message', (command: SoakLoadCommand) => {
  if (command.op === 'start') {
    start(command);
    process.send!({ ok: true });
  } else if (command.op === 'window') {
    const sorted = latencies.sort((a, b) => a - b);
    const window: SoakWindow = { answered: sorted.length, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), statuses, inFlight };
    latencies = [];
    statuses = {};
    process.send!(window);
  } else {
    clearInterval(timer);
    const drained = setInterval(() => {
      if (inFlight > 0) return;
      clearInterval(drained);
      process.send!(total, () => process.disconnect());
    }, 100);
  }
});
