// The console's runs (docs/api.md "Console"): GET {wallet_url}/runs (the history, filtered and searched), GET runs/{run_id} (one
// run: its output, log, artifacts), GET runs/{run_id}/log-events (its log followed live: the same Server-Sent Events
// as the API's ?follow=1, for the session's cookie, which an EventSource sends where it cannot send a bearer), GET
// runs/{run_id}/artifacts/{name} (a download), POST runs/{run_id}/cancel, and GET/POST runs/{run_id}/rerun (its price,
// then a new billed run of the same input). Another user's run is the same 404 as none.
import { randomUUID } from 'node:crypto';
import { drainedPin } from '../../nodes/node-drain.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { SvcError } from '../../../contract/errors.js';
import { RunListQuery } from '../../../contract/jobs.js';
import { sendArtifact } from '../../artifacts/artifact-download.js';
import { createArtifactStore } from '../../artifacts/artifact-store.js';
import { createRunArtifacts } from '../../artifacts/run-artifacts.js';
import { FOLLOW_LOG_SCRIPT_SOURCE } from '../../console/follow-log-script.js';
import { follows, runPage } from '../../console/run-page.js';
import { createEventStore } from '../../run-stream/event-store.js';
import { followEvents } from '../../run-stream/follow-events.js';
import { AUTO_REFRESH_SCRIPT_SOURCE } from '../../console/auto-refresh-script.js';
import { runSearchOf } from '../../console/run-search.js';
import { rerunPage } from '../../console/rerun-page.js';
import { createAgentPrices } from '../../agents/agent-prices.js';
import { createAgentVersions } from '../../agents/agent-versions.js';
import { parseIdempotencyKey } from '../../runs/idempotency.js';
import { refreshesRuns, runsPage, type RunFilter } from '../../console/runs-page.js';
import { createNodeRegistry } from '../../nodes/registry.js';
import { followFrom, followLogs } from '../../run-logs/follow-logs.js';
import { sendEventStream } from '../../http/event-stream.js';
import { createLogStore } from '../../run-logs/log-store.js';
import { createRunCanceller } from '../../runs/cancel-run.js';
import { createRunHistory } from '../../runs/run-history.js';
import { isoTime } from '../../../lib/clock.js';
import { runView } from '../../runs/run-view.js';
import { createRuns } from '../../runs/runs.js';
import type { RunRow } from '../../runs/run-store.js';
import { createSecretsOfRun } from '../../user-secrets/run-secrets.js';
import { createSecretStore } from '../../user-secrets/secret-store.js';
import { moneyOfRun } from '../../wallet/run-money.js';
import { createRedactor, redactJson } from '../../../lib/redact.js';
import { redirectTo, sendHtml, type PageScope } from '../../wallet-page/page-scope.js';
import { assertSameOrigin, policyWithScript } from '../../wallet-page/security.js';
import type { WalletSession } from '../../wallet-page/wallet-sessions.js';

/** A page of the history, and the log lines a run page shows before it follows the rest. */
const RUNS_SHOWN = 50;
const LOG_LINES_SHOWN = 1000;
const EVENTS_SHOWN = 200;
const RUN_ID_CHARS = 64;
const checkQuery = TypeCompiler.Compile(RunListQuery);
const RUN_PAGE_POLICY = policyWithScript(FOLLOW_LOG_SCRIPT_SOURCE);
const RUNS_PAGE_POLICY = policyWithScript(AUTO_REFRESH_SCRIPT_SOURCE, { connect: false });
const DAY_MS = 24 * 60 * 60 * 1000;

/** The form's "To" is a UTC day it includes: the history's until is the start of the next; a time is taken as it is. */
function untilOf(text: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return text;
  const at = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(at) ? text : new Date(at + DAY_MS).toISOString();
}

type RunRequest = FastifyRequest<{ Params: { run_id: string } }>;

