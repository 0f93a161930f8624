// Idempotency-Key per user (docs/decisions/0008-execute-debits-atomically.md): the first complete response is kept for
// IDEMPOTENCY_KEY_LIFETIME_SECONDS and replayed byte for byte; the same key with another body is refused; the same
// key while its first request still runs gets 409. The functions here never open a transaction: the execute flow
// calls them inside the one that also debits the wallet and records the run, so a key, its charge and its run
// commit together or not at all.
//
// A row is `in_progress` from the debit until the run is finished, which may happen in another request (the node's
// result, the lease sweeper): the row names its run (run_id), so whatever finishes the run stores the final answer
// on the key, and a replay meanwhile answers with the run as it stands (202), never a second run.
import { createHash } from 'node:crypto';
import { IDEMPOTENCY_KEY_LIFETIME_SECONDS } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';

export const IDEMPOTENCY_KEY_LIFETIME_MS = IDEMPOTENCY_KEY_LIFETIME_SECONDS * 1000;
/** Printable ASCII without spaces, like the keys clients generate (UUIDs, ULIDs, base64url). */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * The request_hash of a key settled as never run (POST /v1/swarm/runs/by-key): no request hashes to it (a hash is
 * 64 hex digits), so an execute that arrives with the key later is refused, not run.
 */
const NEVER_RAN = 'never_ran';

export type KeyLookup = { kind: 'new' } | { kind: 'replay'; statusCode: number; json: string } | { kind: 'in_flight'; run_id: string };

/** A key's row as lookup reads it. */
export type KeyRow = Pick<Tables['idempotency_keys'], 'request_hash' | 'state' | 'status_code' | 'response_json' | 'run_id' | 'created_at'>;

/**
 * What an incoming request with this key is, from its row (undefined: none; execute-gate.ts reads it): new (or
 * expired), a replay of a finished or a running run, or 422.
 */
export function judgeKey(row: KeyRow | undefined, requestHash: string, now: number): KeyLookup {
  if (row === undefined || now - row.created_at >= IDEMPOTENCY_KEY_LIFETIME_MS) return { kind: 'new' };
  if (row.request_hash === NEVER_RAN) {
    throw new SvcError(
      'idempotency_key_void',
      'this Idempotency-Key was settled as never run (POST /v1/swarm/runs/by-key); nothing was charged and nothing runs for it',
    );
  }
  if (row.request_hash !== requestHash) {
    throw new SvcError('idempotency_key_reuse', 'this Idempotency-Key was already used for a different request');
  }
  if (row.state === 'done' && row.status_code !== null && row.response_json !== null) {
    return { kind: 'replay', statusCode: row.status_code, json: row.response_json };
  }
  if (row.run_id !== null) return { kind: 'in_flight', run_id: row.run_id };
  // A key claimed by nothing we can name (not written by this version): it may not start a second run.
  throw new SvcError('request_in_progress', 'the first request with this Idempotency-Key is still running', { retryAfterSeconds: 1 });
}

export interface IdempotencyStore {
  /**
   * Claims the key for the run this request started: a new key, or one expired. False when a live row holds it now:
   * execute's one statement (execute-statement.ts) takes no lock, and may have claimed it since the lookup.
   */
  begin(userId: string, key: string, requestHash: string, runId: string, now: number): Promise<boolean>;
  /** Stores the final answer of the run's key (if it was started with one): what every later replay returns. */
  completeRun(runId: string, statusCode: number, json: string): Promise<void>;
  /** The final answer stored for the run, byte for byte, once it finished. */
  finalAnswer(runId: string): Promise<string | undefined>;
  /**
   * Inside a transaction that holds the key's lock: the key's run, or, when the key has none, the key settled as
   * never run, so that a request with it still on its way is refused when it arrives.
   */
  settle(userId: string, key: string, now: number): Promise<{ kind: 'run'; run_id: string } | { kind: 'never_ran' }>;
  /** Removes keys older than their lifetime; returns how many. */
  purgeExpired(now: number): Promise<number>;
}

