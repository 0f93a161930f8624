// svc-api's graceful stop (docs/operations.md "Stopping svc-api"), on the built binary: SIGTERM answers new work 503
// but still takes in the results of runs in flight (nodes report them), so an execute waiting for its node's result
// gets its 200; within --shutdown-grace, then executes still waiting answer 202 (their runs go on, on the nodes, and
// their results reach the next start); idle connections close; exit 0. The node is the test's protocol peer and
// answers when the test releases it, so every step waits for an event, never for a time.
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { enrollNode, serve, type Answer, type ServingNode } from '../helpers/protocol-node.js';
import { SVC_API_BIN, spawnSvcApi, type SpawnedSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_research_rag_015'; // 15 cents

afterAll(() => removeTempDirs());

interface Setup {
  api: SpawnedSvcApi;
  dataDir: string;
  user: { email: string; token: string };
  node: ServingNode;
  started: AssignedRun[];
  release(answer?: Answer): void;
}

/** A service with a funded user whose node takes runs and answers only when released. */
async function setup(args: string[] = []): Promise<Setup> {
  const dataDir = tempDir('svc-api-drain-');
  const api = await spawnSvcApi({ dataDir, args });
  const email = uniqueEmail('drain');
  const token = await signIn(api.baseUrl, email);
  await fundWallet(api.baseUrl, email, 30);
  const started: AssignedRun[] = [];
  const waiting: Array<(answer: Answer) => void> = [];
  const node = await serve(api.baseUrl, await enrollNode(api.baseUrl, email), {
    agents: [AGENT],
    answer: (run) => {
      started.push(run);
      return new Promise((resolve) => waiting.push(resolve));
    },
  });
  return {
    api,
    dataDir,
    user: { email, token },
    node,
    started,
    release: (answer = { status: 'succeeded', output: { answered: true } }) => waiting.splice(0).forEach((resolve) => resolve(answer)),
  };
}

function startRun(
  api: SpawnedSvcApi,
  user: { email: string; token: string },
): Promise<{ status: number; body: Record<string, any> } | Error> {
  return fetch(`${api.baseUrl}/v1/swarm/execute`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'idempotency-key': randomUUID() },
    body: JSON.stringify({ user_id: user.email, agent_id: AGENT, input: { corpus: '/srv/docs', question: 'Where are the backups?' } }),
  }).then(
    async (response) => ({ status: response.status, body: (await response.json()) as Record<string, any> }),
    (error: unknown) => error as Error,
  );
}

async function nodeHasRun(started: AssignedRun[]): Promise<AssignedRun> {
  return waitFor(async () => started[0], 'the node to take the run', 20_000);
}

/** The exit of the process, or a clear failure when it does not come (a connection holding the stop, say). */
async function exitOf(api: SpawnedSvcApi, timeoutMs = 20_000): Promise<{ exitCode: number | undefined; signal: string | undefined }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`svc-api did not exit within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const result = await Promise.race([api.process, timeout]);
    return { exitCode: result.exitCode, signal: result.signal };
  } finally {
    clearTimeout(timer);
  }
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One HTTP/1.1 connection driven by hand: a request can be left half-sent, and the server's close is seen. */
class RawConnection {
  readonly #socket: Socket;
  #buffer = '';
  #notify: (() => void) | undefined;
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      this.#notify?.();
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => this.#notify?.());
  }

  static open(baseUrl: string): Promise<RawConnection> {
    const { hostname, port } = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  get isClosed(): boolean {
    return this.#socket.destroyed;
  }

  write(text: string): void {
    this.#socket.write(text);
  }

  async response(): Promise<RawResponse> {
    return waitFor(
      async () => {
        const parsed = this.#parse();
        if (parsed !== undefined) return parsed;
        if (this.isClosed) throw new Error(`the server closed the connection; received: ${JSON.stringify(this.#buffer)}`);
        await new Promise<void>((resolve) => (this.#notify = resolve));
        return undefined;
      },
      'a response on the raw connection',
      20_000,
    );
  }

  destroy(): void {
    this.#socket.destroy();
  }

  #parse(): RawResponse | undefined {
    const end = this.#buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [statusLine, ...lines] = this.#buffer.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length'] ?? 0);
    if (this.#buffer.length < end + 4 + length) return undefined;
    const body = this.#buffer.slice(end + 4, end + 4 + length);
    this.#buffer = this.#buffer.slice(end + 4 + length);
    return { status: Number(statusLine!.split(' ')[1]), headers, body };
  }
}

function serviceState(dataDir: string, email: string) {
  const db = new Database(join(dataDir, 'svc-api.db'), { readonly: true });
  try {
    return {
      runs: db.prepare('SELECT status, charged_cents FROM runs WHERE user_id = ?').all(email.toLowerCase()) as Array<{
        status: string;
        charged_cents: number;
      }>,
      entries: db
        .prepare('SELECT kind, amount_cents FROM ledger_entries WHERE user_id = ? ORDER BY entry_id')
        .all(email.toLowerCase())
        .map((entry: any) => [entry.kind, entry.amount_cents]),
      balance: (db.prepare('SELECT balance_cents FROM wallets WHERE user_id = ?').get(email.toLowerCase()) as { balance_cents: number })
        .balance_cents,
    };
  } finally {
    db.close();
  }
}

