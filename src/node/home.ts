// DECISIONS.md "Node layout". The node's home is SWARM_NODE_HOME when set; else, when this program runs from an
// installed release (<home>/releases/<version>/), that home, so a node installed under a scratch --root finds its
// own files; else the install path.
import { realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { INSTALL_PATH } from '../contract/claims.js';

export interface NodePaths {
  home: string;
  etcDir: string;
  configFile: string;
  credentialsFile: string;
  varDir: string;
  databaseFile: string;
  releasesDir: string;
  currentLink: string;
  uninstallScript: string;
}

export function nodePaths(home: string): NodePaths {
  return {
    home,
    etcDir: join(home, 'etc'),
    configFile: join(home, 'etc', 'config.json'),
    credentialsFile: join(home, 'etc', 'credentials.json'),
    varDir: join(home, 'var'),
    databaseFile: join(home, 'var', 'swarm-node.db'),
    releasesDir: join(home, 'releases'),
    currentLink: join(home, 'current'),
    uninstallScript: join(home, 'uninstall.sh'),
  };
}

export function resolveHome(env: NodeJS.ProcessEnv = process.env, entryScript: string | undefined = process.argv[1]): string {
  const fromEnv = env.SWARM_NODE_HOME;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return fromEnv;
  const installed = entryScript === undefined ? undefined : installedHomeOf(entryScript);
  return installed ?? INSTALL_PATH;
}

/** The home of the release that `entryScript` (bin/swarm-node.js) belongs to, if it is an installed one. */
export function installedHomeOf(entryScript: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(entryScript);
  } catch {
    return undefined;
  }
  const packageDir = dirname(dirname(real));
  return basename(dirname(packageDir)) === 'releases' ? dirname(dirname(packageDir)) : undefined;
}
