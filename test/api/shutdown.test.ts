// svc-api's graceful stop (docs/operations.md "Stopping svc-api"), on the built binary: SIGTERM closes the listener
// and answers new requests 503, lets the runs in flight finish within --shutdown-grace, fails and refunds the rest
// before the database closes, and exits 0. The agent is a real program that answers when the test releases it, so
// every step waits for an event, never for a time.
import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { waitFor } from '../helpers/funnel.js';
import { SVC_API_BIN, spawnSvcApi, startSvcApi, type SpawnedSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { paidUser, type PaidUser } from './execute-fixtures.js';

const AGENT = 'agent_research_rag_015'; // 15 cents

afterAll(() => removeTempDirs());

/** An agent that records its pid once it has the run, then answers only when the release file appears. */
function gatedAgent(dir: string): { args: string[]; startedFile: string; release(): void } {
  const startedFile = join(dir, 'agent.pid');
  const releaseFile = join(dir, 'agent.release');
  const script = join(dir, 'gated-agent.mjs');
  writeFileSync(
    script,
    `import { existsSync, writeFileSync } from 'node:fs';
let input = ''; process.stdin.setEncoding('utf8'); for await (const chunk of process.stdin) input += chunk;
const run = JSON.parse(input);
writeFileSync(${JSON.stringify(startedFile)}, String(process.pid));
const poll = setInterval(() => {
  if (!existsSync(${JSON.stringify(releaseFile)})) return;
  clearInterval(poll);
  process.stdout.write(JSON.stringify({ answered: true, run_id: run.run_id }));
}, 20);
`,
  );
  return {
    args: ['--agent-command', process.execPath, '--agent-command', script],
    startedFile,
    release: () => writeFileSync(releaseFile, ''),
  };
}

async function fundedDataDir(cents: number): Promise<{ dataDir: string; user: PaidUser }> {
  const dataDir = tempDir('svc-api-drain-');
  const setup = await startSvcApi({ dataDir });
  const user = await paidUser(setup, cents);
  await setup.close();
  return { dataDir, user };
}

function startRun(api: SpawnedSvcApi, user: PaidUser): Promise<{ status: number; body: Record<string, any> } | Error> {
  return fetch(`${api.baseUrl}/v1/swarm/execute`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'idempotency-key': randomUUID() },
    body: JSON.stringify({ user_id: user.email, agent_id: AGENT }),
  }).then(
    async (response) => ({ status: response.status, body: (await response.json()) as Record<string, any> }),
    (error: unknown) => error as Error,
  );
}

async function agentPid(startedFile: string): Promise<number> {
  return waitFor(async () => (existsSync(startedFile) ? Number(readFileSync(startedFile, 'utf8')) || undefined : undefined), 'the agent to start', 20_000);
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

/** True once a new connection is refused: the listener is closed. */
function listenerClosed(baseUrl: string): Promise<true | undefined> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED' ? true : undefined));
  });
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
    return waitFor(async () => {
      const parsed = this.#parse();
      if (parsed !== undefined) return parsed;
      if (this.isClosed) throw new Error(`the server closed the connection; received: ${JSON.stringify(this.#buffer)}`);
      await new Promise<void>((resolve) => (this.#notify = resolve));
      return undefined;
    }, 'a response on the raw connection', 20_000);
  }

  destroy(): void {
    this.#socket.destroy();
  }

  #parse(): RawResponse | undefined {
    const end = this.#buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [statusLine, ...lines] = this.#buffer.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
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
      runs: db.prepare('SELECT status, charged_cents FROM runs WHERE user_id = ?').all(email.toLowerCase()),
      entries: db
        .prepare('SELECT kind, amount_cents FROM ledger_entries WHERE user_id = ? ORDER BY entry_id')
        .all(email.toLowerCase())
        .map((entry: any) => [entry.kind, entry.amount_cents]),
      balance: (db.prepare('SELECT balance_cents FROM wallets WHERE user_id = ?').get(email.toLowerCase()) as { balance_cents: number }).balance_cents,
    };
  } finally {
    db.close();
  }
}