describe('svc-api on SIGTERM', () => {
  it("refuses new work, takes in the node's result of the run in flight, answers it, closes idle connections, exits 0", async () => {
    const { api, dataDir, user, node, started, release } = await setup();
    try {
      // A keep-alive connection that has finished its request: idle when the stop begins.
      const idle = await RawConnection.open(api.baseUrl);
      idle.write('GET /v1/swarm/agents HTTP/1.1\r\nHost: svc\r\n\r\n');
      expect((await idle.response()).status).toBe(200);
      // A request whose headers are still arriving when the stop begins: it is complete only during the drain.
      const late = await RawConnection.open(api.baseUrl);
      late.write('GET /v1/swarm/agents HTTP/1.1\r\nHost: svc\r\n');

      const reply = startRun(api, user);
      await nodeHasRun(started);
      api.process.kill('SIGTERM');

      // The idle connection is closed: it cannot hold the stop.
      await idle.closed;
      // A request that reaches the service while it drains: problem details, Retry-After, and no keep-alive.
      late.write('\r\n');
      const refused = await late.response();
      expect(refused.status).toBe(503);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers.connection).toBe('close');
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'service_unavailable', status: 503 });
      await late.closed;
      // New work is refused too.
      const more = await startRun(api, user);
      expect(more).toMatchObject({ status: 503 });

      // The run in flight: the stop waits for it, its node's result still comes in, and the client gets the answer.
      expect(api.process.exitCode).toBeNull();
      release();
      const answer = await reply;
      expect(answer).not.toBeInstanceOf(Error);
      expect(answer).toMatchObject({
        status: 200,
        body: { status: 'succeeded', charged_cents: 15, balance_cents: 15, output: { answered: true } },
      });

      expect(await exitOf(api)).toEqual({ exitCode: 0, signal: undefined });
      expect(serviceState(dataDir, user.email)).toEqual({
        runs: [{ status: 'succeeded', charged_cents: 15 }],
        entries: [
          ['credit', 30],
          ['debit', 15],
        ],
        balance: 15,
      });
    } finally {
      await node.stop();
      await api.stop();
    }
  });

  it('when the grace is over, answers 202: the run goes on on its node, and its result reaches the next start', async () => {
    const { api, dataDir, user, node, started, release } = await setup(['--shutdown-grace', '1']);
    try {
      const reply = startRun(api, user);
      const run = await nodeHasRun(started);
      api.process.kill('SIGTERM');
      const answer = await reply;
      expect(answer).toMatchObject({ status: 202, body: { run_id: run.run_id, status: 'running', charged_cents: 15 } });
      expect(await exitOf(api)).toEqual({ exitCode: 0, signal: undefined });
      // Charged once, not refunded: the node still holds the run.
      expect(serviceState(dataDir, user.email).runs).toEqual([{ status: 'running', charged_cents: 15 }]);

      const restarted = await spawnSvcApi({ dataDir, args: ['--port', String(new URL(api.baseUrl).port)] });
      try {
        release({ status: 'succeeded', output: { after: 'the restart' } });
        await waitFor(
          async () => (serviceState(dataDir, user.email).runs[0]?.status === 'succeeded' ? true : undefined),
          'the result at the next start',
        );
        expect(serviceState(dataDir, user.email)).toMatchObject({
          entries: [
            ['credit', 30],
            ['debit', 15],
          ],
          balance: 15,
        });
      } finally {
        await node.stop();
        await restarted.stop();
      }
    } finally {
      await node.stop();
      await api.stop();
    }
  });

  it('ends the grace at a second signal: the waiting execute answers 202 at once', async () => {
    const { api, user, node, started } = await setup(['--shutdown-grace', '600']);
    try {
      const reply = startRun(api, user);
      await nodeHasRun(started);
      api.process.kill('SIGTERM');
      const refused = await waitFor(async () => {
        const response = await fetch(`${api.baseUrl}/v1/swarm/agents`).catch(() => undefined);
        return response?.status === 503 ? true : undefined;
      }, 'the drain to begin');
      expect(refused).toBe(true);
      api.process.kill('SIGINT');
      expect(await reply).toMatchObject({ status: 202, body: { status: 'running', charged_cents: 15 } });
      expect(await exitOf(api)).toEqual({ exitCode: 0, signal: undefined });
    } finally {
      await node.stop();
      await api.stop();
    }
  });

  it('takes --shutdown-grace in whole seconds, 0 or more, and documents it in --help', async () => {
    const help = await execa('node', [SVC_API_BIN, '--help'], { reject: false });
    expect(help.stdout).toMatch(/--shutdown-grace <s>\s+on SIGTERM[^\n]*\n[^\n]*default 25/);
    for (const bad of ['-1', '1.5', 'soon']) {
      const result = await execa('node', [SVC_API_BIN, '--data-dir', tempDir(), `--shutdown-grace=${bad}`], { reject: false });
      expect(result.exitCode, bad).toBe(2);
      expect(result.stderr).toContain('--shutdown-grace must be a whole number of seconds, 0 or more');
    }
  });
});
