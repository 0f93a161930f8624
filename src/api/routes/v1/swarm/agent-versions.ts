// Agent upload (docs/api.md "Agent upload"; spec §1.4, §5.4: the JWT unlocks agent upload):
// - POST /v1/swarm/agents/{agent_id}/versions: a bundle archive as the body (JWT of a tier whose docs unlock it);
// - GET  /v1/swarm/agents/{agent_id}/versions: the user's versions, newest first, and the current one;
// - PUT  /v1/swarm/agents/{agent_id}/current: make an uploaded version current (rollback);
// - DELETE /v1/swarm/agents/{agent_id}/current: none current, back to the built-in agent (the versions stay);
// - DELETE /v1/swarm/agents/{agent_id}/versions/{version}: remove a version (not the current one) to free quota;
// - GET  /v1/swarm/bundles/{digest}: the archive, for a node of the uploader (or the uploader).
import type { FastifyError, FastifyPluginAsync, FastifyReply } from 'fastify';
import { type Static } from '@sinclair/typebox';
import { MAX_BUNDLE_BYTES } from '../../../../contract/agent-bundle.js';
import {
  AgentVersionsResponse,
  BundleParams,
  SetCurrentRequest,
  UploadResponse,
  VersionParams,
  type AgentVersion,
} from '../../../../contract/agent-upload.js';
import { isUploadableAgentId } from '../../../../contract/own-agents.js';
import type { AccessTokenClaims } from '../../../../contract/claims.js';
import { SvcError } from '../../../../contract/errors.js';
import { AgentParams } from '../../../../contract/node-protocol.js';
import { isTierId, TIER_IDS, TIERS } from '../../../../contract/tiers.js';
import { readBundleArchive } from '../../../../lib/bundle-archive.js';
import { isoTime } from '../../../../lib/clock.js';
import { createAgentVersions, type AgentVersionRow } from '../../../agents/agent-versions.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userIdOf, userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { agentUploadedMail } from '../../../mail/messages.js';
import { runInBackground } from '../../../context.js';
import { handleError } from '../../../http/problem.js';
import { createUploadRate } from '../../../agents/upload-rate.js';

/** What an upload may be sent as; the bytes decide gzip or plain tar (its magic number), not the label. */
export const ARCHIVE_TYPES = ['application/gzip', 'application/x-gzip', 'application/x-tar', 'application/octet-stream'];
const UPLOAD_SECTION = 'agent-upload';

type Params = { Params: Static<typeof AgentParams> };