describe('svc-api on SIGTERM', () => {
  it('refuses new work, lets the run in flight finish and answer, closes idle connections, and exits 0', async () => {
    const { dataDir, user } = await fundedDataDir(30);
    const agent = gatedAgent(tempDir('agent-'));
    const api = await spawnSvcApi({ dataDir, args: agent.args });
    try {
      // A keep-alive connection that has finished its request: idle when the stop begins.
      const idle = await RawConnection.open(api.baseUrl);
      idle.write('GET /v1/swarm/agents HTTP/1.1\r\nHost: svc\r\n\r\n');
      expect((await idle.response()).status).toBe(200);
      // A request whose headers are still arriving when the stop begins: it is complete only during the drain.
      const late = await RawConnection.open(api.baseUrl);
      late.write('GET /v1/swarm/agents HTTP/1.1\r\nHost: svc\r\n');

      const reply = startRun(api, user);
      const pid = await agentPid(agent.startedFile);
      api.process.kill('SIGTERM');

      // No new connection, and the idle one is closed: neither can hold the stop.
      await waitFor(() => listenerClosed(api.baseUrl), 'the listener to close');
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

      // The run in flight is still running: the stop waits for it, and the client gets its answer.
      expect(process.kill(pid, 0)).toBe(true);
      expect(api.process.exitCode).toBeNull();
      agent.release();
      const answer = await reply;
      expect(answer).not.toBeInstanceOf(Error);
      expect(answer).toMatchObject({ status: 200, body: { status: 'succeeded', charged_cents: 15, balance_cents: 15, output: { answered: true } } });

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
      await api.stop();
    }
  });

  it('fails and refunds a run still in flight when the grace is over, answers it, and exits 0 with nothing left', async () => {
    const { dataDir, user } = await fundedDataDir(30);
    const agent = gatedAgent(tempDir('agent-'));
    const api = await spawnSvcApi({ dataDir, args: [...agent.args, '--shutdown-grace', '1'] });
    try {
      const reply = startRun(api, user);
      const pid = await agentPid(agent.startedFile);
      api.process.kill('SIGTERM');

      // Never released: the grace runs out, the run is cancelled and refunded, and the client is told so.
      const answer = await reply;
      expect(answer).toMatchObject({ status: 200, body: { status: 'failed', charged_cents: 0, balance_cents: 30, output: { error: 'aborted' } } });
      expect(await exitOf(api)).toEqual({ exitCode: 0, signal: undefined });
      await waitFor(async () => (isAlive(pid) ? undefined : true), 'the cancelled agent to be gone');
      const refunded = {
        runs: [{ status: 'failed', charged_cents: 0 }],
        entries: [
          ['credit', 30],
          ['debit', 15],
          ['refund', 15],
        ],
        balance: 30,
      };
      expect(serviceState(dataDir, user.email)).toEqual(refunded);

      // The next start finds nothing to recover: no run was left `running`, so nothing is refunded twice.
      const restarted = await startSvcApi({ dataDir });
      await restarted.close();
      expect(serviceState(dataDir, user.email)).toEqual(refunded);
    } finally {
      await api.stop();
    }
  });

  it('ends the grace at a second signal: the run is refunded and answered at once', async () => {
    const { dataDir, user } = await fundedDataDir(30);
    const agent = gatedAgent(tempDir('agent-'));
    const api = await spawnSvcApi({ dataDir, args: [...agent.args, '--shutdown-grace', '600'] });
    try {
      const reply = startRun(api, user);
      await agentPid(agent.startedFile);
      api.process.kill('SIGTERM');
      await waitFor(() => listenerClosed(api.baseUrl), 'the listener to close');
      api.process.kill('SIGINT');
      expect(await reply).toMatchObject({ status: 200, body: { status: 'failed', charged_cents: 0, output: { error: 'aborted' } } });
      expect(await exitOf(api)).toEqual({ exitCode: 0, signal: undefined });
      expect(serviceState(dataDir, user.email).balance).toBe(30);
    } finally {
      await api.stop();
    }
  });

  it('takes --shutdown-grace in whole seconds, 0 or more, and documents it in --help', async () => {
    const help = await execa('node', [SVC_API_BIN, '--help'], { reject: false });
    expect(help.stdout).toMatch(/--shutdown-grace <s>\s+.*default 25/);
    for (const bad of ['-1', '1.5', 'soon']) {
      const result = await execa('node', [SVC_API_BIN, '--data-dir', tempDir(), `--shutdown-grace=${bad}`], { reject: false });
      expect(result.exitCode, bad).toBe(2);
      expect(result.stderr).toContain('--shutdown-grace must be a whole number of seconds, 0 or more');
    }
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
