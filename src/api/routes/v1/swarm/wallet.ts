// An addition (docs/api.md "Additions the flow needs"): GET /v1/swarm/wallet (Bearer JWT, or the node credential of
// one of the user's nodes: the daemon checks the balance with it), the user's pay wallet on chain 1202.
import type { FastifyPluginAsync } from 'fastify';
import { WalletResponse } from '../../../../contract/schemas.js';
import { userIdOf } from '../../../http/auth.js';
import type { ServiceContext } from '../../../context.js';
import { walletSummary } from '../../../wallet/summary.js';

export function walletRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/v1/swarm/wallet',
      { config: { auth: 'access-token-or-node' }, schema: { response: { 200: WalletResponse } } },
      async (request) => walletSummary(ctx.ledger, userIdOf(request)),
    );
  };
}
