// The console's webhooks (docs/api.md "Console"): GET {wallet_url}/webhooks, POST webhooks (add one: its signing
// secret shown on the answer, once), POST webhooks/{endpoint_id}/remove, GET webhooks/{endpoint_id} (its
// deliveries) and POST webhooks/{endpoint_id}/deliveries/{event_id}/resend, through webhooks/endpoint-changes.ts and
// the delivery store as the API's. Adding and removing need a recent sign-in (console/recent-sign-in.ts); another
// user's endpoint is the same 404 as none.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../../contract/errors.js';
import { MAX_WEBHOOK_URL_CHARS, WEBHOOK_EVENTS, type WebhookEvent } from '../../../contract/webhooks.js';
import { recentUntil, requireRecentSession } from '../../console/recent-sign-in.js';
import { webhookPage } from '../../console/webhook-page.js';
import { MAX_DESCRIPTION_CHARS, webhooksPage, type WebhooksModel } from '../../console/webhooks-page.js';
import { clientSeen } from '../../http/client-seen.js';
import { createDeliveryStore } from '../../webhooks/delivery-store.js';
import { createEndpointChanges } from '../../webhooks/endpoint-changes.js';
import { listField, textField } from '../../wallet-page/form-body.js';
import { redirectTo, sendHtml, type PageScope } from '../../wallet-page/page-scope.js';
import { assertSameOrigin } from '../../wallet-page/security.js';
import type { WalletSession } from '../../wallet-page/wallet-sessions.js';
import { sentence } from './budgets.js';

const DELIVERIES_SHOWN = 20;
/** A URL of 2,048 characters and a description of 200, percent-encoded (3 bytes a character at worst), with the events. */
const WEBHOOK_FORM_LIMIT_BYTES = 3 * (MAX_WEBHOOK_URL_CHARS + MAX_DESCRIPTION_CHARS) + 1024;
const ID_PATTERN = /^[0-9a-f-]{36}$/;

type EndpointRequest = FastifyRequest<{ Params: { endpoint_id: string } }>;

export function webhookPages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    const endpoints = createEndpointChanges(ctx);
    const deliveries = createDeliveryStore(ctx.store);

    const render = async (
      request: FastifyRequest,
      reply: FastifyReply,
      session: WalletSession,
      status: number,
      extra: Partial<WebhooksModel> = {},
    ) =>
      sendHtml(
        reply,
        status,
        webhooksPage(scope.frame(request, session, 'webhooks'), {
          endpoints: await endpoints.store.list(session.user_id),
          recentUntil: recentUntil(session, ctx.clock.now()),
          ...extra,
        }),
      );
    /** The session's endpoint, or the same 404 as none (a malformed id included). */
    const endpointOf = (request: EndpointRequest, session: WalletSession) =>
      endpoints.endpointOf(session.user_id, ID_PATTERN.test(request.params.endpoint_id) ? request.params.endpoint_id : 'none');

    app.get('/webhooks', async (request, reply) => render(request, reply, await scope.requireSession(request), 200));

    app.post('/webhooks', { bodyLimit: WEBHOOK_FORM_LIMIT_BYTES }, async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      requireRecentSession(session, ctx.clock.now());
      const typed = {
        url: textField(request.body, 'url', MAX_WEBHOOK_URL_CHARS),
        description: textField(request.body, 'description', MAX_DESCRIPTION_CHARS),
        events: listField(request.body, 'events', 32),
      };
      try {
        const unknown = typed.events.filter((event) => !(WEBHOOK_EVENTS as readonly string[]).includes(event));
        if (unknown.length > 0)
          throw new SvcError('invalid_request', `there is no event ${JSON.stringify(unknown[0])}: ${WEBHOOK_EVENTS.join(', ')}`);
        if (typed.events.length === 0) throw new SvcError('invalid_request', 'choose at least one event to send');
        const events = [...new Set(typed.events)] as WebhookEvent[];
        const created = await endpoints.add(
          session.user_id,
          { url: typed.url.trim(), events, ...(typed.description.trim() === '' ? {} : { description: typed.description.trim() }) },
          clientSeen(request),
        );
        return await render(request, reply, session, 201, { created });
      } catch (error) {
        if (!(error instanceof SvcError) || error.status >= 500) throw error;
        return render(request, reply, session, error.status, { error: { message: sentence(error.message), ...typed } });
      }
    });

    app.post<{ Params: { endpoint_id: string } }>('/webhooks/:endpoint_id/remove', async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      requireRecentSession(session, ctx.clock.now());
      const endpoint = await endpointOf(request, session);
      await endpoints.remove(session.user_id, endpoint.endpoint_id, clientSeen(request));
      return redirectTo(request, reply, 'webhooks');
    });

    app.get<{ Params: { endpoint_id: string } }>('/webhooks/:endpoint_id', async (request, reply) => {
      const session = await scope.requireSession(request);
      const endpoint = await endpointOf(request, session);
      const before = (request.query as Record<string, unknown>).before;
      if (before !== undefined && (typeof before !== 'string' || !ID_PATTERN.test(before)))
        throw new SvcError('invalid_request', 'before must be the event id of a delivery this page listed');
      const page = await deliveries.list(endpoint.endpoint_id, { limit: DELIVERIES_SHOWN, ...(before === undefined ? {} : { before }) });
      return sendHtml(
        reply,
        200,
        webhookPage(scope.frame(request, session, 'webhooks'), {
          endpoint: endpoints.store.viewOf(endpoint, ctx.clock.now()),
          deliveries: page,
          nextBefore: page.length === DELIVERIES_SHOWN ? page.at(-1)!.event_id : null,
        }),
      );
    });

    // A re-send changes no configuration: as in the API, the session that reads the deliveries may send one again, as
    // many a minute, from one budget with the API's.
    app.post<{ Params: { endpoint_id: string; event_id: string } }>(
      '/webhooks/:endpoint_id/deliveries/:event_id/resend',
      async (request, reply) => {
        assertSameOrigin(ctx, request);
        const session = await scope.requireSession(request);
        const endpoint = await endpointOf(request, session);
        ctx.webhookResends.take(endpoint.endpoint_id, reply);
        if (
          !ID_PATTERN.test(request.params.event_id) ||
          !(await deliveries.resend(endpoint.endpoint_id, request.params.event_id, ctx.clock.now()))
        ) {
          throw new SvcError('not_found', 'this endpoint has no such delivery');
        }
        return redirectTo(request, reply, `webhooks/${endpoint.endpoint_id}`);
      },
    );
  };
}
