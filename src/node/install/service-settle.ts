// The last step of install, upgrade and rollback: the service is enabled and started, or restarted, only as the
// changes need, never failing the install (a failing systemctl is a warning: systemctl.ts).
import type { Change } from './plan.js';
import type { ServiceManager } from './systemctl.js';

export interface ServiceOutcome {
  action: 'started' | 'restarted' | 'unchanged' | 'skipped';
  reason?: string;
  warnings: string[];
}

/**
 * After the files: a unit not yet enabled is enabled and started; an enabled one is restarted only when something
 * it reads changed. The unit being new or edited needs a daemon-reload first.
 */
export async function settleService(
  services: ServiceManager,
  changes: readonly Change[],
  unitFiles: readonly string[],
): Promise<ServiceOutcome> {
  const planned = plannedService(services, changes);
  if (services.skipReason !== undefined) return planned;
  const warnings: string[] = [];
  const unitChanged = changes.some((change) => unitFiles.includes(change.path));
  if (!(await services.isEnabled())) {
    pushWarning(warnings, await services.run(services.commands.daemonReload));
    pushWarning(warnings, await services.run(services.commands.enableNow));
    return { action: 'started', warnings };
  }
  if (planned.action === 'unchanged') return planned;
  if (unitChanged) pushWarning(warnings, await services.run(services.commands.daemonReload));
  pushWarning(warnings, await services.run(services.commands.restart));
  return { action: 'restarted', warnings };
}

/** What settleService would do, without asking systemd (a dry run). */
export function plannedService(services: ServiceManager, changes: readonly Change[]): ServiceOutcome {
  const restart = changes.some((change) => change.restart);
  if (services.skipReason !== undefined)
    return restart ? { action: 'skipped', reason: services.skipReason, warnings: [] } : { action: 'unchanged', warnings: [] };
  return { action: restart ? 'restarted' : 'unchanged', warnings: [] };
}

function pushWarning(warnings: string[], warning: string | undefined): void {
  if (warning !== undefined) warnings.push(warning);
}
