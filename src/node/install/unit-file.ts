// The systemd units a release ships are templates (systemd/<unit>): the install path, the users, the agent socket
// and the run bound come from their one source (location.ts, per node, and runner/isolation.ts), never typed into
// a unit by hand. Install writes the rendered units, doctor compares them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import {
  AGENT_SERVICE_UNIT,
  AGENT_SOCKET_UNIT,
  agentSocketPath,
  agentStateDirectoryName,
  AGENT_USER,
  EGRESS_SERVICE_UNIT,
  EGRESS_SOCKET_UNIT,
  egressSocketPath,
  nodeInstallPath,
  nodeUnits,
  SERVICE_USER,
  UNIT_NAME,
  unitInRelease,
} from '../host/location.js';
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
    if (value === undefined)
      throw new SvcError('local_state', `the unit template names ${placeholder}, which swarm-node install does not know`);
    return value;
  });
}

/**
 * The rendered unit `name` of the release (or unpacked package) in `dir`, for the default node or node `nodeName`.
 * With auto-update off (install --no-autoupdate, config auto_update false) the daemon's ExecStart carries
 * --no-autoupdate: the unit says so to whoever reads it, and a config edited back does not turn it on behind the
 * unit's back.
 */
export function unitOfRelease(
  dir: string,
  name: string = UNIT_NAME,
  nodeName?: string,
  options: { autoUpdate: boolean } = { autoUpdate: true },
): string {
  const template = templateOf(name);
  const values = name === EGRESS_SOCKET_UNIT ? { ...unitValues(nodeName), agent_socket: egressSocketPath(nodeName) } : unitValues(nodeName);
  const unit = asEgressTwin(
    forNamedNode(renderUnit(readFileSync(join(dir, unitInRelease(template)), 'utf8'), values), template, nodeName, dir),
    name,
    nodeName,
  );
  if (options.autoUpdate || name !== UNIT_NAME) return unit;
  return unit.replace(/^(ExecStart=\S+\/swarm-node daemon)((?: \S+)*)$/m, (line, start: string, rest: string) =>
    rest.includes(' --no-autoupdate') ? line : `${start} --no-autoupdate${rest}`,
  );
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
        remedy: "Install the node from a newer release: install.sh, or the newer package's own bin/swarm-node install.",
      });
    }
    rewritten = rewritten.replace(line, replacement);
  }
  return rewritten;
}

/** The release's template a unit is rendered from: the egress pair's are the agent pair's. */
export function templateOf(name: string): string {
  return name === EGRESS_SOCKET_UNIT ? AGENT_SOCKET_UNIT : name === EGRESS_SERVICE_UNIT ? AGENT_SERVICE_UNIT : name;
}

/** The agent service template's network lines, and the comment above them (docs/operations.md "Agent isolation"). */
const NETWORK_LINES = /^(?:PrivateNetwork|IPAddressAllow|IPAddressDeny)=.*\n/gm;
const NETWORK_COMMENT = /^# Network:.*\n(?:#.*\n)*/m;
const HOST_NETWORK = `# Network: the host's, as bubblewrap gives an agent whose agent.json asks for egress (docs/operations.md "Agent
# isolation"): its model endpoint, MX lookups, SMTP; it reaches the host's loopback services too, as any local user
# can. RestrictAddressFamilies= below holds here as in the agent unit.
`;

/**
 * The egress pair is the agent pair with the host's network, rendered from the same templates so that the two never
 * differ in anything else (uid per agent, limits, filters, state): the socket listens at the egress socket path, the
 * service has no PrivateNetwork= and no IP address filter. The daemon's unit wants the egress socket as it wants the
 * agent socket. These are rewrites rather than placeholders for the same reason as forNamedNode's; a release whose
 * agent unit has no network lines (older than them) renders a twin that is the same unit, which is what it was.
 */
function asEgressTwin(unit: string, name: string, nodeName: string | undefined): string {
  const units = nodeUnits(nodeName);
  if (name === EGRESS_SOCKET_UNIT)
    return unit.replace(/^Description=svc swarm-node agent runs/m, 'Description=svc swarm-node egress agent runs');
  if (name === EGRESS_SERVICE_UNIT) {
    return unit
      .replace(/^Description=svc swarm-node agent run /m, 'Description=svc swarm-node egress agent run ')
      .replace(NETWORK_COMMENT, HOST_NETWORK)
      .replace(NETWORK_LINES, '');
  }
  if (name === UNIT_NAME) {
    const agentSocket = units.agentSocket.replace(/[.]/g, '\\.');
    return unit.replace(new RegExp(`^((?:After|Wants)=.* ${agentSocket})$`, 'gm'), `$1 ${units.egressSocket}`);
  }
  return unit;
}
