// POST /v1/swarm/execute (spec §4; docs/decisions/0008-execute-debits-atomically.md; docs/api.md
// "Runs on the node"). Bearer JWT whose sub is the body's user_id (or the credential of one of that user's nodes),
// and an Idempotency-Key header. The run goes to a node; the answer is the node's result when it comes within the
// request's wait (200), else the run as it stands (202) to follow with GET /v1/swarm/runs/{run_id}; or, asked with
// Accept: text/event-stream, the run's events as they come and its result last (run-stream/follow-execution.ts).
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { ExecuteRequest, RunResponse } from '../../../../contract/schemas.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userIdOf } from '../../../http/auth.js';
import { parseIdempotencyKey } from '../../../runs/idempotency.js';
import { leaseSecondsFrom, runView } from '../../../runs/run-view.js';
import type { Wake } from '../../../runs/run-events.js';
import { createRuns } from '../../../runs/runs.js';
import type { Caller } from '../../../runs/start-run.js';
import { preferredWaitMs } from '../../../http/prefer.js';
import { RUN_TRIGGER_HEADER } from '../../../../contract/run-trigger.js';
import { executeTriggerOf } from '../../../runs/run-trigger.js';
import { sendEventStream } from '../../../http/event-stream.js';
import { followFrom } from '../../../run-logs/follow-logs.js';
import { createEventStore } from '../../../run-stream/event-store.js';
import { followExecution, wantsEventStream } from '../../../run-stream/follow-execution.js';

export function executeRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const runs = createRuns(ctx);
    const streamDeps = { runs: runs.store, events: createEventStore(ctx.store), keys: runs.keys };
    const streamExecution = (reply: FastifyReply, opening: { run_id: string }, lastEventId: string | string[] | undefined) =>
      sendEventStream(reply, (gone) => followExecution(ctx, streamDeps, opening, followFrom(undefined, lastEventId), gone));

    app.post<{ Body: ExecuteRequest }>(
      '/v1/swarm/execute',
      {
        // The credential is checked before the body is read: a caller without one learns nothing about the request.
        config: { auth: 'access-token-or-node' },
        schema: { body: ExecuteRequest, response: { 200: RunResponse, 202: RunResponse } },
      },
      async (request, reply) => {
        const receivedAt = performance.now();
        const node = nodeOf(request);
        const caller: Caller = node === undefined ? { kind: 'user', sub: userIdOf(request) } : { kind: 'node', node };
        const started = await runs.start({
          caller,
          request: request.body,
          idempotencyKey: parseIdempotencyKey(request.headers['idempotency-key']),
          trigger: executeTriggerOf(request.headers[RUN_TRIGGER_HEADER], caller.kind),
        });
        const streamed = node === undefined && wantsEventStream(request.headers.accept);
        if (started.kind === 'replay') {
          reply.header('idempotent-replayed', 'true');
          // A replay of a key whose run has an answer: streamed again from its first event (or Last-Event-ID's next).
          const answer = JSON.parse(started.json) as { run_id?: unknown };
          if (streamed && started.statusCode === 200 && typeof answer.run_id === 'string')
            return streamExecution(reply, { ...answer, run_id: answer.run_id }, request.headers['last-event-id']);
          return sendJson(reply, started.statusCode, started.json);
        }
        if (started.kind === 'in_flight') reply.header('idempotent-replayed', 'true');
        const { run } = started;
        // A node's own run: it runs it now; the lease (again, on a replay to the same node) is what its result carries.
        if (node !== undefined && run.node_id === node.node_id && run.status === 'running' && run.lease_id !== null) {
          // The node runs it itself: the secrets its agent declares go with the lease (docs/api.md "Secrets").
          const secrets = await runs.secretsOf(run);
          const lease = {
            lease_id: run.lease_id,
            expires_at: run.lease_expires_at!,
            seconds: leaseSecondsFrom(run.lease_expires_at!, ctx.clock.now(), receivedAt),
          };
          const view = runView(run, await ctx.ledger.balance(run.user_id), lease);
          return reply.status(202).send(secrets === undefined ? view : { ...view, lease: { ...view.lease!, secrets } });
        }
        if (started.kind === 'started') ctx.runEvents.queued(run.user_id);
        if (streamed) return streamExecution(reply, runView(run, await ctx.ledger.balance(run.user_id)), request.headers['last-event-id']);
        const waitMs = preferredWaitMs(request.headers.prefer, ctx.runTiming.executeWaitMs);
        // The answer comes with the wake-up when the run finished here; a run started just now has none to read yet.
        const finalAnswer = async (wake: Wake): Promise<string | undefined> =>
          wake.hint ?? (wake.reason === 'first' && started.kind === 'started' ? undefined : runs.keys.finalAnswer(run.run_id));
        const final = await ctx.runEvents.waitFor({ run: run.run_id }, finalAnswer, waitMs, ctx.shutdownSignal);
        if (final !== undefined) return sendJson(reply, 200, final);
        const now = (await runs.store.get(run.run_id))!;
        return reply
          .status(202)
          .header('location', `/v1/swarm/runs/${run.run_id}`)
          .send(runView(now, await ctx.ledger.balance(now.user_id)));
      },
    );
  };
}

/** A stored answer is sent as it is, so a replay is byte for byte the first response. */
function sendJson(reply: FastifyReply, status: number, json: string): FastifyReply {
  return reply.status(status).type('application/json; charset=utf-8').send(json);
}
