// The swarm-node agent kit for JavaScript and TypeScript (kit/README.md): the run, its input, logs, events,
// artifacts and the run's end. It talks to the node over the run's own channel (descriptor SWARM_KIT_FD, JSON lines
// of the node's protocol, docs/api.md "The kit's channel"), never over stdout or stderr: what an agent prints is its
// log and nothing else. Without a channel (a node older than the kit), events are dropped and the result is printed
// as the one JSON document of the answer, as agents without the kit answer. No dependency but Node.js.
import { writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';

/** The protocol this kit's calls are written to. */
export const KIT_PROTOCOL = 1;

/** A call the node refused: `code` names the rule (kit_rate_limited, kit_message_too_large, …), `remedy` what to do. */
export class KitError extends Error {
  constructor(code, message, remedy) {
    super(`${code}: ${message}`);
    this.name = 'KitError';
    this.code = code;
    this.remedy = remedy;
  }
}

/** A bad input: the run fails, refunded, with this message. */
export class InputError extends Error {
  constructor(message) {
    super(message);
    this.name = 'InputError';
  }
}

class Channel {
  #socket;
  #buffer = '';
  #next = 1;
  /** Calls awaiting their answer, in the order they went (the node answers in order). */
  #pending = new Map();

  constructor(fd) {
    this.#socket = new Socket({ fd, readable: true, writable: true });
    this.#socket.setEncoding('utf8');
    this.#socket.on('data', (text) => this.#read(text));
    this.#socket.on('error', (error) => this.#failAll(error));
    this.#socket.on('close', () => this.#failAll(new Error('the node closed the kit channel')));
    this.#socket.unref();
  }

  call(op, fields = {}, protocol = KIT_PROTOCOL) {
    const id = this.#next++;
    const line = `${JSON.stringify({ ...fields, v: protocol, id, op })}\n`;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#socket.ref();
      this.#socket.write(line);
    });
  }

  close() {
    this.#socket.end();
  }

  #read(text) {
    this.#buffer += text;
    for (let newline = this.#buffer.indexOf('\n'); newline >= 0; newline = this.#buffer.indexOf('\n')) {
      const line = this.#buffer.slice(0, newline);
      this.#buffer = this.#buffer.slice(newline + 1);
      let answer;
      try {
        answer = JSON.parse(line);
      } catch {
        continue;
      }
      // An answer without an id (a line the node could not read) belongs to the oldest call.
      const id = this.#pending.has(answer.id) ? answer.id : this.#pending.keys().next().value;
      const waiting = this.#pending.get(id);
      if (waiting === undefined) continue;
      this.#pending.delete(id);
      if (answer.error) waiting.reject(new KitError(answer.error.code, answer.error.message, answer.error.remedy));
      else waiting.resolve(answer.ok ?? {});
    }
    if (this.#pending.size === 0) this.#socket.unref();
  }

  #failAll(error) {
    for (const waiting of this.#pending.values()) waiting.reject(error);
    this.#pending.clear();
  }
}

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (chunk) => chunks.push(chunk));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

let channel;
let ended = false;

function theChannel() {
  if (channel === undefined) {
    const fd = Number(process.env.SWARM_KIT_FD);
    channel = Number.isInteger(fd) && fd > 2 ? new Channel(fd) : null;
  }
  return channel;
}

/**
 * The run: {run_id, agent_id, user_id, tier, input, attempt, protocol}, the input as the service checked it against
 * agent.json's input_schema. Read once: stdin holds it.
 */
export async function start() {
  const document = JSON.parse((await readStdin()) || '{}');
  const kit = theChannel();
  const hello = kit === null ? undefined : await kit.call('hello');
  return { ...document, input: document.input ?? {}, attempt: hello?.run.attempt ?? 1, protocol: hello?.protocol ?? 0 };
}

/** A line of the run's log (stderr). */
export function log(text) {
  process.stderr.write(`${String(text).replace(/\n+$/, '')}\n`);
}

/** One event beside the log: type progress, output, tokens or custom (which takes a name); data any JSON value. */
export async function event(type, data, name) {
  const kit = theChannel();
  if (kit === null) return { seq: null };
  return kit.call('event', { type, data: data ?? null, ...(name === undefined ? {} : { name }) });
}

/** Progress: done of total (or a fraction when total is left out), with an optional message. */
export function progress(done, total, message) {
  return event('progress', { done, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) });
}

/** An artifact's name (docs/api.md "Run artifacts"): a plain file name, no directory. */
const ARTIFACT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A file the user gets with the run (docs/api.md "Run artifacts"): written into SWARM_ARTIFACTS_DIR. */
export function artifact(name, content) {
  const dir = process.env.SWARM_ARTIFACTS_DIR;
  if (dir === undefined) throw new Error('this node keeps no artifacts (SWARM_ARTIFACTS_DIR is not set)');
  if (!ARTIFACT_NAME.test(name))
    throw new Error(`${JSON.stringify(name)} is not an artifact name: 1-128 letters, digits and . _ - (no directory)`);
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

async function end(op, fields) {
  if (ended) throw new KitError('kit_result_reported', 'the run reported its end already', 'Report a result or a failure once, last.');
  const kit = theChannel();
  if (kit === null) {
    ended = true;
    if (op === 'fail') {
      log(fields.message);
      process.exitCode = 1;
    } else process.stdout.write(`${JSON.stringify(fields.output)}\n`);
    return;
  }
  await kit.call(op, fields);
  ended = true;
  kit.close();
}

/** The run's output: charged as a succeeded run. */
export function result(output) {
  return end('result', { output });
}

/** What the run got done before it had to stop: charged as a result, its output (an object) marked partial: true. */
export function partial(output) {
  return end('result', { output, partial: true });
}

/** The run failed by the agent's own word: refunded, as every failed run is, with this message. */
export function fail(message) {
  return end('fail', { message: String(message) });
}

/** A call of the channel as it is, for a protocol newer than this kit's helpers: refused by a node that lacks it. */
export function call(op, fields, protocol = KIT_PROTOCOL) {
  const kit = theChannel();
  if (kit === null)
    return Promise.reject(new KitError('kit_protocol_unsupported', 'this node gives the run no kit channel', 'Update the node.'));
  return kit.call(op, fields, protocol);
}

/**
 * The whole run: `work(input, run)` returns the output (reported as the result, unless it reported the run's end
 * itself); an InputError or any other error fails the run with its message (exit 2 and 1).
 */
export async function runAgent(work) {
  let run;
  try {
    run = await start();
    const output = await work(run.input, run);
    // A work that reported its end itself (partial, fail) returns nothing more to report.
    if (!ended) await result(output);
  } catch (error) {
    if (ended) throw error;
    await fail(error instanceof InputError ? `input: ${error.message}` : error instanceof Error ? error.message : String(error));
    process.exitCode = error instanceof InputError ? 2 : 1;
  }
}
