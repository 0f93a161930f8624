// install --ephemeral --uninstall-after (docs/operations.md "Ephemeral nodes"): once the node has removed itself after
// its one run, its install goes too, as `swarm-node uninstall --purge --yes` would (uninstall-node.ts: only what install
// wrote, the credentials and the database with it; never a prompt). Two callers, one removal:
// - the daemon itself, where no systemd unit runs it (a host without systemd, a --root install run by hand);
// - under systemd, the unit's ExecStopPost (as root, "+"): the daemon runs as the service user in a read-only
//   sandbox and cannot remove the install, so it exits 8 and the hook removes it. systemctl is told not to wait
//   (--no-block): the unit is stopping already, and a stop job waiting for this hook would wait for itself.
import { readCredentials } from '../identity/credentials.js';
import type { InstallLayout } from '../host/location.js';
import { serviceManager, type ServiceManager } from './systemctl.js';
import { uninstallNode, type UninstallResult } from './uninstall-node.js';

/** Whether this install was enrolled ephemeral with --uninstall-after. */
export function uninstallsAfterRetiring(layout: Pick<InstallLayout, 'credentialsFile'>): boolean {
  const node = readCredentials(layout.credentialsFile).node;
  return node?.ephemeral === true && node.uninstall_after === true;
}

/** Removes the install of a node that asked for it, purged; undefined (nothing touched) for any other node. */
export async function uninstallRetiredNode(
  layout: InstallLayout,
  log: (line: string) => void,
  fromUnit: boolean,
): Promise<UninstallResult | undefined> {
  if (!uninstallsAfterRetiring(layout)) return undefined;
  const services = serviceManager({ noStart: false, onHost: layout.onHost, units: layout.units });
  return uninstallNode({ layout, purge: true, dryRun: false, log, ...(fromUnit ? { services: notWaiting(services) } : {}) });
}

function notWaiting(services: ServiceManager): ServiceManager {
  return { ...services, isEnabled: () => services.isEnabled(), run: (args) => services.run(['--no-block', ...args]) };
}
