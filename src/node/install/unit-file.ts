// The systemd units a release ships are templates (systemd/<unit>): the install path, the users, the agent socket
// and the run bound come from their one source (location.ts, per node, and runner/isolation.ts), never typed into
// a unit by hand. Install writes the rendered units, doctor compares them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { agentSocketPath, AGENT_USER, nodeInstallPath, NODES_DIR, nodeUnits, SERVICE_USER, UNIT_NAME, unitInRelease } from '../location.js';
import { MAX_RUN_SLOTS } from '../runner/isolation.js';

/** The values for one node's units: the default node's (no name), or node `name`'s (location.ts nodeUnits). */
export function unitValues(name?: string): Readonly<Record<string, string>> {
  const units = nodeUnits(name);
  return {
    install_path: nodeInstallPath(name),
    service_user: SERVICE_USER,
    agent_user: AGENT_USER,
    agent_socket: agentSocketPath(name),
    agent_socket_unit: units.agentSocket,
    // What agents keep between runs (SWARM_STATE_DIR): per node, as two nodes may belong to different users.
    agent_state_dir: name === undefined ? 'svc-swarm-node-agents' : `svc-swarm-node-agents-${name}`,
    // The other nodes' files, out of an agent run's sight on top of their modes: the default node's runs do not see
    // nodes/, a named node's runs do not see the default node's etc/ and var/.
    other_nodes_paths: name === undefined ? `-${INSTALL_PATH}/${NODES_DIR}` : `-${INSTALL_PATH}/etc -${INSTALL_PATH}/var`,
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
 * A release older than named nodes names the default node's agent socket in its daemon unit: refused for a named one.
 */
export function unitOfRelease(dir: string, name: string = UNIT_NAME, nodeName?: string): string {
  const template = readFileSync(join(dir, unitInRelease(name)), 'utf8');
  if (nodeName !== undefined && name === UNIT_NAME && !template.includes('{{agent_socket_unit}}')) {
    throw new SvcError('local_state', `the release in ${dir} predates named nodes; node ${nodeName} cannot run it`, {
      remedy: 'Install or upgrade node to a newer release.',
    });
  }
  return renderUnit(template, unitValues(nodeName));
}
