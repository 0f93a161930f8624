// The node's local SQLite: registrations, the run journal, schedules, the daemon's state, one module per
// table beside this one. WAL and a busy timeout (src/lib/sqlite.ts) let several swarm-node processes and the daemon
// share it.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openDatabase, type SqliteDatabase } from '../../lib/sqlite.js';
import { giveToDirectoryOwner } from '../host/files.js';

export const NODE_MIGRATIONS: readonly string[] = [
  /* 1 */ `
  CREATE TABLE registrations (
    agent_id        TEXT PRIMARY KEY,
    every_seconds   INTEGER CHECK (every_seconds IS NULL OR every_seconds >= 1),
    daily_cap_cents INTEGER CHECK (daily_cap_cents IS NULL OR daily_cap_cents >= 0),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  );

  -- The run journal. A row is written with its Idempotency-Key BEFORE execute is called, so a crash or a lost
  -- answer leaves a 'pending' row whose key is replayed later: the service charges at most once per row.
  CREATE TABLE runs (
    idempotency_key TEXT PRIMARY KEY,
    agent_id        TEXT NOT NULL,
    source          TEXT NOT NULL CHECK (source IN ('cli', 'wizard', 'daemon')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'insufficient_balance')),
    run_id          TEXT UNIQUE,
    charged_cents   INTEGER NOT NULL DEFAULT 0 CHECK (charged_cents >= 0),
    balance_cents   INTEGER,
    price_cents     INTEGER NOT NULL,
    error_code      TEXT,
    output_json     TEXT,
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER
  );
  CREATE INDEX runs_by_agent ON runs (agent_id, started_at);
  CREATE INDEX runs_by_time ON runs (started_at);
  CREATE INDEX runs_pending ON runs (status) WHERE status = 'pending';

  CREATE TABLE schedules (
    agent_id      TEXT PRIMARY KEY REFERENCES registrations (agent_id) ON DELETE CASCADE,
    next_run_at   INTEGER,
    last_run_at   INTEGER,
    paused_reason TEXT,
    paused_until  INTEGER
  );

  CREATE TABLE daemon_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  );
  `,
  /* 2 */ `
  -- Whose run it is, and which process is waiting for its answer: a pending row is replayed only with its own
  -- user's token (keys are per user at the service), and not while the process that wrote it is still alive.
  ALTER TABLE runs ADD COLUMN user_id TEXT;
  ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
  `,
  /* 3 */ `
  -- The node that ran a run (the service routes each run to one of the user's nodes), and the input it was asked with
  -- (a replay of the key must send the same request).
  ALTER TABLE runs ADD COLUMN node_id TEXT;
  ALTER TABLE runs ADD COLUMN input_json TEXT;

  -- The runs this node executes (docs/api.md "Runs on the node"): written before the agent starts, its result kept
  -- before it is reported, so a node that crashes never runs a run twice and reports a finished one when it is back.
  CREATE TABLE executions (
    run_id        TEXT PRIMARY KEY,
    agent_id      TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    lease_id      TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('running', 'finished', 'reported', 'lost')),
    result_status TEXT CHECK (result_status IN ('succeeded', 'failed')),
    output_json   TEXT,
    owner_pid     INTEGER,
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    reported_at   INTEGER
  );
  CREATE INDEX executions_open ON executions (status) WHERE status IN ('running', 'finished');
  `,
  /* 4 */ `
  -- The input a run of the agent starts from when the run gives none or only some fields (register --input): the
  -- daemon's scheduled runs have no one to ask, and a corpus or a repository rarely changes between runs.
  ALTER TABLE registrations ADD COLUMN default_input_json TEXT;
  `,
  /* 5 */ `
  -- What \`runs\` totals, kept as the journal changes (issue 17): counting every row at each call took 43 ms at 100k
  -- rows and grew with the journal. The triggers move a row's count and cents between (agent, status) cells in the
  -- statement that writes the row, so the totals are never out of step with it.
  CREATE TABLE run_totals (
    agent_id      TEXT NOT NULL,
    status        TEXT NOT NULL,
    runs          INTEGER NOT NULL,
    charged_cents INTEGER NOT NULL,
    PRIMARY KEY (agent_id, status)
  ) WITHOUT ROWID;
  INSERT INTO run_totals SELECT agent_id, status, COUNT(*), COALESCE(SUM(charged_cents), 0) FROM runs GROUP BY agent_id, status;
  CREATE TRIGGER run_totals_insert AFTER INSERT ON runs BEGIN
    INSERT INTO run_totals VALUES (NEW.agent_id, NEW.status, 1, NEW.charged_cents)
      ON CONFLICT (agent_id, status) DO UPDATE SET runs = runs + 1, charged_cents = charged_cents + excluded.charged_cents;
  END;
  CREATE TRIGGER run_totals_update AFTER UPDATE OF agent_id, status, charged_cents ON runs BEGIN
    UPDATE run_totals SET runs = runs - 1, charged_cents = charged_cents - OLD.charged_cents WHERE agent_id = OLD.agent_id AND status = OLD.status;
    INSERT INTO run_totals VALUES (NEW.agent_id, NEW.status, 1, NEW.charged_cents)
      ON CONFLICT (agent_id, status) DO UPDATE SET runs = runs + 1, charged_cents = charged_cents + excluded.charged_cents;
  END;
  CREATE TRIGGER run_totals_delete AFTER DELETE ON runs BEGIN
    UPDATE run_totals SET runs = runs - 1, charged_cents = charged_cents - OLD.charged_cents WHERE agent_id = OLD.agent_id AND status = OLD.status;
  END;
  `,
  /* 6 */ `
  -- The labels a run asked its node to carry (run --label, issue 18): a replay of the key must send the same request.
  ALTER TABLE runs ADD COLUMN labels_json TEXT;
  `,
  /* 7 */ `
  -- The service's schedule that runs the agent on this node (docs/api.md "Schedules"): the daemon's own interval,
  -- moved there at its start, or one made by register --every. A row with an interval and none is not moved yet.
  ALTER TABLE registrations ADD COLUMN schedule_id TEXT;
  `,
];

