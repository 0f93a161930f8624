// swarm-node wallet: the pay wallet's balance; `wallet login` the wallet page URL that signs you in (spec §4).
import { Command } from 'commander';
import { walletLoginUrl } from '../../contract/claims.js';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';
import { keyValues } from '../table.js';

export function walletCommand(): Command {
  const wallet = new Command('wallet')
    .description('show the wallet balance; `wallet login` to sign in to the wallet page and fund it')
    .addHelpText('after', '\nExample:\n  $ swarm-node wallet\n  $ swarm-node wallet login --open')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const summary = await (await ctx.client()).wallet(jwt.token);
      const result = { ...summary, balance: formatDollars(summary.balance_cents) };
      ctx.output.result(result, (w) =>
        keyValues([
          ['balance', `${w.balance} ${w.currency}`],
          ['user', w.user_id],
          ['chain', String(w.chain_id)],
        ]),
      );
    });

  wallet
    .command('login')
    .description('print the wallet page URL that signs you in with the stored JWT (the URL holds it: a secret)')
    .option('--open', 'open it in the browser when this machine has a display')
    .addHelpText('after', '\nExample:\n  $ swarm-node wallet login --open')
    .action(async (options: { open?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      // spec §4: {wallet_url}/login?token=<JWT>&intent=swarm_private_access
      const url = walletLoginUrl(ctx.config().wallet_url, jwt.token);
      const warning = 'this URL holds your access token, a secret: open it yourself; do not share it, log it or paste it into a chat';
      let opened = false;
      if (options.open === true) {
        // The opener gets a private page that forwards to the URL, never the URL: argv is visible in `ps`.
        const { openSecretUrl } = await import('../../node/identity/browser-handoff.js');
        const attempt = await openSecretUrl(url, ctx.env);
        opened = attempt.opened;
        if (!attempt.opened && attempt.why === 'no_display')
          ctx.output.warn('cannot open a browser here (no display); open the URL on a machine with a browser');
        if (!attempt.opened && attempt.why === 'opener_failed')
          ctx.output.warn(`${attempt.opener} could not open the browser; open the URL yourself`);
      }
      ctx.output.warn(warning);
      ctx.output.result({ wallet_login_url: url, opened, warning }, (r) => r.wallet_login_url);
    });

  return wallet;
}
