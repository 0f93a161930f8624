// GET {wallet_url}/usage?from=&to=: the console's usage page (console/usage-page.ts), from the report of GET
// /v1/swarm/usage; a range it refuses is a 400 page with the form and the reason.
import type { FastifyPluginAsync } from 'fastify';
import { SvcError } from '../../../contract/errors.js';
import { isoTime } from '../../../lib/clock.js';
import { usagePage } from '../../console/usage-page.js';
import { usageRangeOf, usageReport } from '../../usage/usage-report.js';
import { sendHtml, type PageScope } from '../../wallet-page/page-scope.js';

export function usagePages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    app.get('/usage', async (request, reply) => {
      const session = await scope.requireSession(request);
      const frame = scope.frame(request, session, 'usage');
      const query = request.query as Record<string, unknown>;
      const dayOf = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
      const asked = { from: dayOf(query.from), to: dayOf(query.to) };
      try {
        const range = usageRangeOf(asked, ctx.clock.now());
        const usage = await usageReport(ctx.store, session.user_id, range);
        return sendHtml(reply, 200, usagePage(frame, { from: usage.from, to: usage.to, usage }));
      } catch (error) {
        if (!(error instanceof SvcError) || error.code !== 'invalid_request') throw error;
        const today = isoTime(ctx.clock.now()).slice(0, 10);
        const shown = (day: string | undefined) => (day ?? today).slice(0, 32);
        return sendHtml(
          reply,
          400,
          usagePage(frame, {
            from: shown(asked.from),
            to: shown(asked.to),
            usage: null,
            error: `The range cannot be shown: ${error.message}.`,
          }),
        );
      }
    });
  };
}
