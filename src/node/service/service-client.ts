// The node's client for the hosted service (docs/api.md "The node's client: decisions"). A request is retried with
// jittered backoff on network errors, 429 and 502/503/504 only when repeating it is safe: reads, and execute, whose
// Idempotency-Key makes a repeat a replay. The whole call has a deadline, so an unreachable service is reported
// in bounded time. Tokens travel only in headers; no message built here quotes one.
import type { Readable } from 'node:stream';
import type { CallOptions, ServiceResponse } from './http/call-options.js';
import { MAX_ANSWER_BYTES, readAnswer, saveAnswer } from './http/answer-body.js';
import { releaseBody, requestBody } from './http/request-body.js';
import { NodeTransport } from './http/node-transport.js';
import {
  answerDeadline,
  jitteredBackoff,
  NETWORK_ERROR_CODES,
  NOT_SENT_ERROR_CODES,
  tlsFailure,
  type Transport,
} from './http/transport.js';
import type {
  ActivateResponse,
  AgentDetailResponse,
  AgentsResponse,
  DocsSectionResponse,
  EnrollResponse,
  ExecuteRequest,
  IssueTokenRequest,
  IssueTokenResponse,
  RunResponse,
  SessionResponse,
  VerifyResponse,
  WalletResponse,
} from '../../contract/schemas.js';
import { SvcError } from '../../contract/errors.js';
import { linkedSignal } from '../../lib/linked-signal.js';
import { RUN_TRIGGER_HEADER, type ClaimedRunTrigger } from '../../contract/run-trigger.js';

export interface ServiceClientOptions {
  baseUrl: string;
  /** The whole call, retries included. */
  deadlineMs?: number;
  /** Sleep between attempts; tests and the daemon pass their own. */
  sleep?: (ms: number) => Promise<void>;
  userAgent?: string;
  /** How requests travel: Node's http unless given (the daemon gives undici's pool, src/node/service/http/transport.ts). */
  transport?: Transport;
}

export interface ServicePing {
  latencyMs: number;
  /** The service's clock minus this host's; undefined when the service sent no Date header. */
  clockSkewMs: number | undefined;
}

export type { CallOptions, ServiceResponse } from './http/call-options.js';

/** An answer with its status: execute's 200 (finished) and 202 (still on its way) are both answers. */
export interface RunAnswer {
  status: number;
  run: RunResponse;
  replayed: boolean;
}

const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
const MAX_ATTEMPTS = 4;

export class ServiceClient {
  readonly baseUrl: string;
  readonly #deadlineMs: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #transport: Transport;
  readonly #userAgent: string;
  /** One attempt's wait for its answer, so a retry fits in the deadline. */
  readonly #perAttemptMs: number;

  constructor(options: ServiceClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#deadlineMs = options.deadlineMs ?? 15_000;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#userAgent = options.userAgent ?? 'swarm-node';
    this.#perAttemptMs = Math.max(1_000, Math.floor(this.#deadlineMs / 2));
    this.#transport = options.transport ?? new NodeTransport();
  }

  /** How long a connection may take: also what the daemon's pooled transport is built with. */
  static connectTimeoutMs(deadlineMs: number): number {
    return Math.min(5_000, Math.max(1_000, Math.floor(deadlineMs / 2)));
  }

  async close(): Promise<void> {
    await this.#transport.close();
  }

  /** Ends the calls in flight at once (Ctrl+C): close() would wait for their answers, up to the deadline. */
  async destroy(): Promise<void> {
    await this.#transport.destroy();
  }

  /** The catalog; with a bearer (the JWT or a node credential) the user's own agents too (docs/api.md "Agents of one's own"). */
  agents(bearer?: string): Promise<AgentsResponse> {
    return this.#body({ method: 'GET', path: '/v1/swarm/agents', retrySafe: true, ...(bearer === undefined ? {} : { bearer }) });
  }

