// docs/api.md "Run artifacts":
// - PUT /v1/swarm/runs/{run_id}/artifacts/{name}?lease_id=: the node holding the run uploads one file (octet-stream);
// - GET /v1/swarm/runs/{run_id}/artifacts: the run's artifacts, for its user;
// - GET /v1/swarm/runs/{run_id}/artifacts/{name}: one artifact's bytes, streamed, as an attachment.
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { ArtifactLeaseQuery, ArtifactParams, ArtifactUpload } from '../../../../contract/artifacts.js';
import { SvcError } from '../../../../contract/errors.js';
import { RunArtifacts } from '../../../../contract/jobs.js';
import { isoTime } from '../../../../lib/clock.js';
import { checkBeforeBody, storeArtifact } from '../../../artifacts/artifact-upload.js';
import { createArtifactStore } from '../../../artifacts/artifact-store.js';
import { sendArtifact } from '../../../artifacts/artifact-download.js';
import { createRunArtifacts } from '../../../artifacts/run-artifacts.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userIdOf } from '../../../http/auth.js';
import { handleError } from '../../../http/problem.js';
import { createRunStore } from '../../../runs/run-store.js';
import type { Readable } from 'node:stream';

const RunParams = Type.Object({ run_id: Type.String({ maxLength: 64 }) });
/** The bytes of an artifact: nothing else is taken, and nothing of it is parsed. */
const ARTIFACT_TYPE = 'application/octet-stream';

export function runArtifactRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const artifacts = createArtifactStore(ctx.store);
    const runs = createRunStore(ctx.store);
    const { limits } = ctx.artifacts;
    const listing = createRunArtifacts(ctx, artifacts, runs);
    // This plugin's routes only (fastify encapsulation): the body reaches the handler as the stream it is, past the
    // 64 KiB JSON limit, counted and capped by the upload itself.
    app.addContentTypeParser(ARTIFACT_TYPE, (_request, payload, done) => done(null, payload));

    app.put<{ Params: ArtifactParams; Querystring: ArtifactLeaseQuery }>(
      '/v1/swarm/runs/:run_id/artifacts/:name',
      {
        // Uploads come after the agent and before the result: during a drain they are still taken in, as the result is.
        config: { auth: 'node', completesInFlightWork: true, bodyTimeout: limits.bodyTimeout },
        schema: { params: ArtifactParams, querystring: ArtifactLeaseQuery, response: { 200: ArtifactUpload, 201: ArtifactUpload } },
        errorHandler: (error: FastifyError, request, reply) => refuseAfterBody(error, request, reply, limits.maxFileBytes),
      },
      async (request, reply) => {
        const { run_id: runId, name } = request.params;
        const body = request.body as Readable | undefined;
        if (body === undefined || typeof (body as Readable).pipe !== 'function') {
          throw new SvcError('unsupported_media_type', `send the artifact's bytes as the body, with Content-Type ${ARTIFACT_TYPE}`);
        }
        const length = request.headers['content-length'];
        const put = {
          node: nodeOf(request)!,
          run: await runs.get(runId),
          runId,
          name,
          leaseId: request.query.lease_id,
          declaredBytes: length === undefined ? undefined : Number(length),
        };
        checkBeforeBody(put, limits, await artifacts.runTotals(runId, name));
        const stored = await storeArtifact(ctx, { artifacts, runs }, { ...put, body });
        reply.code(stored.created ? 201 : 200);
        return { ...listing.viewOf(stored.row, put.run!), created: stored.created };
      },
    );

    app.get<{ Params: Static<typeof RunParams> }>(
      '/v1/swarm/runs/:run_id/artifacts',
      { config: { auth: 'access-token' }, schema: { params: RunParams, response: { 200: RunArtifacts } } },
      async (request) => {
        const run = await listing.usersRun(request.params.run_id, userIdOf(request));
        const expiresAt = listing.expiryOf(run);
        const rows = await listing.listed(run);
        return {
          run_id: run.run_id,
          artifacts: rows.map((row) => listing.viewOf(row, run)),
          expires_at: expiresAt === null ? null : isoTime(expiresAt),
        };
      },
    );

    app.get<{ Params: ArtifactParams }>(
      '/v1/swarm/runs/:run_id/artifacts/:name',
      { config: { auth: 'access-token' }, schema: { params: ArtifactParams } },
      async (request, reply) => {
        const run = await listing.usersRun(request.params.run_id, userIdOf(request));
        const row = await listing.found(run, request.params.name);
        const etag = `"${row.sha256}"`;
        reply.header('etag', etag).header('cache-control', 'private, no-cache').header('x-content-type-options', 'nosniff');
        if (request.headers['if-none-match'] === etag) return reply.code(304).send();
        return sendArtifact(reply, artifacts, row);
      },
    );
  };
}

/**
 * A refused upload: the rest of its body is read and dropped first (up to an artifact's size), so the node, still
 * sending, gets the answer rather than a connection reset. A body past that, or one cut off, closes the connection.
 */
async function refuseAfterBody(error: FastifyError, request: FastifyRequest, reply: FastifyReply, maxBytes: number): Promise<FastifyReply> {
  const body = request.body as Readable | undefined;
  const unread = body !== undefined && typeof body.resume === 'function' && !body.readableEnded && !body.destroyed;
  if (unread && Number(request.headers['content-length'] ?? Number.POSITIVE_INFINITY) <= maxBytes) {
    await new Promise<void>((resolve) => {
      body
        .on('end', resolve)
        .on('error', () => resolve())
        .on('close', () => resolve());
      body.resume();
    });
  }
  if (!(body?.readableEnded ?? true)) reply.header('connection', 'close');
  const wrongType =
    error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
      ? new SvcError('unsupported_media_type', `send the artifact's bytes as the body, with Content-Type ${ARTIFACT_TYPE}`)
      : error;
  return handleError(wrongType, request, reply);
}
