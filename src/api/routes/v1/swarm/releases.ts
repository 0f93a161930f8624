// Releases of swarm-node (docs/api.md "Releases"):
// - GET /v1/swarm/releases/latest?platform=linux-x64: the newest release in svc-api --releases-dir;
// - GET /v1/swarm/releases/{version}/{file}: one of its four files (tarball, .sha256, manifest, signature);
// - GET /install.sh: the host bootstrap, with this service's public URL as its default (no credential: it holds none).
// Both release endpoints take a deploy token not yet used (install.sh downloads before it enrolls) or a node
// credential (swarm-node upgrade); the token is only looked at, never spent here.
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { SvcError } from '../../../../contract/errors.js';
import { LatestReleaseQuery, LatestReleaseResponse, ReleaseFileParams } from '../../../../contract/releases.js';
import { runningPackageDir } from '../../../../lib/package-dir.js';
import type { ServiceContext } from '../../../context.js';
import { parseBearer } from '../../../http/auth.js';
import { createNodeAuthenticator, isNodeCredential } from '../../../nodes/credentials.js';
import { createDeployTokens } from '../../../paygate/deploy-tokens.js';
import { openReleaseDirectory } from '../../../releases/release-directory.js';

/** The line of scripts/install.sh that names its default service; the served copy names this one. */
const BASE_URL_LINE = /^DEFAULT_BASE_URL=.*$/m;

export function releaseRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const nodes = createNodeAuthenticator(ctx.store);
    const deployTokens = createDeployTokens(ctx.store, ctx.clock);
    const releases = ctx.releasesDir === undefined ? undefined : openReleaseDirectory(ctx.releasesDir);

    const authorize = async (request: FastifyRequest): Promise<void> => {
      const bearer = parseBearer(request.headers.authorization);
      const refused = new SvcError('unauthorized', 'a release is downloaded with a deploy token not yet used, or a node credential', {
        remedy: 'Pass the deploy token from activation (install.sh --token-file FILE), or, on an enrolled node: swarm-node upgrade.',
      });
      if (bearer.kind !== 'token') throw refused;
      if (isNodeCredential(bearer.token)) {
        await nodes.authenticate(bearer.token);
        return;
      }
      if (!(await deployTokens.usable(bearer.token))) throw refused;
    };
    const published = () => {
      if (releases === undefined) {
        throw new SvcError('not_found', 'this service publishes no releases', {
          remedy: 'Start svc-api with --releases-dir DIR holding the output of npm run release.',
        });
      }
      return releases;
    };

    app.get<{ Querystring: LatestReleaseQuery }>(
      '/v1/swarm/releases/latest',
      { onRequest: authorize, schema: { querystring: LatestReleaseQuery, response: { 200: LatestReleaseResponse } } },
      async (request) => {
        const platform = request.query.platform ?? 'linux-x64';
        const latest = published().latest(platform);
        if (latest === undefined) throw new SvcError('not_found', `no release for ${platform} is published here`);
        const { manifest, names } = latest;
        const url = (name: string) =>
          `${ctx.urls.publicUrl}/v1/swarm/releases/${encodeURIComponent(manifest.version)}/${encodeURIComponent(name)}`;
        return {
          version: manifest.version,
          platform,
          runtime_node: manifest.runtime,
          artifact: {
            name: names.artifact,
            size_bytes: manifest.artifact.size,
            sha256: manifest.artifact.sha256,
            url: url(names.artifact),
          },
          sha256_url: url(names.sha256),
          manifest_url: url(names.manifest),
          signature_url: url(names.signature),
        };
      },
    );

    app.get<{ Params: ReleaseFileParams }>(
      '/v1/swarm/releases/:version/:file',
      { onRequest: authorize, schema: { params: ReleaseFileParams } },
      async (request, reply) => {
        const path = published().file(request.params.version, request.params.file);
        if (path === undefined) throw new SvcError('not_found', `no file ${request.params.file} of release ${request.params.version}`);
        const name = request.params.file;
        return reply
          .type(
            name.endsWith('.tar.gz')
              ? 'application/gzip'
              : name.endsWith('.sig')
                ? 'application/octet-stream'
                : 'text/plain; charset=utf-8',
          )
          .header('content-length', statSync(path).size)
          .header('cache-control', 'private, max-age=31536000, immutable')
          .send(createReadStream(path));
      },
    );

    // The service's public URL (SVC_PUBLIC_URL), never the request's Host: a script piped into a root shell must not
    // name whatever host a link, a cache or a proxy put in front of it (docs/api.md "Releases"). The URL was checked
    // at start to hold nothing a single-quoted shell word could not (ops/env-config.ts).
    app.get('/install.sh', async (_request, reply) => {
      const script = readFileSync(join(runningPackageDir(), 'scripts', 'install.sh'), 'utf8');
      return reply
        .type('text/x-shellscript; charset=utf-8')
        .send(script.replace(BASE_URL_LINE, `DEFAULT_BASE_URL='${ctx.urls.publicUrl}'`));
    });
  };
}
