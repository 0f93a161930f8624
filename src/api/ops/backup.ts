// `svc-api backup --data-dir DIR --out FILE` (docs/operations.md "Backing up svc-api"): a consistent copy of the
// service's SQLite database taken with SQLite's online backup while the service keeps running and writing. The copy
// is made beside FILE, checked (integrity_check) and only then given FILE's name, never over an existing file: a
// half-written or clobbered backup is worse than none. PostgreSQL is backed up with pg_dump instead.
import { existsSync, linkSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';

export const BACKUP_USAGE = `Usage: svc-api backup --data-dir <dir> --out <file> [--json]

Copies svc-api's SQLite database (<dir>/svc-api.db) to <file> while the service runs: a consistent snapshot,
checked before it is kept. <file> must not exist. On PostgreSQL (SVC_DATABASE_URL) use pg_dump instead.

Options:
  --data-dir <dir>      the service's data directory                     required
  --out <file>          where the copy goes (mode 0600)                  required
  --json                print one JSON document on stdout
  -h, --help            show this help

Exit codes: 0 copied, 1 failure (nothing left at <file>), 2 usage.

Example:
  svc-api backup --data-dir /var/lib/svc-api --out /var/backups/svc-api-$(date -u +%Y%m%dT%H%M%SZ).db
`;

interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export interface BackupReport {
  source: string;
  out: string;
  schema_version: number;
  pages: number;
  bytes: number;
}

/** Runs the command; returns the exit code. */
export async function runBackupCommand(argv: string[], env: NodeJS.ProcessEnv = process.env, io: Io = process): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'data-dir': { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return usage(io, (error as Error).message);
  }
  if (values.help) {
    io.stdout.write(BACKUP_USAGE);
    return 0;
  }
  if (env.SVC_DATABASE_URL !== undefined) {
    return usage(
      io,
      'SVC_DATABASE_URL is set: the database is PostgreSQL; back it up with pg_dump (docs/operations.md "Backing up svc-api")',
    );
  }
  if (values['data-dir'] === undefined) return usage(io, '--data-dir is required');
  if (values.out === undefined) return usage(io, '--out is required');
  const source = join(resolve(values['data-dir']), 'svc-api.db');
  const out = resolve(values.out);
  if (!existsSync(source)) return failure(io, `there is no svc-api database at ${source}`);
  if (existsSync(out)) return failure(io, `${out} exists; a backup never replaces a file: name another, or move it away first`);

  // The copy holds e-mails and hashes of credentials: only its owner reads it.
  process.umask(0o077);
  const partial = `${out}.partial-${process.pid}`;
  try {
    const report = await copyDatabase(source, partial);
    // link, not rename: it fails if FILE appeared meanwhile, where rename would replace it.
    linkSync(partial, out);
    const done: BackupReport = { ...report, source, out };
    if (values.json) io.stdout.write(`${JSON.stringify(done)}\n`);
    else
      io.stdout.write(
        `svc-api: backed up ${source} to ${out} (schema version ${done.schema_version}, ${done.pages} pages, ${done.bytes} bytes)\n`,
      );
    return 0;
  } catch (error) {
    return failure(io, `the backup failed: ${(error as Error).message}`);
  } finally {
    rmSync(partial, { force: true });
    for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${partial}${suffix}`, { force: true });
  }
}

async function copyDatabase(source: string, destination: string): Promise<Omit<BackupReport, 'source' | 'out'>> {
  // Opened without migrations or pragmas that write: a backup never changes the database it copies.
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    await db.backup(destination, {
      // The rest in one step: one read of a consistent snapshot. In WAL mode that read holds no writer up, while
      // small steps would start over whenever the service wrote between two of them (SQLite's backup restarts).
      progress: ({ totalPages }) => totalPages,
    });
  } finally {
    db.close();
  }
  const copy = new Database(destination, { fileMustExist: true });
  try {
    const check = copy.pragma('integrity_check', { simple: true });
    if (check !== 'ok') throw new Error(`the copy failed its integrity check: ${String(check)}`);
    const pages = copy.pragma('page_count', { simple: true }) as number;
    const pageSize = copy.pragma('page_size', { simple: true }) as number;
    return { schema_version: copy.pragma('user_version', { simple: true }) as number, pages, bytes: pages * pageSize };
  } finally {
    copy.close();
  }
}

function usage(io: Io, message: string): number {
  io.stderr.write(`svc-api backup: ${message}\n\n${BACKUP_USAGE}`);
  return 2;
}

function failure(io: Io, message: string): number {
  io.stderr.write(`svc-api backup: ${message}\n`);
  return 1;
}
