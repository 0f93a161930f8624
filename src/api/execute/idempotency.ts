// Idempotency-Key per user (DECISIONS.md "Execute"): the first complete response is kept for
// IDEMPOTENCY_KEY_LIFETIME_SECONDS and replayed byte for byte; the same key with another body is refused; the same
// key while its first request still runs gets 409. The functions here never open a transaction: the execute flow
// calls them inside the one that also debits the wallet and records the run, so a key, its charge and its run
// commit together or not at all.
//
// A row is `in_progress` from the debit until the run's result is stored. While it is, response_json names the
// run it started ({"run_id": …}): after a crash that link lets the restart store the failed, refunded run as the
// key's response (src/api/execute/recover-runs.ts) instead of leaving the key stuck.
import { createHash } from 'node:crypto';
import { IDEMPOTENCY_KEY_LIFETIME_SECONDS } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';

export const IDEMPOTENCY_KEY_LIFETIME_MS = IDEMPOTENCY_KEY_LIFETIME_SECONDS * 1000;
/** Printable ASCII without spaces, like the keys clients generate (UUIDs, ULIDs, base64url). */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type KeyLookup = { kind: 'new' } | { kind: 'replay'; statusCode: number; json: string };

export interface PendingKey {
  user_id: string;
  idempotency_key: string;
  run_id: string | undefined;
}

export interface IdempotencyStore {
  /** What an incoming request with this key is: new (or expired), a replay, or an error (409, 422). */
  lookup(userId: string, key: string, requestHash: string, now: number): KeyLookup;
  /** Claims the key for the run this request started. */
  begin(userId: string, key: string, requestHash: string, runId: string, now: number): void;
  /** Stores the response that every later request with this key replays. */
  complete(userId: string, key: string, statusCode: number, json: string): void;
  listInProgress(): PendingKey[];
  /** Removes keys older than their lifetime; returns how many. */
  purgeExpired(now: number): number;
}

export function createIdempotencyStore(db: SqliteDatabase): IdempotencyStore {
  const select = db.prepare<[string, string], { request_hash: string; state: string; status_code: number | null; response_json: string | null; created_at: number }>(
    'SELECT request_hash, state, status_code, response_json, created_at FROM idempotency_keys WHERE user_id = ? AND idempotency_key = ?',
  );
  // An expired row is taken over in place: its key may be reused (DECISIONS.md: kept 24 h).
  const upsertInProgress = db.prepare(
    `INSERT INTO idempotency_keys (user_id, idempotency_key, request_hash, state, status_code, response_json, created_at)
     VALUES (?, ?, ?, 'in_progress', NULL, ?, ?)
     ON CONFLICT (user_id, idempotency_key) DO UPDATE SET request_hash = excluded.request_hash, state = 'in_progress',
       status_code = NULL, response_json = excluded.response_json, created_at = excluded.created_at`,
  );
  const markDone = db.prepare(
    "UPDATE idempotency_keys SET state = 'done', status_code = ?, response_json = ? WHERE user_id = ? AND idempotency_key = ?",
  );
  const selectInProgress = db.prepare<[], { user_id: string; idempotency_key: string; response_json: string | null }>(
    "SELECT user_id, idempotency_key, response_json FROM idempotency_keys WHERE state = 'in_progress'",
  );
  const deleteOlderThan = db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?');

  return {
    lookup(userId, key, requestHash, now) {
      const row = select.get(userId, key);
      if (row === undefined || now - row.created_at >= IDEMPOTENCY_KEY_LIFETIME_MS) return { kind: 'new' };
      if (row.request_hash !== requestHash) {
        throw new SvcError('idempotency_key_reuse', 'this Idempotency-Key was already used for a different request');
      }
      if (row.state !== 'done' || row.status_code === null || row.response_json === null) {
        throw new SvcError('request_in_progress', 'the first request with this Idempotency-Key is still running', {
          retryAfterSeconds: 1,
        });
      }
      return { kind: 'replay', statusCode: row.status_code, json: row.response_json };
    },
    begin(userId, key, requestHash, runId, now) {
      upsertInProgress.run(userId, key, requestHash, JSON.stringify({ run_id: runId }), now);
    },
    complete(userId, key, statusCode, json) {
      markDone.run(statusCode, json, userId, key);
    },
    listInProgress() {
      return selectInProgress.all().map((row) => ({
        user_id: row.user_id,
        idempotency_key: row.idempotency_key,
        run_id: pendingRunId(row.response_json),
      }));
    },
    purgeExpired(now) {
      return deleteOlderThan.run(now - IDEMPOTENCY_KEY_LIFETIME_MS).changes;
    },
  };
}

/** The Idempotency-Key header, required on execute: the CLI always sends one, and a retry without it could charge twice. */
export function parseIdempotencyKey(header: string | string[] | undefined): string {
  if (header === undefined || header === '') {
    throw new SvcError('invalid_request', 'the Idempotency-Key header is required', {
      extensions: { errors: [{ path: 'headers/idempotency-key', message: 'is required' }] },
      remedy: 'Send a new Idempotency-Key (for example a UUID) with each execute, and the same one when you retry it.',
    });
  }
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
    throw new SvcError('invalid_request', 'the Idempotency-Key header must be 1 to 255 printable ASCII characters without spaces', {
      extensions: { errors: [{ path: 'headers/idempotency-key', message: 'must be 1 to 255 printable ASCII characters' }] },
    });
  }
  return header;
}

/** The request's identity for key reuse: its fields after normalisation, so "A@x.io" and "a@x.io" are one request. */
export function requestHash(fields: Readonly<Record<string, string>>): string {
  const canonical = JSON.stringify(Object.keys(fields).sort().map((name) => [name, fields[name]]));
  return createHash('sha256').update(canonical).digest('hex');
}

function pendingRunId(json: string | null): string | undefined {
  if (json === null) return undefined;
  try {
    const parsed = JSON.parse(json) as { run_id?: unknown };
    return typeof parsed.run_id === 'string' ? parsed.run_id : undefined;
  } catch {
    return undefined;
  }
}