export function agentVersionRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const versions = createAgentVersions(ctx.store);
    const uploadRate = createUploadRate(ctx.store, ctx.uploadLimits.uploadsPerHour, ctx.clock);
    app.addContentTypeParser(ARCHIVE_TYPES, { parseAs: 'buffer', bodyLimit: MAX_BUNDLE_BYTES }, (_request, body, done) => done(null, body));

    app.post<Params & { Body: unknown }>(
      '/v1/swarm/agents/:agent_id/versions',
      {
        // An upload changes what runs on the user's nodes: a recent sign-in (docs/api.md "Step-up").
        config: { auth: 'access-token', stepUp: true },
        bodyLimit: MAX_BUNDLE_BYTES,
        // Every upload of the user counts, refused ones too, before the body is read (agents/upload-rate.ts).
        onRequest: async (request) => void (await uploadRate.take(userIdOf(request))),
        // Tier and agent before the body is read: a refused caller's 5 MiB is never taken in.
        preParsing: async (request) => void uploadableAgent(userOf(request), (request.params as { agent_id: string }).agent_id),
        schema: { params: AgentParams, response: { 200: UploadResponse, 201: UploadResponse } },
        // The body cap here is the bundle's, not the 64 KiB of JSON bodies: say so in the 413.
        errorHandler: (error: FastifyError, request, reply) =>
          handleError(
            error.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
              ? new SvcError('payload_too_large', `the bundle is larger than ${MAX_BUNDLE_BYTES} bytes (5 MiB)`, {
                  remedy: 'Keep the bundle to its code; leave data on the host.',
                })
              : error,
            request,
            reply,
          ),
      },
      async (request, reply) => {
        const agentId = uploadableAgent(userOf(request), request.params.agent_id);
        if (!Buffer.isBuffer(request.body)) {
          throw new SvcError(
            'unsupported_media_type',
            `send the bundle archive as the body, with Content-Type ${ARCHIVE_TYPES.join(', ')}`,
            {
              remedy: 'Upload with swarm-node agent upload DIR, or curl --data-binary @bundle.tar.gz -H "Content-Type: application/gzip".',
            },
          );
        }
        const bundle = await readBundleArchive(request.body);
        if (bundle.manifest.agent_id !== agentId) {
          throw new SvcError('bundle_invalid', `agent.json is for ${bundle.manifest.agent_id}, uploaded as ${agentId}`, {
            extensions: { errors: [{ path: 'agent.json#/agent_id', message: `must be ${agentId}, the agent_id of the upload's path` }] },
          });
        }
        const userId = userIdOf(request);
        const uploaded = await versions.upload(userId, request.body, bundle, ctx.clock.now(), ctx.uploadLimits.quota);
        if (uploaded.created) {
          const client = clientSeen(request);
          const { version, digest } = uploaded.row;
          await ctx.audit.record(userId, 'agent_uploaded', client, { agent_id: agentId, version, digest });
          runInBackground(ctx, ctx.mailer.send(agentUploadedMail(userId, agentId, version, digest, ctx.clock.now(), client)));
        }
        reply.code(uploaded.created ? 201 : 200);
        return { ...view(uploaded.row, (await versions.current(userId, agentId))?.digest), created: uploaded.created };
      },
    );

    app.get<Params>(
      '/v1/swarm/agents/:agent_id/versions',
      { config: { auth: 'access-token' }, schema: { params: AgentParams, response: { 200: AgentVersionsResponse } } },
      async (request) => listing(uploadableAgent(userOf(request), request.params.agent_id), userIdOf(request)),
    );

    app.put<Params & { Body: SetCurrentRequest }>(
      '/v1/swarm/agents/:agent_id/current',
      {
        config: { auth: 'access-token', stepUp: true },
        schema: { params: AgentParams, body: SetCurrentRequest, response: { 200: AgentVersionsResponse } },
      },
      async (request) => {
        const agentId = uploadableAgent(userOf(request), request.params.agent_id);
        const userId = userIdOf(request);
        const { version, digest } = request.body;
        if ((version === undefined) === (digest === undefined)) {
          throw new SvcError('invalid_request', 'name the version to make current by exactly one of version and digest', {
            extensions: { errors: [{ path: '', message: 'needs version or digest' }] },
          });
        }
        const target = (await versions.list(userId, agentId)).find((row) =>
          version !== undefined ? row.version === version : row.digest === digest,
        );
        if (target === undefined) {
          throw new SvcError('not_found', `you have no version ${version ?? digest} of ${agentId}`, {
            remedy: `List yours: swarm-node agent versions ${agentId}.`,
          });
        }
        await versions.setCurrent(userId, agentId, target.digest, ctx.clock.now());
        await ctx.audit.record(userId, 'agent_current_changed', clientSeen(request), {
          agent_id: agentId,
          version: target.version,
          digest: target.digest,
        });
        return listing(agentId, userId);
      },
    );

    // Back to the built-in agent, the way `PUT` moves between uploads: the pointer goes, the versions stay (any of
    // them can be made current again). Repeating it changes nothing and is no error.
    app.delete<Params>(
      '/v1/swarm/agents/:agent_id/current',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: AgentParams, response: { 200: AgentVersionsResponse } } },
      async (request) => {
        const agentId = uploadableAgent(userOf(request), request.params.agent_id);
        const userId = userIdOf(request);
        await versions.clearCurrent(userId, agentId, ctx.clock.now());
        await ctx.audit.record(userId, 'agent_current_changed', clientSeen(request), { agent_id: agentId, version: null, digest: null });
        return listing(agentId, userId);
      },
    );

    // Frees the room a version takes (the upload quota); the retention sweep does the same for versions long unused.
    // Removing code is a change of the code: a recent sign-in, and in the audit.
    app.delete<{ Params: Static<typeof VersionParams> }>(
      '/v1/swarm/agents/:agent_id/versions/:version',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: VersionParams, response: { 200: AgentVersionsResponse } } },
      async (request) => {
        const agentId = uploadableAgent(userOf(request), request.params.agent_id);
        const userId = userIdOf(request);
        await versions.remove(userId, agentId, request.params.version);
        await ctx.audit.record(userId, 'agent_version_removed', clientSeen(request), {
          agent_id: agentId,
          version: request.params.version,
        });
        return listing(agentId, userId);
      },
    );

    // A node fetches the bundle of a run it was handed, and only those (docs/api.md "Scopes"): a taken-over node reads
    // none of its user's other code; the uploader reads any of theirs. A digest learnt elsewhere opens nobody's code.
    // Immutable: its name is its hash.
    app.get<{ Params: Static<typeof BundleParams> }>(
      '/v1/swarm/bundles/:digest',
      { config: { auth: 'access-token-or-node' }, schema: { params: BundleParams } },
      async (request, reply) => {
        const node = nodeOf(request);
        const handed = node === undefined || (await versions.handedTo(node.node_id, request.params.digest));
        const archive = handed ? await versions.archiveFor(userIdOf(request), request.params.digest) : undefined;
        if (archive === undefined) throw new SvcError('not_found', `no bundle ${request.params.digest} of this user`);
        return sendArchive(reply, archive, request.params.digest);
      },
    );

    async function listing(agentId: string, userId: string): Promise<Static<typeof AgentVersionsResponse>> {
      const current = await versions.current(userId, agentId);
      return {
        agent_id: agentId,
        current: current === undefined ? null : view(current, current.digest),
        versions: (await versions.list(userId, agentId)).map((row) => view(row, current?.digest)),
      };
    }
  };
}