export function runPages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    const runs = createRuns(ctx);
    const history = createRunHistory(ctx.store);
    const nodes = createNodeRegistry(ctx.store);
    const logs = createLogStore(ctx.store);
    const events = createEventStore(ctx.store);
    const artifacts = createArtifactStore(ctx.store);
    const listing = createRunArtifacts(ctx, artifacts, runs.store);
    const cancel = createRunCanceller(ctx, runs.store, runs.finish);
    const prices = createAgentPrices(ctx.store, createAgentVersions(ctx.store), ctx.uploadLimits.ownAgentPriceCents);
    const secretsOf = createSecretsOfRun(ctx.store, createSecretStore(ctx.store, ctx.vault, ctx.clock));

    /** The input as sent, with every form of the values of the secrets its agent is handed hidden (lib/redact.ts). */
    const shownInput = async (run: RunRow): Promise<unknown> => {
      if (run.input_json === null) return null;
      const input = JSON.parse(run.input_json) as unknown;
      const secrets = await secretsOf(run);
      return secrets === undefined ? input : redactJson(input, createRedactor(Object.values(secrets)));
    };

    /** The session's run, or the same 404 as for a run that does not exist (an id longer than any included). */
    const usersRun = async (request: RunRequest, session: WalletSession): Promise<RunRow> => {
      if (request.params.run_id.length > RUN_ID_CHARS) throw new SvcError('run_not_found', 'you have no such run');
      return listing.usersRun(request.params.run_id, session.user_id);
    };

    app.get('/runs', async (request, reply) => {
      const session = await scope.requireSession(request);
      const query = request.query as Record<string, unknown>;
      // The form sends every field, the unchosen ones empty: those are no filter.
      const filter: RunFilter & { cursor?: string } = {};
      for (const key of ['q', 'agent_id', 'status', 'node_id', 'since', 'until', 'cursor'] as const) {
        if (typeof query[key] === 'string' && query[key] !== '') filter[key] = query[key];
      }
      const search = filter.q === undefined ? undefined : runSearchOf(filter.q);
      if (search !== undefined && 'run_id' in search) return redirectTo(request, reply, `runs/${encodeURIComponent(search.run_id)}`);
      const model = {
        filter: {
          q: filter.q,
          agent_id: filter.agent_id,
          status: filter.status,
          node_id: filter.node_id,
          since: filter.since,
          until: filter.until,
        },
        nodes: await nodes.nodesOf(session.user_id),
        refresh: query.refresh !== 'off',
      };
      const frame = scope.frame(request, session, 'runs');
      try {
        const { q: _typed, ...asked } = { ...filter, ...search, ...(filter.until === undefined ? {} : { until: untilOf(filter.until) }) };
        if (!checkQuery.Check(asked))
          throw new SvcError('invalid_request', 'choose the status from the list; an agent or node id is at most 128 characters');
        const page = await history.list(session.user_id, { ...asked, limit: String(RUNS_SHOWN) } as RunListQuery);
        const shown = { ...model, runs: page.runs, next_cursor: page.next_cursor };
        // While a run on it is in flight, the page refreshes itself: its script alone, besides the local times.
        if (refreshesRuns(shown)) reply.header('content-security-policy', RUNS_PAGE_POLICY);
        return sendHtml(reply, 200, runsPage(frame, shown));
      } catch (error) {
        if (!(error instanceof SvcError) || error.code !== 'invalid_request') throw error;
        return sendHtml(
          reply,
          400,
          runsPage(frame, { ...model, runs: [], next_cursor: null, error: `These filters cannot be used: ${error.message}.` }),
        );
      }
    });

    app.get<{ Params: { run_id: string } }>('/runs/:run_id', async (request, reply) => {
      const session = await scope.requireSession(request);
      return renderRun(request, reply, session, await usersRun(request, session), 200);
    });

    async function renderRun(
      request: RunRequest,
      reply: FastifyReply,
      session: WalletSession,
      run: RunRow,
      status: number,
      alert?: string,
    ): Promise<FastifyReply> {
      const { entries, truncated, expired } = await logs.read(run.run_id, -1, LOG_LINES_SHOWN);
      const shownEvents = await events.page(run.run_id, -1, EVENTS_SHOWN);
      const expiresAt = listing.expiryOf(run);
      const model = {
        run: runView(run, 0),
        attempts: await history.attempts(run),
        nodes: await nodes.nodesOf(session.user_id),
        log: { entries, more: entries.length === LOG_LINES_SHOWN, truncated, expired },
        events: {
          entries: shownEvents,
          more: shownEvents.length === EVENTS_SHOWN,
          truncated: (await events.state(run.run_id))?.truncated === 1,
        },
        artifacts: (await listing.listed(run)).map((row) => listing.viewOf(row, run)),
        artifactsExpireAt: expiresAt === null ? null : isoTime(expiresAt),
        claimedAt: run.claimed_at === null ? null : isoTime(run.claimed_at),
        input: await shownInput(run),
        refund: (await moneyOfRun(ctx.store, session.user_id, run.run_id)).refund,
        waitingForNode: (await drainedPin(ctx.store, run)) ?? null,
        ...(alert === undefined ? {} : { alert }),
      };
      // The one page that runs a script, while it follows the log or the events: that script alone, allowed by its hash.
      if (follows(model)) reply.header('content-security-policy', RUN_PAGE_POLICY);
      return sendHtml(reply, status, runPage(scope.frame(request, session, 'runs'), model));
    }

    // The log and the events followed live (the page's script): the session's own run, from ?after or Last-Event-ID.
    const follow = (stream: 'log' | 'events') => async (request: RunRequest, reply: FastifyReply) => {
      const session = await scope.requireSession(request);
      const run = await usersRun(request, session);
      const after = (request.query as Record<string, unknown>).after;
      if (after !== undefined && (typeof after !== 'string' || !/^(-1|[0-9]{1,10})$/.test(after)))
        throw new SvcError('invalid_request', `after must be a seq of the run's ${stream}, or -1`);
      const from = followFrom(after, request.headers['last-event-id']);
      return sendEventStream(reply, (gone) =>
        stream === 'log'
          ? followLogs(ctx, { runs: runs.store, logs }, run.run_id, from, gone)
          : followEvents(ctx, { runs: runs.store, events }, run.run_id, from, gone),
      );
    };
    app.get<{ Params: { run_id: string } }>('/runs/:run_id/log-events', follow('log'));
    app.get<{ Params: { run_id: string } }>('/runs/:run_id/run-events', follow('events'));

    app.get<{ Params: { run_id: string; name: string } }>('/runs/:run_id/artifacts/:name', async (request, reply) => {
      const session = await scope.requireSession(request);
      const run = await usersRun(request, session);
      return sendArtifact(reply, artifacts, await listing.found(run, request.params.name));
    });

    // The re-run: its price first, then a new billed run of the same agent and input (as execute's, for the session).
    app.get<{ Params: { run_id: string } }>('/runs/:run_id/rerun', async (request, reply) => {
      const session = await scope.requireSession(request);
      const run = await usersRun(request, session);
      const agent = await prices.agentFor(session.user_id, run.agent_id);
      const model = {
        runId: run.run_id,
        agentId: run.agent_id,
        priceCents: agent.price_cents,
        balanceCents: await ctx.ledger.balance(session.user_id),
        idempotencyKey: randomUUID(),
      };
      return sendHtml(reply, 200, rerunPage(scope.frame(request, session, 'runs'), model));
    });

    app.post<{ Params: { run_id: string } }>('/runs/:run_id/rerun', async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      const run = await usersRun(request, session);
      const key = (request.body as Record<string, unknown> | undefined)?.idempotency_key;
      const started = await runs.start({
        caller: { kind: 'user', sub: session.user_id },
        request: {
          user_id: session.user_id,
          agent_id: run.agent_id,
          ...(run.input_json === null ? {} : { input: JSON.parse(run.input_json) as Record<string, unknown> }),
          ...(run.pinned_node_id === null ? {} : { node_id: run.pinned_node_id }),
        },
        idempotencyKey: parseIdempotencyKey(typeof key === 'string' ? key : undefined),
        // Known here, whatever the browser sends: this route is the console's "Run again".
        trigger: 'rerun',
      });
      if (started.kind === 'replay') {
        const answered = JSON.parse(started.json) as { run_id?: unknown };
        if (typeof answered.run_id !== 'string')
          throw new SvcError('invalid_request', 'this re-run was refused before; open the run and try again');
        return redirectTo(request, reply, `runs/${encodeURIComponent(answered.run_id)}`);
      }
      if (started.kind === 'started') ctx.runEvents.queued(session.user_id);
      return redirectTo(request, reply, `runs/${encodeURIComponent(started.run.run_id)}`);
    });

    app.post<{ Params: { run_id: string } }>('/runs/:run_id/cancel', async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      const run = await usersRun(request, session);
      try {
        await cancel(session.user_id, run.run_id);
      } catch (error) {
        if (!(error instanceof SvcError) || error.code !== 'run_finished') throw error;
        return renderRun(
          request,
          reply,
          session,
          (await runs.store.get(run.run_id))!,
          error.status,
          `This run cannot be cancelled: ${error.message}.`,
        );
      }
      return redirectTo(request, reply, `runs/${encodeURIComponent(run.run_id)}`);
    });
  };
}
