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
        const opener = browserOpener(ctx.env);
        if (opener === undefined) {
          ctx.output.warn('cannot open a browser here (no display); open the URL on a machine with a browser');
        } else {
          // The opener gets a private page that forwards to the URL, never the URL: argv is visible in `ps`.
          const [{ execa }, { writeHandoffPage }] = await Promise.all([import('execa'), import('../../node/browser-handoff.js')]);
          const page = writeHandoffPage(url);
          const outcome = await execa(opener, [page.path], { reject: false, stdio: 'ignore', timeout: 10_000 });
          opened = outcome.exitCode === 0;
          if (opened) page.removeLater();
          else {
            page.remove();
            ctx.output.warn(`${opener} could not open the browser; open the URL yourself`);
          }
        }
      }
      ctx.output.warn(warning);
      ctx.output.result({ wallet_login_url: url, opened, warning }, (r) => r.wallet_login_url);
    });

  return wallet;
}

/** The desktop's URL opener, when there is a desktop to open it on. */
function browserOpener(env: NodeJS.ProcessEnv): string | undefined {
  if (process.platform === 'darwin') return 'open';
  if (process.platform === 'win32') return undefined;
  return env.DISPLAY || env.WAYLAND_DISPLAY ? 'xdg-open' : undefined;
}
