// The run history at the service (docs/api.md "Run history"): GET /v1/swarm/runs lists a user's runs newest first,
// filtered by agent, status, node and time, a page at a time with an opaque cursor (started_at and run_id of the
// last run shown, which the runs_by_user index reads in order); GET /v1/swarm/runs/{run_id} adds the attempts and
// where the logs and artifacts are.
import { SvcError } from '../../contract/errors.js';
import {
  DEFAULT_RUNS_PAGE,
  MAX_RUNS_PAGE,
  type RunAttempt,
  type RunList,
  type RunListQuery,
  type RunSummary,
} from '../../contract/jobs.js';
import { isoTime } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { RunRow } from './run-store.js';
import { shownStatus } from './run-view.js';

export interface RunHistory {
  list(userId: string, query: RunListQuery): Promise<RunList>;
  /** Every attempt of the run, the one under way or the last included. */
  attempts(run: RunRow): Promise<RunAttempt[]>;
}

export function runLinks(runId: string): { logs: string; artifacts: string } {
  return { logs: `/v1/swarm/runs/${runId}/logs`, artifacts: `/v1/swarm/runs/${runId}/artifacts` };
}

export function createRunHistory(store: Store): RunHistory {
  return {
    async list(userId, query) {
      const limit = query.limit === undefined ? DEFAULT_RUNS_PAGE : Number(query.limit);
      if (limit < 1 || limit > MAX_RUNS_PAGE) throw badQuery('limit', `must be a whole number from 1 to ${MAX_RUNS_PAGE}`);
      const since = query.since === undefined ? undefined : timeOf('since', query.since);
      const until = query.until === undefined ? undefined : timeOf('until', query.until);
      const after = query.cursor === undefined ? undefined : cursorOf(query.cursor);
      const rows = await store.db
        .selectFrom('runs')
        .select([
          'run_id',
          'agent_id',
          'status',
          'charged_cents',
          'started_at',
          'claimed_at',
          'finished_at',
          'node_id',
          'attempt',
          'output_json',
          'cancelled_at',
          'trigger',
        ])
        .where('user_id', '=', userId)
        .$if(query.agent_id !== undefined, (q) => q.where('agent_id', '=', query.agent_id!))
        .$if(query.node_id !== undefined, (q) => q.where('node_id', '=', query.node_id!.toLowerCase()))
        .$if(query.status === 'cancelled', (q) => q.where('status', '=', 'failed').where('cancelled_at', 'is not', null))
        .$if(query.status === 'failed', (q) => q.where('status', '=', 'failed').where('cancelled_at', 'is', null))
        .$if(query.status !== undefined && !['failed', 'cancelled'].includes(query.status), (q) =>
          q.where('status', '=', query.status as RunRow['status']),
        )
        .$if(since !== undefined, (q) => q.where('started_at', '>=', since!))
        .$if(until !== undefined, (q) => q.where('started_at', '<', until!))
        .$if(after !== undefined, (q) =>
          q.where((eb) =>
            eb.or([
              eb('started_at', '<', after!.startedAt),
              eb.and([eb('started_at', '=', after!.startedAt), eb('run_id', '<', after!.runId)]),
            ]),
          ),
        )
        .orderBy('started_at', 'desc')
        .orderBy('run_id', 'desc')
        .limit(limit + 1)
        .execute();
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        runs: page.map(summaryOf),
        next_cursor:
          rows.length > limit && last !== undefined ? Buffer.from(`${last.started_at}.${last.run_id}`).toString('base64url') : null,
      };
    },

    async attempts(run) {
      const ended = await store.db.selectFrom('run_attempts').selectAll().where('run_id', '=', run.run_id).orderBy('attempt').execute();
      const finished = run.status === 'succeeded' || run.status === 'failed';
      const current: RunAttempt = {
        attempt: run.attempt,
        node_id: run.node_id,
        started_at: run.claimed_at === null ? null : isoTime(run.claimed_at),
        ended_at: finished && run.finished_at !== null ? isoTime(run.finished_at) : null,
        outcome: finished ? shownStatus(run) : null,
      };
      return [
        ...ended.map((row) => ({
          attempt: row.attempt,
          node_id: row.node_id,
          started_at: row.claimed_at === null ? null : isoTime(row.claimed_at),
          ended_at: isoTime(row.ended_at),
          outcome: row.error,
          message: row.message,
        })),
        // A run that never left the queue had no attempt.
        ...(run.claimed_at === null && !finished ? [] : [current]),
      ];
    },
  };
}

function summaryOf(
  row: Pick<
    RunRow,
    | 'run_id'
    | 'agent_id'
    | 'status'
    | 'charged_cents'
    | 'started_at'
    | 'claimed_at'
    | 'finished_at'
    | 'node_id'
    | 'attempt'
    | 'output_json'
    | 'cancelled_at'
    | 'trigger'
  >,
): RunSummary {
  const status = shownStatus(row);
  let error: RunSummary['error'] = null;
  if (status === 'failed' || status === 'cancelled') {
    const output = JSON.parse(row.output_json ?? 'null') as { error?: unknown; message?: unknown } | null;
    error = {
      error: typeof output?.error === 'string' ? output.error : 'failed',
      message: typeof output?.message === 'string' ? output.message : '',
    };
  }
  return {
    run_id: row.run_id,
    agent_id: row.agent_id,
    status,
    charged_cents: row.charged_cents,
    started_at: isoTime(row.started_at),
    claimed_at: row.claimed_at === null ? null : isoTime(row.claimed_at),
    finished_at: row.finished_at === null ? null : isoTime(row.finished_at),
    node_id: row.node_id,
    attempt: row.attempt,
    error,
    ...(row.trigger === null ? {} : { trigger: row.trigger }),
  };
}

function timeOf(field: string, text: string): number {
  const at = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(at))
    throw badQuery(field, 'must be an ISO 8601 time, for example 2026-11-26 or 2026-11-26T12:00:00Z');
  return at;
}

function cursorOf(cursor: string): { startedAt: number; runId: string } {
  const match = /^(\d{1,16})\.([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (match === null) throw badQuery('cursor', 'is not a next_cursor this service gave');
  return { startedAt: Number(match[1]), runId: match[2]! };
}

function badQuery(field: string, message: string): SvcError {
  return new SvcError('invalid_request', `${field} ${message}`, { extensions: { errors: [{ path: `querystring/${field}`, message }] } });
}
