// Releases only move forward (docs/operations.md "Upgrade"): a node switches to a release newer than the one it
// runs, whoever offers it (the service, a staged request, an artifact at hand, install.sh over an installed node),
// unless the operator names the older version on purpose (`upgrade --to VERSION`, or `--rollback`). A signed old
// release is still a signed release: without this, whoever answers the node's requests could take it back to a
// version with a known hole.
import { SvcError } from '../../contract/errors.js';
import { compareVersions } from '../../lib/release-manifest.js';

/** Refuses `target` unless it is newer than `installed`, or is the version the operator named (`goingTo`). */
export function assertMovesForward(target: string, installed: string, goingTo: string | undefined, nodeBaseUrl?: string): void {
  if (goingTo !== undefined) {
    if (goingTo === target) return;
    throw new SvcError('usage', `--to ${goingTo} was asked for, and this is swarm-node ${target}`, {
      remedy: `Pass the ${goingTo} release, or --to ${target}.`,
    });
  }
  if (compareVersions(target, installed) > 0) return;
  const same = compareVersions(target, installed) === 0;
  throw new SvcError(
    'usage',
    `swarm-node ${installed} is installed; ${target} is ${same ? 'the same version' : 'older'}, and a node never goes back by itself`,
    {
      remedy: same
        ? 'Nothing to do.'
        : `To go back on purpose: sudo swarm-node upgrade --to ${target}${serviceOf(nodeBaseUrl)} (add --from and the artifact when it is at hand), or to the release kept as previous: sudo swarm-node upgrade --rollback.`,
    },
  );
}

/**
 * An install over an installed node (install.sh, `install --from`): the same version converges, an older one is
 * refused. `nodeBaseUrl` is the installed node's own service, which the remedy's upgrade must ask: the one this
 * install was given (install.sh's default among them) may be another.
 */
export function assertNotOlder(target: string, installed: string, nodeBaseUrl?: string): void {
  if (compareVersions(target, installed) < 0) assertMovesForward(target, installed, undefined, nodeBaseUrl);
}

function serviceOf(baseUrl: string | undefined): string {
  return baseUrl === undefined ? '' : ` --base-url ${baseUrl}`;
}
