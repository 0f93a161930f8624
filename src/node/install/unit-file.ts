// The systemd units a release ships are templates (systemd/<unit>): the install path, the users, the agent socket
// and the run bound come from their one source (INSTALL_PATH in the contract, location.ts, config.ts,
// runner/isolation.ts), never typed into a unit by hand. Install writes the rendered units, doctor compares them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { DEFAULT_AGENT_SOCKET } from '../config.js';
import { AGENT_USER, SERVICE_USER, UNIT_NAME, unitInRelease } from '../location.js';
import { MAX_RUN_SLOTS } from '../runner/isolation.js';

export const UNIT_VALUES: Readonly<Record<string, string>> = {
  install_path: INSTALL_PATH,
  service_user: SERVICE_USER,
  agent_user: AGENT_USER,
  agent_socket: DEFAULT_AGENT_SOCKET,
  max_runs: String(MAX_RUN_SLOTS),
};

/** Template lines for the reader of the template, not for systemd. */
const TEMPLATE_NOTE = /^#%.*(?:\n|$)/gm;

/** The unit to install from a template; a unit without placeholders (an older release's) renders to itself. */
export function renderUnit(template: string): string {
  return template.replace(TEMPLATE_NOTE, '').replace(/\{\{(\w+)\}\}/g, (placeholder, name: string) => {
    const value = UNIT_VALUES[name];
    if (value === undefined) throw new SvcError('local_state', `the unit template names ${placeholder}, which swarm-node install does not know`);
    return value;
  });
}

/** The rendered unit `name` of the release (or unpacked package) in `dir`. */
export function unitOfRelease(dir: string, name: string = UNIT_NAME): string {
  return renderUnit(readFileSync(join(dir, unitInRelease(name)), 'utf8'));
}
