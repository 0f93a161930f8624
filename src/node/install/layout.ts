// DECISIONS.md "Node layout": every path install writes, under a staging prefix `root` (like DESTDIR). Paths
// written INSIDE files (the unit, uninstall.sh) are always the host paths; only where files go moves with root.
import { join, relative, resolve, sep } from 'node:path';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { nodePaths, type NodePaths } from '../home.js';

export const SERVICE_USER = 'svc-swarm';
export const UNIT_NAME = 'svc-swarm-node.service';
export const UNIT_HOST_PATH = `/etc/systemd/system/${UNIT_NAME}`;
export const BIN_LINK_HOST_PATH = '/usr/local/bin/swarm-node';
/** The unit's file inside a release; install copies it to UNIT_HOST_PATH. */
export const UNIT_IN_RELEASE = join('systemd', UNIT_NAME);

export interface InstallLayout extends NodePaths {
  /** The staging prefix; '/' on a real host. */
  root: string;
  /** True when root is the host itself: only then are users, owners and systemd touched. */
  onHost: boolean;
  unitFile: string;
  binLink: string;
  /** Proxy variables for the service (EnvironmentFile=- in the unit). */
  environmentFile: string;
  /** The release `current` pointed at before the last switch; `upgrade --rollback` goes back to it. */
  previousLink: string;
  backupsDir: string;
}

export function installLayout(root = '/'): InstallLayout {
  const absoluteRoot = resolve(root);
  const at = (hostPath: string) => join(absoluteRoot, hostPath);
  const paths = nodePaths(at(INSTALL_PATH));
  return {
    ...paths,
    root: absoluteRoot,
    onHost: absoluteRoot === '/',
    unitFile: at(UNIT_HOST_PATH),
    binLink: at(BIN_LINK_HOST_PATH),
    environmentFile: join(paths.etcDir, 'environment'),
    previousLink: join(paths.home, 'previous'),
    backupsDir: join(paths.varDir, 'backups'),
  };
}

/**
 * The layout a node home belongs to: an installed binary knows its home (src/node/home.ts), and a home at
 * <root>/opt/svc/swarm-node gives the root back, so commands run from a scratch-root install find their unit too.
 */
export function layoutOfHome(home: string): InstallLayout {
  const absoluteHome = resolve(home);
  if (absoluteHome === INSTALL_PATH) return installLayout('/');
  if (absoluteHome.endsWith(INSTALL_PATH)) return installLayout(absoluteHome.slice(0, -INSTALL_PATH.length));
  throw new SvcError('usage', `${absoluteHome} is not an install location (expected <root>${INSTALL_PATH})`, {
    remedy: 'Pass --root <dir> for a node installed under a staging root, or unset SWARM_NODE_HOME.',
  });
}

export function releaseDir(layout: InstallLayout, version: string): string {
  return join(layout.releasesDir, version);
}

/** The host path of a file under the layout's root (what a person types on the host). */
export function hostPathOf(layout: InstallLayout, path: string): string {
  const inside = relative(layout.root, path);
  return `/${inside.split(sep).join('/')}`;
}
