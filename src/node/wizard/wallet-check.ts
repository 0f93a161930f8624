// Wizard step c: does the wallet cover one run? When not (spec §7 insufficient balance), point at the wallet page
// and wait, re-checking the balance, while the person funds it; or quit with exit 3.
import { walletLoginUrl } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import type { StoredJwt } from '../identity/credentials.js';
import type { AgentChoice, Shortfall, WizardQuestions } from './questions.js';
import type { WizardStepDeps } from './ui.js';

export async function ensureFunds(
  deps: WizardStepDeps & { walletUrl: string },
  questions: WizardQuestions,
  jwt: StoredJwt,
  agent: AgentChoice,
): Promise<number> {
  const wallet = await deps.ui.spin('Checking the wallet balance', () => deps.client.wallet(jwt.token));
  if (wallet.balance_cents >= agent.price_cents) {
    deps.ui.info(
      `Wallet: ${formatDollars(wallet.balance_cents)}, enough for ${Math.floor(wallet.balance_cents / agent.price_cents)} run(s) of ${agent.agent_id}.`,
    );
    return wallet.balance_cents;
  }
  // The bare page: the URL that signs in holds the JWT, a secret, so the wizard never prints it.
  const shortfall: Shortfall = {
    balance_cents: wallet.balance_cents,
    price_cents: agent.price_cents,
    wallet_login_url: walletLoginUrl(deps.walletUrl),
  };
  deps.ui.warn(
    `the wallet holds ${formatDollars(shortfall.balance_cents)}; one run of ${agent.agent_id} costs ${formatDollars(agent.price_cents)}`,
  );
  deps.ui.info(`Fund it at ${shortfall.wallet_login_url}`);
  deps.ui.info("  (swarm-node wallet login prints a link that signs you in there with this node's token)");
  if (!(await questions.waitForFunds(shortfall))) throw insufficientBalance(agent, shortfall);
  const balance = await deps.ui.spin(waitingText(shortfall), (update) => pollUntilFunded(deps, jwt, shortfall, update));
  deps.ui.success(`Funded: the wallet holds ${formatDollars(balance)}.`);
  return balance;
}

async function pollUntilFunded(
  deps: WizardStepDeps,
  jwt: StoredJwt,
  shortfall: Shortfall,
  update: (text: string) => void,
): Promise<number> {
  for (;;) {
    await deps.sleep(deps.pollIntervalMs);
    let balance: number;
    try {
      balance = (await deps.client.wallet(jwt.token)).balance_cents;
    } catch (error) {
      // A blip while waiting is no reason to give up; anything else (a token gone bad) is.
      if (!(error instanceof SvcError) || error.code !== 'service_unreachable') throw error;
      update(`${waitingText(shortfall)}: the service did not answer, retrying`);
      continue;
    }
    if (balance >= shortfall.price_cents) {
      update(`Waiting for the wallet to hold ${formatDollars(shortfall.price_cents)}`);
      return balance;
    }
    update(waitingText({ ...shortfall, balance_cents: balance }));
  }
}

function waitingText(shortfall: Shortfall): string {
  return `Waiting for the wallet to hold ${formatDollars(shortfall.price_cents)} (now ${formatDollars(shortfall.balance_cents)}); Ctrl+C quits`;
}

export function insufficientBalance(agent: AgentChoice, shortfall: Shortfall): SvcError {
  return new SvcError(
    'insufficient_balance',
    `insufficient balance: the wallet holds ${formatDollars(shortfall.balance_cents)}, one run of ${agent.agent_id} costs ${formatDollars(agent.price_cents)}`,
    {
      remedy: `Fund the wallet at ${shortfall.wallet_login_url} (a link that signs you in there: swarm-node wallet login), then again: swarm-node wizard.`,
      extensions: { ...shortfall },
    },
  );
}
