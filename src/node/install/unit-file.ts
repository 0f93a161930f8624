// The systemd units a release ships are templates (systemd/<unit>): the install path, the users, the agent socket
// and the run bound come from their one source (location.ts, per node, and runner/isolation.ts), never typed into
// a unit by hand. Install writes the rendered units, doctor compares them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { AGENT_SERVICE_UNIT, agentSocketPath, agentStateDirectoryName, AGENT_USER, nodeInstallPath, nodeUnits, SERVICE_USER, UNIT_NAME, unitInRelease } from '../host/location.js';
import { MAX_RUN_SLOTS } from '../runner/isolation.js';

/** The values for one node's units: the default node's (no name), or node `name`'s (location.ts nodeUnits). */
export function unitValues(name?: string): Readonly<Record<string, string>> {
  return {
    install_path: nodeInstallPath(name),
    service_user: SERVICE_USER,
    agent_user: AGENT_USER,
    agent_socket: agentSocketPath(name),
    max_runs: String(MAX_RUN_SLOTS),
  };
}

export const UNIT_VALUES = unitValues();

/** Template lines for the reader of the template, not for systemd. */
const TEMPLATE_NOTE = /^#%.*(?:\n|$)/gm;

/** The unit to install from a template; a unit without placeholders (an older release's) renders to itself. */
export function renderUnit(template: string, values: Readonly<Record<string, string>> = UNIT_VALUES): string {
  return template.replace(TEMPLATE_NOTE, '').replace(/\{\{(\w+)\}\}/g, (placeholder, name: string) => {
    const value = values[name];
    if (value === undefined) throw new SvcError('local_state', `the unit template names ${placeholder}, which swarm-node install does not know`);
    return value;
  });
}

/**
 * The rendered unit `name` of the release (or unpacked package) in `dir`, for the default node or node `nodeName`.
 * With auto-update off (install --no-autoupdate, config auto_update false) the daemon's ExecStart carries
 * --no-autoupdate: the unit says so to whoever reads it, and a config edited back does not turn it on behind the
 * unit's back.
 */
export function unitOfRelease(dir: string, name: string = UNIT_NAME, nodeName?: string, options: { autoUpdate: boolean } = { autoUpdate: true }): string {
  const unit = forNamedNode(renderUnit(readFileSync(join(dir, unitInRelease(name)), 'utf8'), unitValues(nodeName)), name, nodeName, dir);
  if (options.autoUpdate || name !== UNIT_NAME) return unit;
  return unit.replace(/^(ExecStart=\S+\/swarm-node daemon)((?: \S+)*)$/m, (line, start: string, rest: string) => (rest.includes(' --no-autoupdate') ? line : `${start} --no-autoupdate${rest}`));
}

/**
 * What a named node's units say differently from the default node's, beyond the placeholders: its agent socket unit,
 * its agents' state directory, and which other node's files its agent runs do not see. The templates carry the
 * default node's values literally and these lines are rewritten, rather than filled from placeholders of their own,
 * because an older swarm-node renders a newer release's templates when it upgrades to it (like --no-autoupdate
 * above), and it refuses a placeholder it does not know. A release whose templates lack one of these lines predates
 * named nodes: refused for one.
 */
function forNamedNode(unit: string, name: string, nodeName: string | undefined, dir: string): string {
  if (nodeName === undefined) return unit;
  const units = nodeUnits(nodeName);
  const rewrites: Record<string, Array<[RegExp, string]>> = {
    [UNIT_NAME]: [
      [/^(After=.*) svc-swarm-node-agent\.socket$/m, `$1 ${units.agentSocket}`],
      [/^(Wants=.*) svc-swarm-node-agent\.socket$/m, `$1 ${units.agentSocket}`],
    ],
    [AGENT_SERVICE_UNIT]: [
      [/^StateDirectory=svc-swarm-node-agents$/m, `StateDirectory=${agentStateDirectoryName(nodeName)}`],
      [/^InaccessiblePaths=-\S+\/nodes\/[^/\s]+\/nodes$/m, `InaccessiblePaths=-${INSTALL_PATH}/etc -${INSTALL_PATH}/var`],
    ],
  };
  let rewritten = unit;
  for (const [line, replacement] of rewrites[name] ?? []) {
    if (!line.test(rewritten)) {
      throw new SvcError('local_state', `the release in ${dir} predates named nodes; node ${nodeName} cannot run it`, {
        remedy: 'Install the node from a newer release: install.sh, or the newer package\'s own bin/swarm-node install.',
      });
    }
    rewritten = rewritten.replace(line, replacement);
  }
  return rewritten;
}
