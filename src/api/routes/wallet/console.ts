// The console's pages (docs/api.md "Console"), registered inside the wallet page's scope (routes/wallet.ts), so
// they share its session cookie, its strict forms, its headers and its HTML errors. Each page calls the functions
// the API's routes call; nothing here is a second copy of the service's rules.
import type { FastifyPluginAsync } from 'fastify';
import type { PageScope } from '../../wallet-page/page-scope.js';
import { budgetPages } from './budgets.js';
import { confirmPages } from './confirm.js';
import { nodePages } from './nodes.js';
import { runPages } from './runs.js';
import { secretPages } from './secrets.js';
import { usagePages } from './usage.js';
import { webhookPages } from './webhooks.js';
import { schedulePages } from './schedules.js';

export function consoleRoutes(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    for (const pages of [nodePages, runPages, usagePages, budgetPages, schedulePages, secretPages, webhookPages, confirmPages])
      await app.register(pages(scope));
  };
}
