// The service's SQLite schema as shipped, one entry per migration (src/lib/sqlite.ts). Times are integer milliseconds since the
// epoch; money is integer cents. Append new migrations; never edit a shipped one.

export const SERVICE_MIGRATIONS: readonly string[] = [
  /* 1: the paid gate, tokens, nodes, the ledger, runs, idempotency, the sandbox provider */ `
  -- The service's own record of provider payments: written by a verified webhook or by asking the provider.
  CREATE TABLE payments (
    payment_id     TEXT PRIMARY KEY,
    status         TEXT NOT NULL,
    customer_email TEXT NOT NULL,
    offer_id       TEXT NOT NULL,
    merchant_id    TEXT NOT NULL,
    amount_cents   INTEGER NOT NULL CHECK (amount_cents >= 0),
    confirmed_at   INTEGER,
    recorded_at    INTEGER NOT NULL
  );
  CREATE INDEX payments_by_customer ON payments (customer_email, offer_id, merchant_id, status);

  -- Each provider event id is applied once; replays are acknowledged and ignored.
  CREATE TABLE webhook_events (
    event_id    TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    received_at INTEGER NOT NULL
  );

  CREATE TABLE sessions (
    session_id   TEXT PRIMARY KEY,
    tier_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'active')),
    payment_id   TEXT UNIQUE REFERENCES payments (payment_id),
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    activated_at INTEGER
  );

  -- Deploy tokens are kept only as SHA-256 hashes (DECISIONS.md "Tokens").
  CREATE TABLE deploy_tokens (
    token_hash TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER,
    revoked_at INTEGER
  );
  CREATE INDEX deploy_tokens_by_session ON deploy_tokens (session_id);

  CREATE TABLE nodes (
    node_id     TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (session_id),
    user_id     TEXT NOT NULL,
    tier_id     TEXT NOT NULL,
    enrolled_at INTEGER NOT NULL
  );

  -- Issued access tokens by jti (never the token itself), for audit and future revocation.
  CREATE TABLE issued_tokens (
    jti        TEXT PRIMARY KEY,
    sub        TEXT NOT NULL,
    tier       TEXT NOT NULL,
    kid        TEXT NOT NULL,
    payment_id TEXT NOT NULL REFERENCES payments (payment_id),
    issued_at  INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );

  CREATE TABLE wallets (
    user_id       TEXT PRIMARY KEY,
    balance_cents INTEGER NOT NULL DEFAULT 0 CHECK (balance_cents >= 0),
    updated_at    INTEGER NOT NULL
  );

  -- Every change of a balance is one entry; the balance is their sum. A payment credits once; a run is debited
  -- once and refunded at most once.
  CREATE TABLE ledger_entries (
    entry_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('credit', 'debit', 'refund')),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    payment_id   TEXT UNIQUE REFERENCES payments (payment_id),
    run_id       TEXT,
    created_at   INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX ledger_entries_run_kind ON ledger_entries (run_id, kind) WHERE run_id IS NOT NULL;
  CREATE INDEX ledger_entries_by_user ON ledger_entries (user_id, entry_id);

  CREATE TABLE runs (
    run_id        TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL,
    agent_id      TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    charged_cents INTEGER NOT NULL CHECK (charged_cents >= 0),
    output_json   TEXT,
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER
  );
  CREATE INDEX runs_by_user ON runs (user_id, started_at);

  -- Idempotency-Key per user (DECISIONS.md "Execute"): the first response is kept and replayed for 24 h.
  CREATE TABLE idempotency_keys (
    user_id         TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('in_progress', 'done')),
    status_code     INTEGER,
    response_json   TEXT,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (user_id, idempotency_key)
  );

  -- The sandbox payment provider's own books (svc-api --sandbox). It stands for an external system, so the
  -- service never reads this table directly: only through the provider adapter and the webhook.
  CREATE TABLE sandbox_payments (
    payment_id         TEXT PRIMARY KEY,
    status             TEXT NOT NULL,
    customer_email     TEXT NOT NULL,
    offer_id           TEXT NOT NULL,
    merchant_id        TEXT NOT NULL,
    amount_cents       INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    confirmed_at       INTEGER,
    webhook_event_id   TEXT,
    webhook_delivered_at INTEGER,
    webhook_attempts   INTEGER NOT NULL DEFAULT 0
  );
  `,
  /* 2: wallet page sessions */ `
  -- The wallet page exchanges the JWT for a session cookie (DECISIONS.md "Wallet page"). Only the SHA-256 of the
  -- cookie's random value is kept, so a copy of the database cannot sign anyone in.
  CREATE TABLE wallet_sessions (
    session_hash TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL,
    tier         TEXT NOT NULL,
    token_jti    TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
  );
  CREATE INDEX wallet_sessions_by_expiry ON wallet_sessions (expires_at);
  `,
  /* 3: node credentials; wallet sessions of tokens without a jti */ `
  -- Enrollment gives a node its own long-lived credential (docs/api.md "Node credential"); only its SHA-256 is kept,
  -- so a copy of the database signs no node in. Nodes enrolled before have none until they enroll again.
  ALTER TABLE nodes ADD COLUMN credential_hash TEXT;
  CREATE UNIQUE INDEX nodes_by_credential ON nodes (credential_hash);

  -- A token that verify accepts may carry no jti (RFC 7519 makes it optional; another implementation may omit it),
  -- and such a token must sign in to the wallet page too.
  CREATE TABLE wallet_sessions_v3 (
    session_hash TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL,
    tier         TEXT NOT NULL,
    token_jti    TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
  );
  INSERT INTO wallet_sessions_v3 SELECT session_hash, user_id, tier, token_jti, created_at, expires_at FROM wallet_sessions;
  DROP TABLE wallet_sessions;
  ALTER TABLE wallet_sessions_v3 RENAME TO wallet_sessions;
  CREATE INDEX wallet_sessions_by_expiry ON wallet_sessions (expires_at);
  `,
  /* 4: runs on the nodes: node heartbeats and agents, leases, inputs; the node credential's rotation; deploy tokens of signed-in users */ `
  -- A deploy token also comes from a signed-in user for another node of theirs (POST /v1/swarm/nodes/deploy-token),
  -- with no pay-gate session behind it: the token itself says whose node it enrolls, for which tier, and the
  -- payment that proved it (the session's, or the one the JWT was issued for).
  CREATE TABLE deploy_tokens_v4 (
    token_hash TEXT PRIMARY KEY,
    session_id TEXT REFERENCES sessions (session_id),
    user_id    TEXT NOT NULL,
    tier_id    TEXT NOT NULL,
    payment_id TEXT NOT NULL REFERENCES payments (payment_id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER,
    revoked_at INTEGER
  );
  INSERT INTO deploy_tokens_v4
    SELECT t.token_hash, t.session_id, s.user_id, s.tier_id, s.payment_id, t.created_at, t.expires_at, t.used_at, t.revoked_at
    FROM deploy_tokens t JOIN sessions s ON s.session_id = t.session_id WHERE s.payment_id IS NOT NULL;
  DROP TABLE deploy_tokens;
  ALTER TABLE deploy_tokens_v4 RENAME TO deploy_tokens;
  CREATE INDEX deploy_tokens_by_session ON deploy_tokens (session_id);
  CREATE INDEX deploy_tokens_by_user ON deploy_tokens (user_id) WHERE session_id IS NULL;

  -- Nodes: their session when a pay-gate activation enrolled them, and always the payment their enrollment proved;
  -- the poll is the heartbeat (last_seen_at decides whether a node is online, docs/api.md "Runs on the node"); a
  -- rotated credential waits in next_credential_hash until the node first uses it, then replaces credential_hash.
  CREATE TABLE nodes_v4 (
    node_id              TEXT PRIMARY KEY,
    session_id           TEXT REFERENCES sessions (session_id),
    user_id              TEXT NOT NULL,
    tier_id              TEXT NOT NULL,
    payment_id           TEXT NOT NULL REFERENCES payments (payment_id),
    enrolled_at          INTEGER NOT NULL,
    credential_hash      TEXT,
    hostname             TEXT,
    version              TEXT,
    last_seen_at         INTEGER,
    next_credential_hash TEXT
  );
  INSERT INTO nodes_v4 (node_id, session_id, user_id, tier_id, payment_id, enrolled_at, credential_hash)
    SELECT n.node_id, n.session_id, n.user_id, n.tier_id, s.payment_id, n.enrolled_at, n.credential_hash
    FROM nodes n JOIN sessions s ON s.session_id = n.session_id WHERE s.payment_id IS NOT NULL;
  DROP TABLE nodes;
  ALTER TABLE nodes_v4 RENAME TO nodes;
  CREATE UNIQUE INDEX nodes_by_credential ON nodes (credential_hash);
  CREATE UNIQUE INDEX nodes_by_next_credential ON nodes (next_credential_hash);
  CREATE INDEX nodes_by_user ON nodes (user_id);

  -- The agents each node serves (register on the node): execute routes a run only to a node that serves its agent.
  CREATE TABLE node_agents (
    node_id       TEXT NOT NULL REFERENCES nodes (node_id),
    agent_id      TEXT NOT NULL,
    registered_at INTEGER NOT NULL,
    PRIMARY KEY (node_id, agent_id)
  );

  -- A run is charged when accepted (queued, or running at once when a node starts its own), held by one node
  -- under a lease the node renews by polling, and finished once: by the node's result, or by the service when the
  -- lease runs out (node_lost) or no node takes it (not_picked_up), then refunded.
  CREATE TABLE runs_v4 (
    run_id           TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL,
    agent_id         TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
    charged_cents    INTEGER NOT NULL CHECK (charged_cents >= 0),
    input_json       TEXT,
    output_json      TEXT,
    pinned_node_id   TEXT,
    node_id          TEXT,
    lease_id         TEXT,
    lease_expires_at INTEGER,
    finished_by      TEXT CHECK (finished_by IN ('node', 'service')),
    started_at       INTEGER NOT NULL,
    claimed_at       INTEGER,
    finished_at      INTEGER
  );
  INSERT INTO runs_v4 (run_id, user_id, agent_id, status, charged_cents, output_json, finished_by, started_at, finished_at)
    SELECT run_id, user_id, agent_id, status, charged_cents, output_json,
      CASE WHEN status = 'running' THEN NULL ELSE 'service' END, started_at, finished_at FROM runs;
  DROP TABLE runs;
  ALTER TABLE runs_v4 RENAME TO runs;
  CREATE INDEX runs_by_user ON runs (user_id, started_at);
  CREATE INDEX runs_queued ON runs (user_id, started_at) WHERE status = 'queued';
  CREATE INDEX runs_leased ON runs (lease_expires_at) WHERE status = 'running';
  CREATE INDEX runs_by_node ON runs (node_id, finished_at);

  -- A run now finishes in another request than the execute that started it (the node's result, the lease sweeper):
  -- its Idempotency-Key is found by the run to store the final answer that replays of the key return.
  ALTER TABLE idempotency_keys ADD COLUMN run_id TEXT;
  UPDATE idempotency_keys SET run_id = json_extract(response_json, '$.run_id') WHERE json_valid(response_json);
  CREATE INDEX idempotency_keys_by_run ON idempotency_keys (run_id);
  `,
  /* 5: agent upload: bundles by digest, each user's versions of an agent, the current one; the bundle a run is pinned to */ `
  -- Content-addressed: one row per distinct archive, whoever uploaded it. Kept in the database (not beside it) so a
  -- bundle and the version row that names it are written in one transaction and backed up together.
  CREATE TABLE agent_bundles (
    digest      TEXT PRIMARY KEY CHECK (length(digest) = 64),
    content     BLOB NOT NULL,
    size_bytes  INTEGER NOT NULL CHECK (size_bytes > 0),
    created_at  INTEGER NOT NULL
  );

  -- A user's versions of a catalog agent. A version label is never reused with other bytes; the same bytes are
  -- one version.
  CREATE TABLE agent_versions (
    user_id           TEXT NOT NULL,
    agent_id          TEXT NOT NULL,
    version           TEXT NOT NULL,
    digest            TEXT NOT NULL REFERENCES agent_bundles (digest),
    input_schema_json TEXT NOT NULL,
    files             INTEGER NOT NULL,
    unpacked_bytes    INTEGER NOT NULL,
    uploaded_at       INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id, version),
    UNIQUE (user_id, agent_id, digest)
  );
  CREATE INDEX agent_versions_by_digest ON agent_versions (digest, user_id);

  -- The version a user's runs of an agent execute; no row: the node's built-in reference agent.
  CREATE TABLE agent_current (
    user_id    TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    digest     TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, agent_id),
    FOREIGN KEY (user_id, agent_id, digest) REFERENCES agent_versions (user_id, agent_id, digest)
  );

  -- Pinned when the run is accepted: the node runs exactly these bytes, whatever is uploaded or rolled back meanwhile.
  ALTER TABLE runs ADD COLUMN bundle_digest TEXT;
  `,
];