/**
 * Who opens the database. A command lives for a moment; the daemon lives for months and reads only schedules and
 * recent runs, so its page cache is a quarter of SQLite's default 2 MiB per connection (filled as the journal
 * grows), which keeps its resident set flat over months of runs.
 */
export type StoreRole = 'command' | 'daemon';

const DAEMON_CACHE_KIB = 512;

/**
 * Opens (creating or migrating) the node's database. Before a migration the file is copied aside with VACUUM INTO,
 * which is consistent even while the daemon writes (a plain copy can miss pages still in the WAL).
 */
export function openNodeStore(path: string, role: StoreRole = 'command'): SqliteDatabase {
  const directory = dirname(path);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const existed = existsSync(path);
  const db = openDatabase(path, {
    migrations: NODE_MIGRATIONS,
    beforeMigrate: (open, from) => {
      if (from === 0) return;
      const backups = join(directory, 'backups');
      mkdirSync(backups, { recursive: true, mode: 0o700 });
      const target = join(backups, `swarm-node.db.schema-v${from}.${new Date().toISOString().replace(/[:.]/g, '-')}`);
      open.prepare('VACUUM INTO ?').run(target);
      chmodSync(target, 0o600);
    },
  });
  if (!existed) {
    // Whatever the umask of the shell that made it: the journal is the node's, never an agent's or another user's.
    for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, 0o600);
    giveToDirectoryOwner(directory, [path, `${path}-wal`, `${path}-shm`]);
  }
  if (role === 'daemon') db.pragma(`cache_size = -${DAEMON_CACHE_KIB}`);
  return db;
}
