// Builds the service as a fastify instance from its context (fastify/demo's app/server split): server.ts only
// starts and stops it, tests build one per suite.
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { SvcError } from '../contract/errors.js';
import { rememberClientAddress } from './http/client-seen.js';
import { clientErrorHandler } from './http/client-error.js';
import type { ServiceContext } from './context.js';
import { MAX_BODY_BYTES, parseJsonBodies } from './http/json-body.js';
import { handleError } from './http/problem.js';
import { authHook } from './http/auth.js';
import { refuseNulInUrl } from './http/nul-input.js';
import { rateLimitHook } from './http/rate-limit.js';
import { cutStalledBodies, DEFAULT_BODY_TIMEOUT, type BodyTimeout } from './http/body-timeout.js';
import { connectionTimeoutOptions, DEFAULT_CONNECTION_TIMEOUTS, type ConnectionTimeouts } from './http/connection-timeouts.js';
import { agentRoutes } from './routes/v1/swarm/agents.js';
import { agentVersionRoutes } from './routes/v1/swarm/agent-versions.js';
import { authRoutes } from './routes/v1/auth.js';
import { auditRoutes } from './routes/v1/audit.js';
import { docsRoutes } from './routes/v1/docs.js';
import { executeRoutes } from './routes/v1/swarm/execute.js';
import { nodeRoutes } from './routes/v1/swarm/nodes.js';
import { paygateRoutes } from './routes/v1/swarm/paygate.js';
import { runRoutes } from './routes/v1/swarm/runs.js';
import { runControlRoutes } from './routes/v1/swarm/run-control.js';
import { runLogRoutes } from './routes/v1/swarm/run-logs.js';
import { runStreamRoutes } from './routes/v1/swarm/run-stream.js';
import { runArtifactRoutes } from './routes/v1/swarm/run-artifacts.js';
import { paymentWebhookRoutes } from './routes/v1/payments.js';
import { releaseRoutes } from './routes/v1/swarm/releases.js';
import { sandboxRoutes } from './routes/sandbox.js';
import { walletRoutes } from './routes/v1/swarm/wallet.js';
import { budgetRoutes } from './routes/v1/swarm/budgets.js';
import { secretRoutes } from './routes/v1/swarm/secrets.js';
import { usageRoutes } from './routes/v1/swarm/usage.js';
import { webhookRoutes } from './routes/v1/swarm/webhooks.js';
import { scheduleRoutes } from './routes/v1/swarm/schedules.js';
import type { TrustProxy } from './http/trust-proxy.js';
import { walletPageRoutes } from './routes/wallet.js';
import { addOperations } from './ops/operations.js';
import { REQUEST_ID_HEADER, REQUEST_ID_LOG_LABEL, requestIdOf } from './ops/request-id.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's bytes as received, for signature checks (the payment webhook). */
    rawBody?: Buffer;
  }
}

export interface BuildAppOptions {
  logger?: FastifyServerOptions['logger'];
  /** Peers whose X-Forwarded-For names the client (svc-api --trust-proxy); none by default. */
  trustProxy?: TrustProxy;
  /** When a request body that stopped arriving is cut off, unless its route says otherwise (http/body-timeout.ts). */
  bodyTimeout?: BodyTimeout;
  /** When a connection that carries no request being answered is closed (http/connection-timeouts.ts). */
  connectionTimeouts?: ConnectionTimeouts;
}

