// install and upgrade: a package (the one this program runs from, or --from) installed as a release under the
// layout, enrolling first when the node is not enrolled yet (install-node.ts), with the service started or
// restarted as its changes need.
import type { Clock } from '../../lib/clock.js';
import { readConfigFile, resolveConfig, type ResolvedConfig } from '../host/config.js';
import type { InstallLayout } from '../host/location.js';
import type { ServiceClient } from '../service/service-client.js';
import type { EphemeralEnrollment } from './enrollment.js';
import { installNode, type InstallResult } from './install-node.js';
import { runningPackageDir } from '../../lib/package-dir.js';
import { readPackageSource } from './package-source.js';
import { serviceManager } from './systemctl.js';

export interface InstallPackageDeps {
  layout: InstallLayout;
  /** The configuration in force for this install: its own config file, not the CLI's home (--root may differ). */
  config: () => ResolvedConfig;
  client: () => Promise<ServiceClient>;
  /** Where proxy variables for the service come from. */
  env: NodeJS.ProcessEnv;
  clock: Clock;
  log: (line: string) => void;
}

export interface InstallPackageOptions {
  /** Read by the command from --deploy-token-file or SVC_DEPLOY_TOKEN; never from argv. */
  deployToken: string | undefined;
  /** An unpacked package to install; undefined: the one this program runs from. */
  from: string | undefined;
  /** false for --no-start: no systemctl at all. */
  start: boolean;
  dryRun: boolean;
  /** `upgrade`: refuse to enroll, the node must be installed already. */
  requireInstalled?: boolean;
  /** install --label (normalised): the node's labels from now on; undefined keeps the ones it has. */
  labels?: readonly string[];
  /** install --ephemeral [--uninstall-after]. */
  ephemeral?: EphemeralEnrollment;
  /** install --no-autoupdate: false (written to the config and the unit); undefined keeps what the config says. */
  autoUpdate?: false;
  /**
   * `upgrade`: the node's config file keeps its own base_url and wallet_url; a --base-url or SVC_BASE_URL given to
   * this one command reaches the service for it, and is not written (`install` is what sets them).
   */
  keepConfig?: boolean;
  /** `upgrade --to VERSION`: the package may be older than the installed release (going back on purpose). */
  allowOlder?: boolean;
  /** install --reenroll (install-node.ts). */
  reenroll?: boolean;
}

export async function installPackage(deps: InstallPackageDeps, options: InstallPackageOptions): Promise<InstallResult> {
  const { layout } = deps;
  const source = readPackageSource(options.from ?? runningPackageDir());
  return installNode({
    layout,
    source,
    deployToken: options.deployToken,
    config: options.keepConfig === true ? resolveConfig({ flags: {}, env: {}, file: readConfigFile(layout.configFile) }) : deps.config(),
    allowOlder: options.allowOlder ?? false,
    ...(options.labels === undefined ? {} : { labels: options.labels }),
    ...(options.autoUpdate === false ? { autoUpdate: false as const } : {}),
    enroll: async (token) => (await deps.client()).enroll(token, { ephemeral: options.ephemeral !== undefined }),
    ...(options.ephemeral === undefined ? {} : { ephemeral: options.ephemeral }),
    ...(options.reenroll === true ? { reenroll: true } : {}),
    services: serviceManager({ noStart: !options.start, onHost: layout.onHost, units: layout.units }),
    env: deps.env,
    dryRun: options.dryRun,
    now: () => new Date(deps.clock.now()),
    log: (line) => (options.dryRun ? undefined : deps.log(line)),
    requireInstalled: options.requireInstalled ?? false,
  });
}
