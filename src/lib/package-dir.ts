// The package this program runs from: the repository in development, the release directory on a node. It holds
// what the program ships beside its code: the reference agents (agents/) and the documentation sections (docs/).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SvcError } from '../contract/errors.js';

export const PACKAGE_NAME = 'svc-swarm-node';

/** Found by walking up from this module to our package.json. */
export function runningPackageDir(moduleUrl: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && readManifest(manifest).name === PACKAGE_NAME) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new SvcError('local_state', `cannot find the ${PACKAGE_NAME} package this program runs from`);
    dir = parent;
  }
}

export interface Manifest {
  name?: unknown;
  version?: unknown;
  files?: unknown[];
}

export function readManifest(path: string): Manifest {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof parsed === 'object' && parsed !== null ? (parsed as Manifest) : {};
  } catch {
    return {};
  }
}
