// DECISIONS.md addition: GET /v1/swarm/wallet (Bearer JWT), the signed-in user's pay wallet on chain 1202.
import type { FastifyPluginAsync } from 'fastify';
import { WalletResponse } from '../../../../contract/schemas.js';
import { userOf } from '../../../http/auth.js';
import type { ServiceContext } from '../../../context.js';
import { walletSummary } from '../../../wallet/summary.js';

export function walletRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/v1/swarm/wallet', { config: { auth: 'access-token' }, schema: { response: { 200: WalletResponse } } }, async (request) =>
      walletSummary(ctx.ledger, userOf(request).sub),
    );
  };
}
