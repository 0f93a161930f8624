// Documented exit codes (docs/operations.md "Troubleshooting by exit code"), mapped from error codes in this one place.
import type { ErrorCode } from '../contract/errors.js';

export const EXIT_CODES = {
  ok: 0,
  failure: 1,
  usage: 2,
  insufficient_balance: 3,
  not_signed_in: 4,
  not_found: 5,
  service_unreachable: 6,
  payment_not_confirmed: 7,
  /** This node was removed from its user's nodes: the daemon stops for good (its unit does not restart it). */
  node_removed: 8,
  /**
   * The daemon staged a verified update and stopped so that its supervisor starts it again: the unit's ExecStartPre
   * (swarm-node upgrade --pending) switches to it first (docs/operations.md "Auto-update").
   */
  update_staged: 9,
  /** `run --fail-on`: the run succeeded, and the status its agent answered is at or above the one named. */
  status_alert: 10,
  /** A budget set at the service is spent for its period (docs/api.md "Budgets"): wait for its reset, or raise it. */
  budget_exceeded: 11,
  /** `upgrade --check`: the service has a release newer than this node's (the answer is printed as usual). */
  update_available: 12,
  interrupted: 130,
} as const;

export function exitCodeFor(code: ErrorCode): number {
  switch (code) {
    case 'usage':
    case 'invalid_request':
    case 'bundle_invalid':
    case 'input_invalid':
    case 'invalid_schedule':
    case 'not_a_terminal':
      return EXIT_CODES.usage;
    case 'insufficient_balance':
      return EXIT_CODES.insufficient_balance;
    case 'unauthorized':
    case 'not_signed_in':
    case 'not_enrolled':
    case 'token_expired':
    case 'deploy_token_invalid':
    case 'email_code_invalid':
    case 'step_up_required':
      return EXIT_CODES.not_signed_in;
    case 'not_found':
    case 'session_not_found':
    case 'payment_not_found':
    case 'agent_not_found':
    case 'run_not_found':
    case 'schedule_not_found':
      return EXIT_CODES.not_found;
    case 'service_unreachable':
    case 'service_unavailable':
      return EXIT_CODES.service_unreachable;
    case 'payment_not_confirmed':
      return EXIT_CODES.payment_not_confirmed;
    case 'node_removed':
      return EXIT_CODES.node_removed;
    case 'update_staged':
      return EXIT_CODES.update_staged;
    case 'status_alert':
      return EXIT_CODES.status_alert;
    case 'budget_exceeded':
      return EXIT_CODES.budget_exceeded;
    case 'update_available':
      return EXIT_CODES.update_available;
    case 'interrupted':
      return EXIT_CODES.interrupted;
    default:
      return EXIT_CODES.failure;
  }
}
