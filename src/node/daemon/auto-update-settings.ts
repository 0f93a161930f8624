// What auto-update runs with, from the daemon's flags and the node's config (docs/operations.md "Auto-update"):
// --no-autoupdate or config auto_update false turn it off, and so does running from anything but an installed
// release (a checkout or an npm install has no `current` to switch), and running with nobody to start the daemon
// again: an update ends with the daemon's exit (9) for the start that switches, and a daemon started by hand would
// stay stopped (`swarm-node upgrade` restarts such a daemon itself: docs/operations.md "Upgrade").
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { runningPackageDir } from '../../lib/package-dir.js';
import { autoUpdateIntervalSeconds, type ResolvedConfig } from '../host/config.js';
import type { NodePaths } from '../host/location.js';
import type { AutoUpdateOptions } from './auto-update.js';

export interface AutoUpdateFlags {
  /** false with --no-autoupdate. */
  autoupdate: boolean;
  autoupdateInterval?: string;
  /** Tests only: an interval below the 5m floor. */
  autoupdateCheckMs?: number;
}

export function autoUpdateSettings(
  flags: AutoUpdateFlags,
  config: Pick<ResolvedConfig, 'auto_update' | 'auto_update_interval'>,
  paths: Pick<NodePaths, 'varDir' | 'etcDir' | 'releasesDir'>,
  env: NodeJS.ProcessEnv,
  programVersion: string,
  restartedBy: { supervised: boolean },
  packageDir: string = runningPackageDir(),
): AutoUpdateOptions {
  const installed = realOrSelf(dirname(packageDir)) === realOrSelf(paths.releasesDir);
  return {
    enabled: flags.autoupdate && config.auto_update && installed && restartedBy.supervised,
    offBy: !flags.autoupdate ? 'flag' : !config.auto_update ? 'config' : !installed ? 'not_installed' : 'unsupervised',
    // The program's version is its package's package.json (src/cli/version.ts): read there once, at start.
    releaseVersion: programVersion,
    intervalMs: flags.autoupdateCheckMs ?? autoUpdateIntervalSeconds(flags.autoupdateInterval ?? config.auto_update_interval) * 1000,
    varDir: paths.varDir,
    etcDir: paths.etcDir,
    trustKeyFile: env.SVC_RELEASE_TRUST_KEY,
  };
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
