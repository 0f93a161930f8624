// The built package staged where any user can read it, as an installed node's release is (0755/0644, the runtime
// modules beside it): a checkout may sit in a directory other users may not enter (root's 0700 home, a mkdtemp),
// and what a test runs as another user (an agent, agent-exec as systemd's agent user) must not be run from there.
// The Node binary comes too when it is in such a directory (a version manager's, under a home).
import { chmodSync, copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readPackageSource } from '../../src/node/install/package-source.js';
import { closedAncestor } from '../../src/node/runner/sandbox.js';
import { REPO_ROOT } from './svc-api.js';
import { tempDir } from './temp.js';

export interface StagedPackage {
  /** The package: bin/, dist/, agents/, docs/sections, systemd/, node_modules/ with the runtime modules. */
  root: string;
  /** The Node binary other users may run. */
  node: string;
}

let staged: StagedPackage | undefined;

/** Once per test file (tempDir's removeTempDirs takes it away with the rest). Needs the build (npm test makes it). */
export function packageForOtherUsers(): StagedPackage {
  if (staged !== undefined && existsSync(staged.root)) return staged;
  const root = tempDir('package-for-others-');
  chmodSync(root, 0o755);
  const copy = (source: string, path: string): void => {
    const target = join(root, path);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    copyFileSync(source, target);
    chmodSync(target, (statSync(source).mode & 0o111) !== 0 ? 0o755 : 0o644);
  };
  for (const file of readPackageSource(REPO_ROOT).files) if (file.link === undefined) copy(file.source, file.path);
  let node = process.execPath;
  if (closedAncestor(node) !== undefined) {
    copy(node, 'runtime/bin/node');
    node = join(root, 'runtime', 'bin', 'node');
  }
  return (staged = { root, node });
}
