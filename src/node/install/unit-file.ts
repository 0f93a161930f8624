// The systemd unit a release ships is a template (systemd/svc-swarm-node.service): the install path and the
// service user come from their one source (INSTALL_PATH in the contract, SERVICE_USER in location.ts), never typed
// into the unit by hand. Install writes the rendered unit, and doctor compares the installed unit with it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { SERVICE_USER, UNIT_IN_RELEASE } from '../location.js';

export const UNIT_VALUES: Readonly<Record<string, string>> = { install_path: INSTALL_PATH, service_user: SERVICE_USER };

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

/** The rendered unit of the release (or unpacked package) in `dir`. */
export function unitOfRelease(dir: string): string {
  return renderUnit(readFileSync(join(dir, UNIT_IN_RELEASE), 'utf8'));
}
