// The console's schedules (docs/api.md "Console"): GET {wallet_url}/schedules lists the user's schedules as the API's
// show gives each (schedules/schedule-detail.ts). Read only: a change of a standing order to spend is made with the
// API or swarm-node schedule, under the recent sign-in.
import type { FastifyPluginAsync } from 'fastify';
import { schedulesPage } from '../../console/schedules-page.js';
import { createScheduleChanges } from '../../schedules/schedule-changes.js';
import { createScheduleDetail } from '../../schedules/schedule-detail.js';
import { sendHtml, type PageScope } from '../../wallet-page/page-scope.js';

export function schedulePages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    const changes = createScheduleChanges(ctx);
    const detailOf = createScheduleDetail(ctx, changes);
    app.get('/schedules', async (request, reply) => {
      const session = await scope.requireSession(request);
      const rows = await changes.rows.schedules.list(session.user_id);
      const details = await Promise.all(rows.map(detailOf));
      return sendHtml(reply, 200, schedulesPage(scope.frame(request, session, 'schedules'), details));
    });
  };
}
