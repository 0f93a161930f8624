// The agent kit's channel (docs/api.md "The kit's channel"): JSON lines on a descriptor of its own that the node
// hands the agent, apart from stdout and stderr, which stay plain logs. A call is {"v", "id", "op", …}; each gets
// one answer with its id, {"v", "id", "ok": {…}} or {"v", "id", "error": {code, message, remedy}}. `v` is the
// protocol the call is written to: a node answers a call of a newer one `kit_protocol_unsupported`, never by
// guessing. The node reads these figures from here and the events' caps from ./run-events.ts; the kits (kit/), from
// the hello.

/** The protocol this node speaks; a call with a higher `v` is refused. */
export const KIT_PROTOCOL_VERSION = 1;
/** The agent's descriptor of the channel (environment SWARM_KIT_FD): past stdio, the launcher's 3 and 4, the filter's 5. */
export const KIT_FD = 6;

/** What protocol 1 knows. Later protocols add the thread's state, a question to a person and child runs. */
export const KIT_OPS = ['hello', 'event', 'result', 'fail'] as const;
export type KitOp = (typeof KIT_OPS)[number];

/** One call's line at most: a result of the largest output a run may give, and its envelope. */
export const MAX_KIT_LINE_BYTES = 1024 * 1024 + 16 * 1024;
/** A failure's message at most, in characters. */
export const MAX_KIT_FAILURE_CHARS = 2_000;
/** Calls per run: a burst of this many, then KIT_CALLS_PER_SECOND. */
export const KIT_CALL_BURST = 500;
export const KIT_CALLS_PER_SECOND = 100;

/** Why a call was refused: each names the limit or the rule it met. */
export const KIT_ERROR_CODES = [
  'kit_protocol_unsupported',
  'kit_op_unknown',
  'kit_call_invalid',
  'kit_message_too_large',
  'kit_rate_limited',
  'kit_limit_reached',
  'kit_result_reported',
] as const;
export type KitErrorCode = (typeof KIT_ERROR_CODES)[number];

export interface KitError {
  code: KitErrorCode;
  message: string;
  remedy: string;
}

/** hello's answer: what the node speaks and the run this is. */
export interface KitHello {
  protocol: number;
  ops: readonly KitOp[];
  run: { run_id: string; agent_id: string; attempt: number };
  limits: {
    max_line_bytes: number;
    max_event_bytes: number;
    max_events: number;
    calls_per_second: number;
    call_burst: number;
  };
}

/** The run error of a run that failed by its agent's own word (the kit's `fail`): refunded as every failed run is. */
export const DECLARED_FAILURE = 'declared_failure';
