// Install, upgrade, rollback and uninstall first list their changes, then apply them in order: --dry-run prints the
// same list and stops, and a re-run that finds nothing to do says so.

export type ChangeAction = 'create' | 'update' | 'remove' | 'run';

export interface Change {
  action: ChangeAction;
  /** The path under the install root (or the command, for `run`). */
  path: string;
  detail: string;
  /** Whether the running service must restart to see it. */
  restart: boolean;
}

export interface Step {
  change: Change;
  apply: () => void | Promise<void>;
}

const MARK: Record<ChangeAction, string> = { create: '+', update: '~', remove: '-', run: '$' };

export function describeChange(change: Change): string {
  return `${MARK[change.action]} ${change.path}${change.detail === '' ? '' : `  (${change.detail})`}`;
}

/** Applies steps in order; a failure says which step stopped the run. */
export async function applySteps(steps: readonly Step[], log: (line: string) => void): Promise<void> {
  for (const step of steps) {
    log(describeChange(step.change));
    await step.apply();
  }
}
