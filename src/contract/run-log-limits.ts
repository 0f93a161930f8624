// The bounds of a run's log (docs/api.md "Run logs") and how long a run's data is kept: plain values, apart from the
// endpoints' schemas (./jobs.ts), so a command's help can say them without loading TypeBox at start.

/** What one run's log keeps (stdout and stderr together); past it, one truncation marker and nothing more. */
export const MAX_LOG_BYTES_PER_RUN = 4 * 1024 * 1024;
/** One line of a log as stored: longer lines are cut (with a mark) by the node. */
export const MAX_LOG_LINE_CHARS = 16 * 1024;
/** Logs and artifacts are kept this long after their run ended, then removed. */
export const RUN_DATA_RETENTION_DAYS = 30;

/** A log batch's body at most (POST /v1/swarm/runs/{run_id}/logs): the node starts a new batch before it. */
export const MAX_LOG_BATCH_BYTES = 1024 * 1024;
/** The most entries in one batch. */
export const MAX_LOG_BATCH_ENTRIES = 1000;
/** The cap as people read it. */
export const LOG_CAP_WORDS = `${MAX_LOG_BYTES_PER_RUN / (1024 * 1024)} MiB`;
/** What ends a line the node cut at MAX_LOG_LINE_CHARS: the rest of that line is not kept. */
export const LOG_LINE_CUT_MARK = ` [… line cut at ${MAX_LOG_LINE_CHARS} characters]`;
/**
 * The one entry (stream `node`) that ends a log cut at MAX_LOG_BYTES_PER_RUN: the node sends it, and the service
 * stores it in place of the first entry past its own count of the cap; either way once, and nothing after it.
 */
export const LOG_TRUNCATION_TEXT = `[log truncated: this run's log reached ${LOG_CAP_WORDS}; the rest was not kept]`;

/** The bytes an entry's text counts against MAX_LOG_BYTES_PER_RUN (its UTF-8): the node and the service count alike. */
export function logTextBytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