export function createIdempotencyStore(store: Store): IdempotencyStore {
  // Each run takes its key, completes it and reads its answer: compiled once (compiled-once.ts).
  const keyOf = compiledOnce((db, at: { userId: string; key: string }) =>
    db
      .selectFrom('idempotency_keys')
      .select(['request_hash', 'state', 'status_code', 'response_json', 'run_id', 'created_at'])
      .where('user_id', '=', at.userId)
      .where('idempotency_key', '=', at.key),
  );
  // An expired row is taken over in place: its key may be reused (docs/api.md "POST /v1/swarm/execute": kept 24 h).
  // A live one never is.
  const claimKey = compiledOnce(
    (db, key: { userId: string; key: string; requestHash: string; runId: string; now: number; expiredBefore: number }) =>
      db
        .insertInto('idempotency_keys')
        .values({
          user_id: key.userId,
          idempotency_key: key.key,
          request_hash: key.requestHash,
          state: 'in_progress',
          status_code: null,
          response_json: null,
          run_id: key.runId,
          created_at: key.now,
        })
        .onConflict((conflict) =>
          conflict
            .columns(['user_id', 'idempotency_key'])
            .doUpdateSet((eb) => ({
              request_hash: eb.ref('excluded.request_hash'),
              state: 'in_progress',
              status_code: null,
              response_json: null,
              run_id: eb.ref('excluded.run_id'),
              created_at: eb.ref('excluded.created_at'),
            }))
            .where('idempotency_keys.created_at', '<=', key.expiredBefore),
        ),
  );
  const completeKey = compiledOnce((db, answer: { runId: string; statusCode: number; json: string }) =>
    db
      .updateTable('idempotency_keys')
      .set({ state: 'done', status_code: answer.statusCode, response_json: answer.json })
      .where('run_id', '=', answer.runId),
  );
  const finalAnswerOf = compiledOnce((db, at: { runId: string }) =>
    db
      .selectFrom('idempotency_keys')
      .select('response_json')
      .where('run_id', '=', at.runId)
      .where('state', '=', 'done')
      .where('response_json', 'is not', null),
  );
  return {
    async begin(userId, key, requestHash, runId, now) {
      const claimed = await claimKey(store.db, { userId, key, requestHash, runId, now, expiredBefore: now - IDEMPOTENCY_KEY_LIFETIME_MS });
      return claimed.numAffectedRows === 1n;
    },
    async completeRun(runId, statusCode, json) {
      await completeKey(store.db, { runId, statusCode, json });
    },
    async finalAnswer(runId) {
      const [row] = (await finalAnswerOf(store.db, { runId })).rows;
      return row?.response_json ?? undefined;
    },
    async settle(userId, key, now) {
      // Twice at most: a row that execute's one statement claimed after the first look is found by the second.
      for (;;) {
        const [row] = (await keyOf(store.db, { userId, key })).rows;
        const live = row !== undefined && now - row.created_at < IDEMPOTENCY_KEY_LIFETIME_MS;
        if (live && row.run_id !== null) return { kind: 'run', run_id: row.run_id };
        if (live && row.request_hash === NEVER_RAN) return { kind: 'never_ran' };
        // Only a new or an expired row is settled: a live one is the run's, however it came.
        const settled = await store.db
          .insertInto('idempotency_keys')
          .values({
            user_id: userId,
            idempotency_key: key,
            request_hash: NEVER_RAN,
            state: 'done',
            status_code: null,
            response_json: null,
            run_id: null,
            created_at: now,
          })
          .onConflict((conflict) =>
            conflict
              .columns(['user_id', 'idempotency_key'])
              .doUpdateSet({
                request_hash: NEVER_RAN,
                state: 'done',
                status_code: null,
                response_json: null,
                run_id: null,
                created_at: now,
              })
              .where('idempotency_keys.created_at', '<=', now - IDEMPOTENCY_KEY_LIFETIME_MS),
          )
          .executeTakeFirst();
        if (settled.numInsertedOrUpdatedRows === 1n) return { kind: 'never_ran' };
      }
    },
    async purgeExpired(now) {
      const result = await store.db
        .deleteFrom('idempotency_keys')
        .where('created_at', '<=', now - IDEMPOTENCY_KEY_LIFETIME_MS)
        .executeTakeFirst();
      return Number(result.numDeletedRows);
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

/**
 * The request's identity for key reuse: its fields after normalisation (so "A@x.io" and "a@x.io" are one request),
 * as canonical JSON: object keys sorted at every depth, so an input sent with its keys in another order is the same.
 */
export function requestHash(request: unknown): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, field]) => field !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
