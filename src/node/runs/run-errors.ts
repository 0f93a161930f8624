// What a person is told about a run that did not succeed: `run` and the wizard's first run turn its outcome
// (run-agent.ts) into the typed error they show, with the exit code, remedy and facts of its code.
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import type { RunOutcome, RunResult } from './run-agent.js';

/**
 * The result of a run that succeeded; the error to show for any other outcome. `here`: the run was this node's own
 * (it executes here), with how this host changes its labels (`swarm-node`, or `sudo swarm-node` on an install).
 */
export function succeededOrThrow(outcome: RunOutcome, here?: { program: string }): RunResult {
  const { agent } = outcome;
  switch (outcome.kind) {
    case 'settled': {
      const { result } = outcome;
      if (result.status !== 'succeeded') {
        const where = result.node_id === null ? '' : ` on node ${result.node_id}`;
        const how = result.status === 'cancelled' ? 'was cancelled' : 'failed';
        throw new SvcError('failed', `the run of ${agent.agent_id} ${how}${where} (${failureOf(result.output)}); it was not charged`, {
          remedy: `See what it did: swarm-node runs show ${result.run_id} (and swarm-node logs ${result.run_id}); to retry: swarm-node run ${agent.agent_id}.`,
          extensions: {
            run_id: result.run_id,
            node_id: result.node_id,
            charged_cents: result.charged_cents,
            balance_cents: result.balance_cents,
            output: result.output,
          },
        });
      }
      return result;
    }
    case 'refused':
      if (outcome.status === 'insufficient_balance') throw insufficientBalance(outcome.error, agent.price_cents);
      if (outcome.error.code !== 'no_node_available') throw outcome.error;
      throw here === undefined
        ? noNodeAvailable(outcome.error, agent.agent_id)
        : ownLabelsMissing(outcome.error, agent.agent_id, here.program);
    case 'unknown':
      throw new SvcError(outcome.error.code, `${outcome.error.message}; the run is journaled as pending (key ${outcome.idempotency_key})`, {
        remedy:
          `The next run (swarm-node run ${agent.agent_id}), or the daemon, settles it by asking the service for this key's run, so it is never charged twice nor run unasked. ` +
          (outcome.error.remedy ?? ''),
        extensions: { ...outcome.error.extensions, idempotency_key: outcome.idempotency_key, run_status: 'pending' },
      });
    case 'not_sent':
      throw new SvcError(
        outcome.error.code,
        `${outcome.error.message}; the run was not sent, and will not run (journaled failed, not_sent; nothing was charged)`,
        {
          remedy: `Check that the service is reachable (its URL and latency: swarm-node status), then run it again: swarm-node run ${agent.agent_id}.`,
          extensions: { idempotency_key: outcome.idempotency_key, run_status: 'not_sent' },
        },
      );
  }
}

/** spec §7: the answer carries wallet_login_url; say what to do with it. */
function insufficientBalance(error: SvcError, priceCents: number): SvcError {
  const url = typeof error.extensions.wallet_login_url === 'string' ? error.extensions.wallet_login_url : undefined;
  const balance = typeof error.extensions.balance_cents === 'number' ? error.extensions.balance_cents : undefined;
  const message =
    balance === undefined
      ? error.message
      : `insufficient balance: the wallet holds ${formatDollars(balance)}, one run costs ${formatDollars(priceCents)}`;
  return new SvcError('insufficient_balance', message, {
    remedy: `Fund the wallet${url === undefined ? '' : ` at ${url}`} (a link that signs you in there: swarm-node wallet login), then run again.`,
    extensions: { ...error.extensions, price_cents: priceCents },
  });
}

/**
 * Only a run asked for with the JWT (from a host that is not a node) can find no node: a node's own run goes to
 * itself. So besides the service's remedy (the user's other nodes), this host can become the node.
 */
function noNodeAvailable(error: SvcError, agentId: string): SvcError {
  return new SvcError('no_node_available', error.message, {
    remedy:
      `${error.remedy ?? ''} Or run it on this host, which becomes one of your nodes: swarm-node enroll, then again: swarm-node run ${agentId}.`.trim(),
    extensions: error.extensions,
    cause: error,
  });
}

/**
 * A node's own run executes on it, so a label it asks for is one this node must carry: enrolling (this host is a
 * node already) or the fleet's other nodes do not help. Labels live in the node's config file (install --label
 * sets them first); `labels add` changes it and tells the service (docs/api.md "Labels").
 */
function ownLabelsMissing(error: SvcError, agentId: string, program: string): SvcError {
  const asked = Array.isArray(error.extensions.labels) ? (error.extensions.labels as string[]) : [];
  const missing = Array.isArray(error.extensions.missing_labels) ? (error.extensions.missing_labels as string[]) : asked;
  return new SvcError('no_node_available', error.message, {
    remedy:
      `This node runs the runs it starts, so it must carry the labels: add them to its config (and the service): ${program} labels add ${missing.join(' ')}, ` +
      `then run again: swarm-node run ${agentId} --label ${asked.join(',')}. For one of your other nodes, run it signed in from a host that is not enrolled.`,
    extensions: error.extensions,
    cause: error,
  });
}

/** "timeout: the agent ran past 30 s": a failed run's {error, message}, as the node or the service reported it. */
function failureOf(output: unknown): string {
  const { error, message } = (typeof output === 'object' && output !== null ? output : {}) as { error?: unknown; message?: unknown };
  const code = typeof error === 'string' ? error : 'failed';
  return typeof message === 'string' && message !== '' ? `${code}: ${message.split('\n')[0]!.slice(0, 300)}` : code;
}

/** What a run's last answer says of it while it has not ended: enough to find, judge and cancel it. */
export interface RunInFlight {
  run_id: string;
  agent_id: string;
  status: string;
  node_id: string | null;
  charged_cents: number;
  balance_cents: number;
}

/**
 * Ctrl+C while `run` waits: the wait ends, the run does not. A user's run goes on at the service (its node runs it,
 * or it waits for one), charged until it ends. A node's own run is stopped here; it ends failed and refunded when
 * the node's report gets through before the exit, else when its lease runs out (docs/api.md "Leases"). A run still
 * going is cancelled, and refunded, by its id.
 */
export function interruptedRun(run: RunInFlight, ranHere: boolean): SvcError {
  const cost = `${formatDollars(run.charged_cents)} is charged for it, refunded if it fails, is not picked up or is cancelled`;
  const where = run.node_id === null ? 'waiting for a node' : `on node ${run.node_id}`;
  if (ranHere) {
    return new SvcError(
      'interrupted',
      `interrupted: run ${run.run_id} of ${run.agent_id} was stopped on this node; it ends failed and refunded once the service hears of it (at the latest when its lease runs out); ${cost}`,
      {
        remedy: `See how it ended: swarm-node runs show ${run.run_id}`,
        extensions: { ...run, run_status: run.status, keeps_running: false },
      },
    );
  }
  return new SvcError(
    'interrupted',
    `interrupted: run ${run.run_id} of ${run.agent_id} keeps running at the service (${run.status}, ${where}); ${cost}`,
    {
      remedy: `Cancel it: swarm-node cancel ${run.run_id}. Or follow it again: swarm-node logs ${run.run_id} --follow`,
      extensions: { ...run, run_status: run.status, keeps_running: true },
    },
  );
}