  /** One agent as the bearer's run would execute it: its version, where it comes from and its input_schema. */
  agent(agentId: string, bearer?: string): Promise<AgentDetailResponse> {
    return this.#body({
      method: 'GET',
      path: `/v1/swarm/agents/${encodeURIComponent(agentId)}`,
      retrySafe: true,
      ...(bearer === undefined ? {} : { bearer }),
    });
  }

  createSession(tier_id: string, user_id: string): Promise<SessionResponse> {
    // Not retried: a repeat would open a second session (harmless, but not what was asked).
    return this.#body({ method: 'POST', path: '/v1/swarm/paygate/session', body: { tier_id, user_id }, retrySafe: false });
  }

  /** With the session user's JWT from a recent sign-in (docs/api.md "activate"). */
  activate(token: string, session_id: string, payment_id: string): Promise<ActivateResponse> {
    return this.#body({
      method: 'POST',
      path: '/v1/swarm/paygate/activate',
      body: { session_id, payment_id },
      bearer: token,
      retrySafe: false,
    });
  }

  /** With the challenge and the code mailed for it: the inbox's proof (docs/api.md "issue-token"). */
  issueToken(body: IssueTokenRequest): Promise<IssueTokenResponse> {
    return this.#body({ method: 'POST', path: '/v1/auth/issue-token', body, retrySafe: false });
  }

  verify(token: string): Promise<VerifyResponse> {
    return this.#body({ method: 'POST', path: '/v1/auth/verify', body: { token }, bearer: token, retrySafe: true });
  }

  wallet(token: string): Promise<WalletResponse> {
    return this.#body({ method: 'GET', path: '/v1/swarm/wallet', bearer: token, retrySafe: true });
  }

  /**
   * Execute with the JWT or a node credential (docs/api.md "Execute"). `waitSeconds`: how long the service may hold
   * the request for the node's result (RFC 7240 Prefer: wait); the call's deadline covers it. `trigger`: what started
   * it, which the service records and shows (docs/api.md "Triggers").
   */
  async execute(
    bearer: string,
    body: ExecuteRequest,
    idempotencyKey: string,
    waitSeconds: number,
    trigger?: ClaimedRunTrigger,
  ): Promise<RunAnswer> {
    const response = await this.call<RunResponse>({
      method: 'POST',
      path: '/v1/swarm/execute',
      body,
      bearer,
      idempotencyKey,
      headers: {
        prefer: waitSeconds === 0 ? 'respond-async' : `wait=${waitSeconds}`,
        ...(trigger === undefined ? {} : { [RUN_TRIGGER_HEADER]: trigger }),
      },
      retrySafe: true,
      deadlineMs: this.#deadlineMs + waitSeconds * 1000,
    });
    return { status: response.status, run: response.body, replayed: response.headers['idempotent-replayed'] === 'true' };
  }

  /** A run as it stands, or once it finished when that comes within `waitSeconds`. */
  runState(bearer: string, runId: string, waitSeconds: number): Promise<RunResponse> {
    return this.#body({
      method: 'GET',
      path: `/v1/swarm/runs/${encodeURIComponent(runId)}?wait=${waitSeconds}`,
      bearer,
      retrySafe: true,
      deadlineMs: this.#deadlineMs + waitSeconds * 1000,
    });
  }

  /** `ephemeral`: a node that takes one run, then removes itself (docs/api.md "Ephemeral nodes"). */
  enroll(deployToken: string, options: { ephemeral?: boolean } = {}): Promise<EnrollResponse> {
    const body = options.ephemeral === true ? { body: { ephemeral: true } } : {};
    return this.#body({ method: 'POST', path: '/v1/swarm/nodes/enroll', bearer: deployToken, retrySafe: false, ...body });
  }

  docsSection(token: string, section: string): Promise<DocsSectionResponse> {
    return this.#body({ method: 'GET', path: `/v1/docs/${encodeURIComponent(section)}`, bearer: token, retrySafe: true });
  }

  /**
   * One request (a public read, with its retries) to measure reachability, latency, and how far this host's clock is
   * from the service's: `status` and `doctor` both ask this.
   */
  async ping(): Promise<ServicePing> {
    const sentAt = Date.now();
    const started = performance.now();
    const response = await this.call<unknown>({ method: 'GET', path: ServiceClient.PING_PATH, retrySafe: true });
    const latencyMs = performance.now() - started;
    const header = response.headers.date;
    const serverTime = Date.parse((Array.isArray(header) ? header[0] : header) ?? '');
    // The Date header has whole seconds: compare the middle of that second with the middle of the exchange.
    const clockSkewMs = Number.isNaN(serverTime) ? undefined : serverTime + 500 - (sentAt + Date.now()) / 2;
    return { latencyMs, clockSkewMs };
  }

  /** What ping asks for. */
  static readonly PING_PATH = '/v1/swarm/agents';

  async #body<T>(options: CallOptions): Promise<T> {
    return (await this.call<T>(options)).body;
  }

  /** Sends one call with its retries; resolves on 2xx, rejects with a SvcError otherwise. */
  async call<T>(options: CallOptions): Promise<ServiceResponse<T>> {
    const deadline = Date.now() + (options.deadlineMs ?? this.#deadlineMs);
    let lastFailure: SvcError | undefined;
    // Whether any attempt may have reached the service: a failure says not_sent only when none did.
    let mayHaveReached = false;
    const given = (failure: SvcError): SvcError =>
      mayHaveReached && failure.extensions.not_sent === true ? new SvcError(failure.code, failure.message, { cause: failure }) : failure;
    for (let attempt = 1; ; attempt += 1) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw given(lastFailure ?? this.#unreachable('the deadline passed'));
      let outcome: ServiceResponse<unknown> | SvcError;
      try {
        outcome = await this.#send(options, remaining);
      } catch (error) {
        if (options.signal?.aborted === true) throw new SvcError('interrupted', `the call to ${options.path} was given up`);
        outcome = this.#networkFailure(error);
      }
      if (!(outcome instanceof SvcError) && outcome.status < 300) return outcome as ServiceResponse<T>;
      const failure = outcome instanceof SvcError ? outcome : this.#toError(outcome);
      mayHaveReached ||= failure.extensions.not_sent !== true;
      const retryable =
        options.retrySafe && (outcome instanceof SvcError ? outcome.code === 'service_unreachable' : RETRYABLE_STATUS.has(outcome.status));
      if (!retryable || attempt >= MAX_ATTEMPTS) throw given(failure);
      lastFailure = failure;
      const backoff = failure.retryAfterSeconds !== undefined ? failure.retryAfterSeconds * 1000 : jitteredBackoff(attempt);
      if (Date.now() + backoff >= deadline || options.signal?.aborted === true) throw given(failure);
      await this.#sleep(backoff);
    }
  }

  /**
   * One attempt, its signal the call's own linked to the attempt's deadline: not AbortSignal.any, which would leave
   * an entry in the call's signal (the daemon's stop, alive as long as the process) at every call
   * (src/lib/linked-signal.ts). The link is let go once the answer is read, or, streamed, once its body closes.
   */
  async #send(options: CallOptions, remainingMs: number): Promise<ServiceResponse<unknown>> {
    const deadline = answerDeadline(remainingMs, options.streamBody === true);
    const linked = options.signal === undefined ? undefined : linkedSignal([options.signal, deadline.signal]);
    let streamed = false;
    try {
      const response = await this.#attempt(options, remainingMs, deadline, linked?.signal ?? deadline.signal);
      if (linked !== undefined && options.streamBody === true && response.status < 300) {
        (response.body as Readable).once('close', linked.release);
        streamed = true;
      }
      return response;
    } finally {
      if (!streamed) linked?.release();
    }
  }

  async #attempt(
    options: CallOptions,
    remainingMs: number,
    deadline: ReturnType<typeof answerDeadline>,
    signal: AbortSignal,
  ): Promise<ServiceResponse<unknown>> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers, 'user-agent': this.#userAgent };
    if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const body = await requestBody(options, headers);
    const response = await this.#transport
      .send({
        method: options.method,
        url: `${this.baseUrl}${options.path}`,
        headers,
        body,
        signal,
        connectTimeoutMs: Math.min(ServiceClient.connectTimeoutMs(this.#deadlineMs), remainingMs),
        // A call with a deadline of its own may wait longer for its answer than the client's usual half-deadline.
        headersTimeoutMs: options.deadlineMs === undefined ? Math.min(this.#perAttemptMs, remainingMs) : remainingMs,
        ...(options.streamBody === true ? { bodyTimeoutMs: 0 } : {}),
      })
      .finally(() => releaseBody(body));
    deadline.answered();
    if (options.streamBody === true && response.statusCode < 300)
      return { status: response.statusCode, body: response.body, headers: response.headers };
    const origin = { baseUrl: this.baseUrl, path: options.path };
    if (options.saveTo !== undefined && response.statusCode < 300) {
      return { status: response.statusCode, body: await saveAnswer(response.body, options.saveTo, origin), headers: response.headers };
    }
    const maxBytes = response.statusCode < 300 ? (options.maxBytes ?? MAX_ANSWER_BYTES) : MAX_ANSWER_BYTES;
    const text = (await readAnswer(response.body, maxBytes, origin)).toString('utf8');
    let parsed: unknown = text;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        if (response.statusCode < 300)
          throw new SvcError('internal', `the service at ${this.baseUrl} answered ${options.path} with something other than JSON`);
      }
    }
    return { status: response.statusCode, body: parsed, headers: response.headers };
  }

  #toError(response: ServiceResponse<unknown>): SvcError {
    const error = SvcError.fromProblem(response.body, response.status);
    const retryAfter = Number(response.headers['retry-after']);
    if (Number.isFinite(retryAfter) && retryAfter >= 0) {
      return new SvcError(error.code, error.message, {
        status: response.status,
        extensions: error.extensions,
        retryAfterSeconds: retryAfter,
        ...(error.remedy === undefined ? {} : { remedy: error.remedy }),
      });
    }
    return error;
  }

  #networkFailure(error: unknown): SvcError {
    if (error instanceof SvcError) return error;
    const code = (error as { code?: string; cause?: { code?: string } }).code ?? (error as { cause?: { code?: string } }).cause?.code;
    const name = (error as Error).name;
    if ((code !== undefined && NETWORK_ERROR_CODES.has(code)) || name === 'TimeoutError' || name === 'AbortError') {
      return this.#unreachable(code ?? 'timed out', error, code !== undefined && NOT_SENT_ERROR_CODES.has(code));
    }
    const tls = tlsFailure(error, this.baseUrl);
    if (tls !== undefined) return this.#unreachable(tls, error);
    return this.#unreachable((error as Error).message ?? String(error), error);
  }

  /** `notSent`: the request provably never reached the service (no connection was made). */
  #unreachable(why: string, cause?: unknown, notSent = false): SvcError {
    return new SvcError('service_unreachable', `cannot reach the service at ${this.baseUrl} (${why})`, {
      cause,
      ...(notSent ? { extensions: { not_sent: true } } : {}),
    });
  }
}
