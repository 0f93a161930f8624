// spec §7, docs/operations.md "Logs" (agent_paused): an agent the wallet cannot pay for is paused, the wallet page
// logged once per pause, and the balance re-checked slowly (one wallet read for every such agent) until it covers a
// run; execute is never retried.
import { findAgentSku, type AgentSku } from '../../contract/agents.js';
import type { NodeCaller } from '../work/caller.js';
import { pauseAgent, resumeAgent, type ScheduledAgent } from '../store/schedules.js';
import { messageOf } from '../../contract/errors.js';
import { numberOf, stringOf, type DaemonCore } from './core.js';
import type { LogFields } from './log.js';
import type { ServiceHold } from './service-hold.js';
import { nextBackoff } from './timing.js';

export class BalancePauses {
  readonly #core: DaemonCore;
  readonly #hold: ServiceHold;
  #checking = false;
  readonly #backoff = new Map<string, number>();
  /** Agents whose wallet_login_url was logged in their current pause (spec §7: once per episode). */
  readonly #walletUrlLogged = new Set<string>();

  constructor(core: DaemonCore, hold: ServiceHold) {
    this.#core = core;
    this.#hold = hold;
  }

  /** Holds the agent after a 402; `facts` are the refusal's (balance_cents, wallet_login_url). */
  pause(sku: AgentSku, facts: Record<string, unknown>): void {
    const backoff = nextBackoff(undefined, this.#core.backoffMs);
    this.#backoff.set(sku.agent_id, backoff);
    const until = this.#core.now() + backoff;
    pauseAgent(this.#core.db, sku.agent_id, 'insufficient_balance', until);
    const fields: LogFields = {
      agent: sku.agent_id,
      reason: 'insufficient_balance',
      balance_cents: numberOf(facts.balance_cents),
      price_cents: sku.price_cents,
      next_check_at: new Date(until).toISOString(),
    };
    if (!this.#walletUrlLogged.has(sku.agent_id)) {
      this.#walletUrlLogged.add(sku.agent_id);
      fields.wallet_login_url = stringOf(facts.wallet_login_url);
      fields.remedy = 'fund the wallet; the daemon resumes by itself';
    }
    this.#core.log.warn('agent_paused', fields);
  }

  /** Checks the balance for the agents whose pause is up, unless a check is under way. */
  checkIfDue(agents: ScheduledAgent[], caller: NodeCaller): void {
    if (agents.length > 0 && !this.#checking) this.#core.track(this.#check(agents, caller));
  }

  /** One wallet read for every agent whose balance pause is up: resume those it covers, wait longer for the rest. */
  async #check(agents: ScheduledAgent[], caller: NodeCaller): Promise<void> {
    const core = this.#core;
    this.#checking = true;
    try {
      const wallet = await core.client.wallet(caller.bearer);
      const now = core.now();
      for (const agent of agents) {
        const price = findAgentSku(agent.agent_id)?.price_cents ?? Number.POSITIVE_INFINITY;
        if (wallet.balance_cents >= price) {
          resumeAgent(core.db, agent.agent_id);
          this.#backoff.delete(agent.agent_id);
          this.#walletUrlLogged.delete(agent.agent_id);
          core.log.info('agent_resumed', { agent: agent.agent_id, after: 'insufficient_balance', balance_cents: wallet.balance_cents });
        } else {
          const backoff = nextBackoff(this.#backoff.get(agent.agent_id), core.backoffMs);
          this.#backoff.set(agent.agent_id, backoff);
          pauseAgent(core.db, agent.agent_id, 'insufficient_balance', now + backoff);
          core.log.info('balance_still_low', {
            agent: agent.agent_id,
            balance_cents: wallet.balance_cents,
            price_cents: price,
            next_check_at: new Date(now + backoff).toISOString(),
          });
        }
      }
    } catch (error) {
      if (!this.#hold.onServiceError(error, caller)) core.log.warn('balance_check_failed', { error: messageOf(error) });
    } finally {
      this.#checking = false;
    }
  }
}
