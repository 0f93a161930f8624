// A real PostgreSQL server for the tests on that engine (docs/operations.md "Running the tests on PostgreSQL"):
// initdb into a temporary directory, started with pg_ctl on a loopback port, stopped and removed at the end. The
// server refuses to run as root, and tests run as root on CI and here: then the directory belongs to, and the
// server runs as, `nobody`. Debian's `postgresql` package keeps its programs in /usr/lib/postgresql/<major>/bin,
// off PATH; a source build or another distribution has them on PATH.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** postgres://svc@127.0.0.1:<port>/postgres: the superuser of this throw-away server, trusted on loopback. */
  adminUrl: string;
  /** Creates a database on this server and answers its URL. */
  createDatabase(name: string): Promise<string>;
  stop(): void;
}

export interface PostgresServerOptions {
  /**
   * Keep fsync and full-page writes (a bench): commits are flushed as SQLite's WAL with synchronous=NORMAL flushes
   * them, at checkpoints, not at each commit (synchronous_commit=off). The tests leave them off: they never crash
   * the machine, and the server's flushes would only slow them.
   */
  durable?: boolean;
  /** More server settings, `name=value` each (a bench preloads pg_stat_statements). */
  settings?: string[];
}

const UNPRIVILEGED_USER = 'nobody';

export function findPostgresBin(): string {
  const candidates = [
    ...(process.env.PG_BIN === undefined ? [] : [process.env.PG_BIN]),
    ...(existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .filter((major) => /^\d+$/.test(major))
          .sort((a, b) => Number(b) - Number(a))
          .map((major) => `/usr/lib/postgresql/${major}/bin`)
      : []),
    ...(process.env.PATH ?? '').split(':'),
  ];
  const found = candidates.find((dir) => dir !== '' && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl')));
  if (found === undefined) {
    throw new Error(
      "no PostgreSQL server programs (initdb, pg_ctl): install Debian's postgresql package, or set PG_BIN to their directory",
    );
  }
  return found;
}

export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const bin = findPostgresBin();
  const root = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  const dataDir = join(root, 'data');
  const asRoot = process.getuid?.() === 0;
  const run = (program: string, args: string[]): void => {
    const command = asRoot ? ['runuser', ['-u', UNPRIVILEGED_USER, '--', join(bin, program), ...args]] : [join(bin, program), args];
    const result = spawnSync(command[0] as string, command[1] as string[], { encoding: 'utf8', cwd: root });
    if (result.status !== 0) throw new Error(`${program} failed (${result.status}): ${result.stderr}${result.stdout}`);
  };
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', UNPRIVILEGED_USER], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', UNPRIVILEGED_USER], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
  }
  chmodSync(root, 0o700);
  const port = await freePort();
  try {
    run('initdb', ['-D', dataDir, '-U', 'svc', '--auth=trust', '--encoding=UTF8', '--no-sync']);
    // The socket in the server's own directory (not /var/run/postgresql, which may not exist or be writable).
    const settings = `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${root} ${options.durable === true ? '' : '-c fsync=off -c full_page_writes=off '}-c synchronous_commit=off -c max_connections=300${(options.settings ?? []).map((setting) => ` -c ${setting}`).join('')}`;
    run('pg_ctl', ['-D', dataDir, '-o', settings, '-l', join(root, 'server.log'), '-w', '-t', '120', 'start']);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const adminUrl = `postgres://svc@127.0.0.1:${port}/postgres`;
  return {
    adminUrl,
    async createDatabase(name) {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await admin.end();
      }
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return url.toString();
    },
    stop() {
      try {
        run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}