export async function buildApp(ctx: ServiceContext, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    logger: options.logger ?? false,
    trustProxy: options.trustProxy ?? false,
    // Oversized headers (431) and unparseable requests (400) answer as problem details too, not fastify's own JSON.
    clientErrorHandler: clientErrorHandler(() => app.log),
    bodyLimit: MAX_BODY_BYTES,
    ...connectionTimeoutOptions(options.connectionTimeouts ?? DEFAULT_CONNECTION_TIMEOUTS),
    // Request lines are logged by our own hook, which never logs a query string (the wallet page takes a JWT there).
    // Every line a request logs carries its id as request_id.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
    return503OnClosing: true,
    // X-Request-Id is validated (ops/request-id.ts), so fastify must not take the header as it is.
    requestIdHeader: false,
    genReqId: requestIdOf,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: true, useDefaults: false } },
    routerOptions: {
      // Ids in paths may be 128 characters (ID_PATTERN); the router's own answers to a longer or undecodable path
      // are problem details too, and never echo the path back.
      maxParamLength: 256,
      onMaxParamLength: (_path, req, res) =>
        writeRawProblem(req, res, new SvcError('not_found', 'no such resource: a path segment is too long')),
      onBadUrl: (_path, req, res) =>
        writeRawProblem(req, res, new SvcError('invalid_request', 'the request path is not valid URL encoding')),
    },
  });

  app.setErrorHandler(handleError);
  // Every route, logged at debug once all are added (`routes served`): what this service serves, whole, for an
  // operator, and for the test that sends every route what a client may send (docs/api.md "Conventions").
  const routes: Array<{ method: string | string[]; url: string; auth: string | undefined }> = [];
  app.addHook('onRoute', (route) => void routes.push({ method: route.method, url: route.url, auth: route.config?.auth }));
  app.setNotFoundHandler((request) => {
    throw new SvcError('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`);
  });

  // spec §4: all bodies are JSON. Fastify also parses text/plain by default, which would turn a text body into a
  // 400 about its shape instead of a clear 415.
  app.removeContentTypeParser('text/plain');
  // JSON bodies keep their raw bytes (the webhook's signature) and must be UTF-8 (json-body.ts).
  parseJsonBodies(app);
  cutStalledBodies(app, options.bodyTimeout ?? DEFAULT_BODY_TIMEOUT);
  // Before the hooks below, so their answers (429, 401) carry the request id; before the routes, for the OpenAPI.
  await addOperations(app, ctx);

  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });

  // On the root, so it reaches the routes of every plugin registered below; only those with
  // `config: { rateLimited: true }` are counted, all against one budget per client address.
  // Every attempt counts against the budget, then the route's credential is checked (both before the body is read).
  app.decorateRequest('clientAddress', '');
  app.addHook('onRequest', rememberClientAddress);
  app.addHook('onRequest', rateLimitHook({ limitPerMinute: ctx.rateLimitPerMinute, clock: ctx.clock, store: ctx.rateLimitStore }));
  // %00 in the path or the query, whatever the route and before its credential is looked at (http/nul-input.ts).
  app.addHook('onRequest', refuseNulInUrl);
  app.addHook('onRequest', authHook(ctx));

  await app.register(agentRoutes(ctx));
  await app.register(agentVersionRoutes(ctx));
  await app.register(authRoutes(ctx));
  await app.register(auditRoutes(ctx));
  await app.register(paygateRoutes(ctx));
  await app.register(nodeRoutes(ctx));
  await app.register(paymentWebhookRoutes(ctx));
  await app.register(executeRoutes(ctx));
  await app.register(runRoutes(ctx));
  await app.register(runControlRoutes(ctx));
  await app.register(runLogRoutes(ctx));
  await app.register(runStreamRoutes(ctx));
  await app.register(runArtifactRoutes(ctx));
  await app.register(walletRoutes(ctx));
  await app.register(secretRoutes(ctx));
  await app.register(budgetRoutes(ctx));
  await app.register(usageRoutes(ctx));
  await app.register(webhookRoutes(ctx));
  await app.register(scheduleRoutes(ctx));
  await app.register(docsRoutes(ctx));
  await app.register(releaseRoutes(ctx));
  await app.register(walletPageRoutes(ctx));
  if (ctx.sandbox) await app.register(sandboxRoutes(ctx));

  app.log.debug({ routes }, 'routes served');
  return app;
}

/** For the router's raw responses, which run before fastify's reply exists. */
function writeRawProblem(req: IncomingMessage, res: ServerResponse, error: SvcError): void {
  res.statusCode = error.status;
  res.setHeader(REQUEST_ID_HEADER, requestIdOf(req));
  res.setHeader('content-type', 'application/problem+json; charset=utf-8');
  res.end(JSON.stringify(error.toProblem()));
}
