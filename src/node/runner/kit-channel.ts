// The node's side of a run's kit channel (contract/kit-protocol.ts, docs/api.md "The kit's channel"): the calls the
// agent makes on its descriptor, one line each, answered in order. Whatever the agent sends is the agent's word and
// nothing more: every line is bounded, every call checked, counted against the run's rate and caps, and refused
// with a code that names the rule; a refusal never quotes what was sent (it may hold a secret). One call is read at a
// time and the next only once its answer is written, so an agent that does not read its answers stops itself.
import type { Duplex } from 'node:stream';
import { once } from 'node:events';
import {
  DECLARED_FAILURE,
  KIT_CALL_BURST,
  KIT_CALLS_PER_SECOND,
  KIT_OPS,
  KIT_PROTOCOL_VERSION,
  MAX_KIT_FAILURE_CHARS,
  MAX_KIT_LINE_BYTES,
  type KitError,
  type KitErrorCode,
  type KitHello,
} from '../../contract/kit-protocol.js';
import {
  MAX_RUN_EVENT_BYTES,
  MAX_RUN_EVENTS_PER_RUN,
  RUN_EVENT_NAME_PATTERN,
  RUN_EVENT_TYPES,
  runEventBytes,
  type RunEventType,
} from '../../contract/run-events.js';
import { monotonicClock, type Clock } from '../../lib/clock.js';

/** An event the agent emitted, as the node keeps it until it is sent. */
export interface KitEvent {
  type: RunEventType;
  name?: string;
  data: unknown;
  /** Wall-clock milliseconds. */
  at: number;
}

/** What the agent reported as its end, if it did: a result (whole or partial) or a failure of its own. */
export type KitVerdict =
  { kind: 'result'; output: unknown; partial: boolean } | { kind: 'failure'; error: typeof DECLARED_FAILURE; message: string };

export interface KitRunContext {
  run_id: string;
  agent_id: string;
  attempt: number;
  /** The largest result, as JSON text (the run's output limit). */
  maxOutputBytes: number;
}

export interface KitChannel {
  /** The agent's reported end, once it gave one. */
  verdict(): KitVerdict | undefined;
  /** Resolves when the agent closed its side (or the stream ended). */
  readonly done: Promise<void>;
}

const EVENT_NAME = new RegExp(RUN_EVENT_NAME_PATTERN);

