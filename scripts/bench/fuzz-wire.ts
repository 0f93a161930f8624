// How the fuzz bench (./fuzz.ts) sends a case and reads what came back: raw bytes on a node:net socket, written as
// the case says (pauses, half-close, reset), the answers parsed from the bytes; or a well-formed request through
// undici. Either way the outcome is the statuses answered, whether a body said `internal` or `service_unavailable`,
// and whether the connection was closed, reset, or still open at the deadline.
import { connect } from 'node:net';
import { request, type Dispatcher } from 'undici';
import type { FuzzCase } from './fuzz-cases.js';

export interface Outcome {
  statuses: number[];
  /** Answers whose problem code is `internal`. */
  internal: number;
  /** 503 answers whose problem code is `service_unavailable`. */
  unavailable: number;
  /** The service closed (or reset) the connection before the deadline. */
  closed: boolean;
  /** The deadline passed with the connection open and an answer missing or unfinished. */
  timedOut: boolean;
  /** A connection error, by its code (ECONNREFUSED while svc-api is down, ECONNRESET). */
  error?: string;
  /** When the first answer's status line arrived, from the start of the case. */
  firstAnswerMs?: number;
  /** The start of the first 5xx body, for the report. */
  excerpt?: string;
  ms: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const MAX_READ = 256 * 1024;

export async function sendCase(c: FuzzCase, port: number, dispatcher: Dispatcher): Promise<Outcome> {
  return c.http !== undefined ? sendHttp(c, port, dispatcher) : sendWire(c, port);
}

async function sendHttp(c: FuzzCase, port: number, dispatcher: Dispatcher): Promise<Outcome> {
  const began = performance.now();
  const http = c.http!;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), c.deadlineMs);
  const outcome: Outcome = { statuses: [], internal: 0, unavailable: 0, closed: false, timedOut: false, ms: 0 };
  try {
    const response = await request(`http://127.0.0.1:${port}${http.target}`, {
      method: http.method as Dispatcher.HttpMethod,
      headers: http.headers.flat(),
      body: http.body,
      dispatcher,
      signal: abort.signal,
    });
    outcome.statuses.push(response.statusCode);
    outcome.firstAnswerMs = performance.now() - began;
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body) {
        chunks.push(chunk as Buffer);
        size += (chunk as Buffer).length;
        if (size >= MAX_READ) break;
      }
    } catch (error) {
      if (!abort.signal.aborted) outcome.error = codeOf(error);
    } finally {
      response.body.destroy();
    }
    judgeBody(outcome, response.statusCode, Buffer.concat(chunks));
  } catch (error) {
    if (abort.signal.aborted) outcome.timedOut = true;
    else outcome.error = codeOf(error);
  } finally {
    clearTimeout(timer);
  }
  outcome.ms = performance.now() - began;
  return outcome;
}

function codeOf(error: unknown): string {
  const { code, name } = (error ?? {}) as { code?: string; name?: string };
  return code ?? name ?? 'error';
}

function judgeBody(outcome: Outcome, status: number, body: Buffer): void {
  const text = body.subarray(0, 4096).toString('utf8');
  // A 500 is the service's own failure whatever its body: problem+json `internal`, or the console's HTML error page.
  if (status === 500) outcome.internal += 1;
  if (status === 503 && /"code"\s*:\s*"service_unavailable"/.test(text)) outcome.unavailable += 1;
  if (status >= 500 && outcome.excerpt === undefined) outcome.excerpt = text.slice(0, 300);
}

async function sendWire(c: FuzzCase, port: number): Promise<Outcome> {
  const began = performance.now();
  const wire = c.wire!;
  const outcome: Outcome = { statuses: [], internal: 0, unavailable: 0, closed: false, timedOut: false, ms: 0 };
  const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  const received: Buffer[] = [];
  let receivedBytes = 0;
  let closed = false;
  const expected = wire.answers ?? 1;
  const head = c.method.toUpperCase() === 'HEAD';
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (done = resolve));
  socket.on('data', (chunk: Buffer) => {
    if (receivedBytes < MAX_READ) received.push(chunk);
    receivedBytes += chunk.length;
    if (outcome.firstAnswerMs === undefined && /^HTTP\/1\.[01] [2-9]/m.test(Buffer.concat(received).toString('latin1'))) {
      outcome.firstAnswerMs = performance.now() - began;
    }
    if (parseAnswers(Buffer.concat(received), false, head).complete >= expected) done();
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    outcome.error ??= error.code ?? 'error';
  });
  socket.on('close', () => {
    closed = true;
    done();
  });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  } catch {
    outcome.ms = performance.now() - began;
    return outcome;
  }
  for (const step of wire.steps) {
    if (step.pauseMs > 0) await Promise.race([sleep(step.pauseMs), finished]);
    if (closed || socket.destroyed) break;
    if (step.bytes.length > 0) socket.write(step.bytes);
  }
  if (!closed) {
    if (wire.end === 'half-close') socket.end();
    if (wire.end === 'destroy') socket.destroy();
    if (wire.end === 'reset') socket.resetAndDestroy();
  }
  let deadline: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    finished.then(() => false),
    new Promise<boolean>((resolve) => (deadline = setTimeout(() => resolve(true), c.deadlineMs))),
  ]);
  clearTimeout(deadline);
  outcome.closed = closed && wire.end !== 'destroy' && wire.end !== 'reset';
  const answers = parseAnswers(Buffer.concat(received), closed, head);
  outcome.timedOut = timedOut;
  socket.destroy();
  for (const answer of answers.answers) {
    outcome.statuses.push(answer.status);
    judgeBody(outcome, answer.status, answer.body);
  }
  outcome.ms = performance.now() - began;
  return outcome;
}

interface Answer {
  status: number;
  body: Buffer;
}

/**
 * HTTP/1.1 answers in `bytes`, one after another: framed by Content-Length, chunked, or (the last) by the close.
 * Interim 1xx answers are skipped. `complete` counts the answers read to their end.
 */
export function parseAnswers(bytes: Buffer, closed: boolean, head: boolean): { answers: Answer[]; complete: number } {
  const answers: Answer[] = [];
  let complete = 0;
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const lines = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? Number.NaN);
    if (Number.isNaN(status)) break;
    at = end + 4;
    if (status >= 100 && status < 200) continue;
    const header = (name: string): string | undefined =>
      lines
        .find((line) => line.toLowerCase().startsWith(`${name}:`))
        ?.slice(name.length + 1)
        .trim();
    const length = header('content-length');
    if (head || status === 204 || status === 304) {
      answers.push({ status, body: Buffer.alloc(0) });
      complete += 1;
    } else if (header('transfer-encoding')?.toLowerCase().includes('chunked')) {
      const parts: Buffer[] = [];
      let finished = false;
      for (;;) {
        const lineEnd = bytes.indexOf('\r\n', at);
        if (lineEnd < 0) break;
        const size = parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
        if (Number.isNaN(size) || lineEnd + 2 + size + 2 > bytes.length) break;
        parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
        if (size === 0) {
          finished = true;
          break;
        }
      }
      answers.push({ status, body: Buffer.concat(parts) });
      if (!finished) return { answers, complete: complete + (closed ? 1 : 0) };
      complete += 1;
    } else if (length !== undefined) {
      const size = Number(length);
      answers.push({ status, body: bytes.subarray(at, at + size) });
      if (at + size > bytes.length) return { answers, complete: complete + (closed ? 1 : 0) };
      at += size;
      complete += 1;
    } else {
      answers.push({ status, body: bytes.subarray(at) });
      return { answers, complete: complete + (closed ? 1 : 0) };
    }
  }
  return { answers, complete };
}
