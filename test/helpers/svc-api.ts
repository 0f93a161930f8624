// Starts the real svc-api for a test: on port 0, with a SQLite file in a fresh temp directory, or with its own
// database on the tests' PostgreSQL server when the engine under test is PostgreSQL (test-engine.ts).
import Database from 'better-sqlite3';
import { execa, type ResultPromise } from 'execa';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { startService, type RunningService, type ServiceOptions } from '../../src/api/server.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import { postgresDatabaseFor, testEngine } from './test-engine.js';
import { syncPostgres } from './sync-postgres.js';
import { removeTempDirs, tempDir } from './temp.js';
import { smtpUrl } from './mailbox.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SVC_API_BIN = fileURLToPath(new URL('../../bin/svc-api.js', import.meta.url));
export const SWARM_NODE_BIN = fileURLToPath(new URL('../../bin/swarm-node.js', import.meta.url));

/** The service as tests see it: `db` reads its database synchronously, whichever the engine (test-database.ts). */
export type TestService = Omit<RunningService, 'db'> & { db: SqliteDatabase };

/**
 * Every test connects from 127.0.0.1, so the cap on connections per address is set, not left to its default: above
 * what any test opens at once (the tests of the cap set their own).
 */
export const TEST_MAX_CONNECTIONS_PER_ADDRESS = 1024;
/** Every user of a test file signs in from 127.0.0.1: the per-client cap is tested with its own low value. */
export const TEST_CODES_PER_CLIENT = 10_000;

/** In this process: tests can pass a MovableClock and read the service's database. */
export async function startSvcApi(given: Partial<ServiceOptions> = {}): Promise<TestService> {
  const options = { maxConnectionsPerAddress: TEST_MAX_CONNECTIONS_PER_ADDRESS, signInCodesPerClient: TEST_CODES_PER_CLIENT, ...given };
  const dataDir = options.dataDir ?? tempDir('svc-api-');
  // Its mail goes to the run's SMTP server, where the tests read it (mailbox.ts).
  const mail = { SVC_SMTP_URL: smtpUrl() };
  if (testEngine() === 'sqlite') {
    return (await startService({ dataDir, sandbox: true, ...options, env: { ...mail, ...options.env } })) as TestService;
  }
  const url = await postgresDatabaseFor(dataDir);
  const running = await startService({ sandbox: true, ...options, dataDir, env: { SVC_DATABASE_URL: url, ...mail, ...options.env } });
  const reader = syncPostgres(url);
  return {
    ...running,
    db: reader.db,
    async close(closeOptions) {
      await running.close(closeOptions);
      await reader.close();
    },
  };
}

/**
 * The in-process svc-api for the tests of a file or a describe block: started in beforeAll (with `options`, or what
 * the function gives then), closed in afterAll, after the block's own afterAll hooks (vitest runs them in reverse),
 * and the temp directories removed. The handle reads as the running service once it has started.
 */
export function useSvcApi(options: Partial<ServiceOptions> | (() => Partial<ServiceOptions>) = {}): TestService {
  let running: TestService | undefined;
  beforeAll(async () => {
    running = await startSvcApi(typeof options === 'function' ? options() : options);
  });
  afterAll(async () => {
    await running?.close();
    running = undefined;
    removeTempDirs();
  });
  return new Proxy({} as TestService, {
    get(_target, key) {
      if (running === undefined) throw new Error(`useSvcApi: the service is not running (read .${String(key)} inside a test or a hook)`);
      const value: unknown = Reflect.get(running, key);
      return typeof value === 'function' ? value.bind(running) : value;
    },
  });
}

/**
 * Reads the database of the service whose data directory is `dataDir` (a spawned one, or one that is stopped):
 * its SQLite file read-only, or its PostgreSQL database.
 */
export async function openDatabaseOf(dataDir: string): Promise<{ db: SqliteDatabase; close(): Promise<void> }> {
  if (testEngine() === 'postgres') return syncPostgres(await postgresDatabaseFor(dataDir));
  const db = new Database(join(dataDir, 'svc-api.db'), { readonly: true });
  return { db, close: async () => void db.close() };
}

export interface SpawnedSvcApi {
  baseUrl: string;
  dataDir: string;
  process: ResultPromise;
  /** All it wrote on stderr so far (its log lines, with SVC_LOG_LEVEL set), from its first byte. */
  stderr(): string;
  stop(): Promise<void>;
}

/** As its own process, the built binary: for start-up, restart and signal behaviour. */
export async function spawnSvcApi(
  options: { dataDir?: string; args?: string[]; env?: Record<string, string> } = {},
): Promise<SpawnedSvcApi> {
  const dataDir = options.dataDir ?? tempDir('svc-api-');
  const database = testEngine() === 'postgres' ? { SVC_DATABASE_URL: await postgresDatabaseFor(dataDir) } : {};
  const cap = [
    '--max-connections-per-address',
    String(TEST_MAX_CONNECTIONS_PER_ADDRESS),
    '--sign-in-codes-per-client',
    String(TEST_CODES_PER_CLIENT),
  ];
  const child = execa('node', [SVC_API_BIN, '--port', '0', '--data-dir', dataDir, '--sandbox', ...cap, ...(options.args ?? [])], {
    env: { SVC_LOG_LEVEL: 'silent', SVC_SMTP_URL: smtpUrl(), ...database, ...options.env },
    extendEnv: true,
    reject: false,
    buffer: { stdout: false, stderr: true },
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`svc-api did not start: ${seen}`)), 15_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /svc-api listening on (\S+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void child.then((result) => {
      clearTimeout(timer);
      reject(new Error(`svc-api exited ${result.exitCode}: ${String(result.stderr)}`));
    });
  });
  return {
    baseUrl,
    dataDir,
    process: child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await child;
    },
  };
}

/**
 * Two svc-api instances on one database for the tests of a describe block, as several serve one service
 * (docs/operations.md "svc-api on PostgreSQL: several instances"): on PostgreSQL, two services in this process, each
 * with its own pool, sharing one data directory (its keys) and so one database; on SQLite, whose deployment is one
 * instance, that instance twice. Started in beforeAll, closed in afterAll.
 */
export function useSvcApiPair(options: Partial<ServiceOptions> = {}): [TestService, TestService] {
  let pair: TestService[] = [];
  beforeAll(async () => {
    const dataDir = tempDir('svc-api-pair-');
    const first = await startSvcApi({ ...options, dataDir });
    pair = [first, testEngine() === 'postgres' ? await startSvcApi({ ...options, dataDir }) : first];
  });
  afterAll(async () => {
    await Promise.all([...new Set(pair)].map((service) => service.close()));
    pair = [];
    removeTempDirs();
  });
  const handle = (index: number): TestService =>
    new Proxy({} as TestService, {
      get(_target, key) {
        const running = pair[index];
        if (running === undefined) throw new Error(`useSvcApiPair: not running (read .${String(key)} inside a test or a hook)`);
        const value: unknown = Reflect.get(running, key);
        return typeof value === 'function' ? value.bind(running) : value;
      },
    });
  return [handle(0), handle(1)];
}