function view(row: AgentVersionRow, currentDigest: string | undefined): AgentVersion {
  return {
    agent_id: row.agent_id,
    version: row.version,
    digest: row.digest,
    size_bytes: row.size_bytes,
    files: row.files,
    unpacked_bytes: row.unpacked_bytes,
    uploaded_at: isoTime(row.uploaded_at),
    current: row.digest === currentDigest,
  };
}

/** The catalog agent of the path, for a caller whose tier's docs unlock agent upload (403 otherwise). */
function uploadableAgent(claims: AccessTokenClaims, agentId: string): string {
  const tier = isTierId(claims.tier) ? TIERS[claims.tier] : undefined;
  if (tier === undefined || !(tier.docs_sections as readonly string[]).includes(UPLOAD_SECTION)) {
    const unlocking = TIER_IDS.filter((id) => (TIERS[id].docs_sections as readonly string[]).includes(UPLOAD_SECTION));
    throw new SvcError('forbidden', `the tier ${claims.tier} does not unlock agent upload`, {
      remedy: `Agent upload comes with the tiers ${unlocking.join(', ')}; sign in with a JWT of one of them.`,
      extensions: { tiers: unlocking },
    });
  }
  // A catalog agent (a version of one's own of it), or an agent of one's own (docs/api.md "Agents of one's own").
  if (!isUploadableAgentId(agentId))
    throw new SvcError(
      'agent_not_found',
      `no agent ${JSON.stringify(agentId)} in the catalog, and it is no id an agent of your own may take`,
    );
  return agentId;
}

function sendArchive(reply: FastifyReply, archive: Buffer, digest: string): FastifyReply {
  return reply
    .type(archive[0] === 0x1f && archive[1] === 0x8b ? 'application/gzip' : 'application/x-tar')
    .header('etag', `"${digest}"`)
    .header('cache-control', 'private, max-age=31536000, immutable')
    .send(archive);
}