export function serveKitChannel(
  stream: Duplex,
  context: KitRunContext,
  onEvent: (event: KitEvent) => void,
  clocks: { wall: Clock; monotonic?: Clock } = { wall: { now: () => Date.now() } },
): KitChannel {
  let verdict: KitVerdict | undefined;
  let events = 0;
  const bucket = tokenBucket(KIT_CALL_BURST, KIT_CALLS_PER_SECOND, clocks.monotonic ?? monotonicClock);
  const hello: KitHello = {
    protocol: KIT_PROTOCOL_VERSION,
    ops: KIT_OPS,
    run: { run_id: context.run_id, agent_id: context.agent_id, attempt: context.attempt },
    limits: {
      max_line_bytes: MAX_KIT_LINE_BYTES,
      max_event_bytes: MAX_RUN_EVENT_BYTES,
      max_events: MAX_RUN_EVENTS_PER_RUN,
      calls_per_second: KIT_CALLS_PER_SECOND,
      call_burst: KIT_CALL_BURST,
    },
  };

  const answer = (call: Record<string, unknown>): object => {
    const op = call.op;
    // The run's end is reported once, whatever the rate: only the calls that can repeat draw on the bucket.
    if (op !== 'result' && op !== 'fail' && !bucket.take())
      return refusal(
        'kit_rate_limited',
        `more than ${KIT_CALL_BURST} calls at once or ${KIT_CALLS_PER_SECOND} a second`,
        'Emit fewer events: batch progress into one event a second or so.',
      );
    if (op === 'hello') return { ok: hello };
    if (op === 'event') {
      if (typeof call.type !== 'string' || !(RUN_EVENT_TYPES as readonly string[]).includes(call.type))
        return refusal('kit_call_invalid', `an event's type is one of ${RUN_EVENT_TYPES.join(', ')}`, 'Give the event one of those types.');
      if (call.name !== undefined && (typeof call.name !== 'string' || !EVENT_NAME.test(call.name)))
        return refusal(
          'kit_call_invalid',
          "an event's name is 1-64 letters, digits and . _ : - (starting with a letter or a digit)",
          'Name the event so.',
        );
      if (call.type === 'custom' && call.name === undefined) return refusal('kit_call_invalid', 'a custom event needs a name', 'Name it.');
      if (runEventBytes(call.data) > MAX_RUN_EVENT_BYTES)
        return refusal(
          'kit_message_too_large',
          `an event's data is at most ${MAX_RUN_EVENT_BYTES / 1024} KiB as JSON`,
          'Put a large output in an artifact (SWARM_ARTIFACTS_DIR) and emit its name.',
        );
      if (events >= MAX_RUN_EVENTS_PER_RUN)
        return refusal(
          'kit_limit_reached',
          `a run emits at most ${MAX_RUN_EVENTS_PER_RUN} events`,
          'Emit fewer events: one a second is plenty for progress.',
        );
      const seq = events;
      events += 1;
      onEvent({
        type: call.type as RunEventType,
        ...(typeof call.name === 'string' ? { name: call.name } : {}),
        data: call.data ?? null,
        at: clocks.wall.now(),
      });
      return { ok: { seq } };
    }
    if (op === 'result' || op === 'fail') {
      if (verdict !== undefined)
        return refusal('kit_result_reported', 'the run reported its end already', 'Report a result or a failure once, last.');
      if (op === 'fail') {
        if (typeof call.message !== 'string')
          return refusal('kit_call_invalid', "a failure's message is a string", 'Say why the run failed, in words.');
        verdict = { kind: 'failure', error: DECLARED_FAILURE, message: call.message.slice(0, MAX_KIT_FAILURE_CHARS) };
        return { ok: {} };
      }
      const partial = call.partial === true;
      if (call.partial !== undefined && typeof call.partial !== 'boolean')
        return refusal('kit_call_invalid', 'partial is true or false', 'Pass partial: true, or leave it out.');
      if (call.output === undefined) return refusal('kit_call_invalid', 'a result has an output', "Pass the run's output: any JSON value.");
      if (partial && (typeof call.output !== 'object' || call.output === null || Array.isArray(call.output)))
        return refusal(
          'kit_call_invalid',
          "a partial result's output is a JSON object (the node marks it partial: true)",
          'Report the partial output as an object.',
        );
      if (runEventBytes(call.output) > context.maxOutputBytes)
        return refusal(
          'kit_message_too_large',
          `a result is at most ${context.maxOutputBytes} bytes as JSON`,
          'Put a large output in an artifact (SWARM_ARTIFACTS_DIR) and return its name.',
        );
      verdict = { kind: 'result', output: partial ? { ...(call.output as object), partial: true } : call.output, partial };
      return { ok: {} };
    }
    return refusal(
      'kit_op_unknown',
      `this node knows the calls ${KIT_OPS.join(', ')} of protocol ${KIT_PROTOCOL_VERSION}`,
      "Use a kit of the node's protocol (its hello says which), or update the node.",
    );
  };

  const respond = async (id: unknown, body: object): Promise<void> => {
    const line = `${JSON.stringify({ v: KIT_PROTOCOL_VERSION, id: typeof id === 'number' || typeof id === 'string' ? id : null, ...body })}\n`;
    if (!stream.writable) return;
    if (!stream.write(line)) await Promise.race([once(stream, 'drain'), once(stream, 'close')]);
  };

  const handle = async (line: string): Promise<void> => {
    if (line.trim() === '') return;
    let call: unknown;
    try {
      call = JSON.parse(line);
    } catch {
      return respond(null, refusal('kit_call_invalid', 'a call is one JSON object on one line', 'Send each call as one line of JSON.'));
    }
    if (typeof call !== 'object' || call === null || Array.isArray(call))
      return respond(null, refusal('kit_call_invalid', 'a call is one JSON object on one line', 'Send each call as one line of JSON.'));
    const fields = call as Record<string, unknown>;
    if (typeof fields.v !== 'number' || !Number.isInteger(fields.v) || fields.v < 1)
      return respond(fields.id, refusal('kit_call_invalid', 'a call names its protocol: "v", a whole number from 1', 'Send "v": 1.'));
    if (fields.v > KIT_PROTOCOL_VERSION)
      return respond(
        fields.id,
        refusal(
          'kit_protocol_unsupported',
          `this node speaks the kit's protocol ${KIT_PROTOCOL_VERSION}, and the call is of protocol ${fields.v}`,
          "Update the node (swarm-node upgrade), or pack the agent with the kit of the node's protocol.",
        ),
      );
    return respond(fields.id, answer(fields));
  };

  stream.on('error', () => undefined);
  const done = (async () => {
    let pending: Buffer = Buffer.alloc(0);
    /** A line past the bound is being dropped up to its newline. */
    let skipping = false;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        for (let newline = pending.indexOf(0x0a); newline >= 0; newline = pending.indexOf(0x0a)) {
          const line = pending.subarray(0, newline);
          pending = pending.subarray(newline + 1);
          if (skipping || line.length > MAX_KIT_LINE_BYTES) {
            skipping = false;
            await respond(
              null,
              refusal(
                'kit_message_too_large',
                `a call is at most ${MAX_KIT_LINE_BYTES} bytes`,
                'Put a large output in an artifact (SWARM_ARTIFACTS_DIR).',
              ),
            );
          } else await handle(line.toString('utf8'));
        }
        if (pending.length > MAX_KIT_LINE_BYTES) {
          skipping = true;
          pending = Buffer.alloc(0);
        }
      }
    } catch {
      // The agent's side went away: what it reported stands.
    }
  })();
  return { verdict: () => verdict, done };
}

function refusal(code: KitErrorCode, message: string, remedy: string): { error: KitError } {
  return { error: { code, message, remedy } };
}

/** At most `burst` at once, then `perSecond`: false when there is none to take. */
function tokenBucket(burst: number, perSecond: number, clock: Clock): { take(): boolean } {
  let tokens = burst;
  let last = clock.now();
  return {
    take() {
      const now = clock.now();
      tokens = Math.min(burst, tokens + ((now - last) / 1000) * perSecond);
      last = now;
      if (tokens < 1) return false;
      tokens -= 1;
      return true;
    },
  };
}
