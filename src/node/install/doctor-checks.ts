// The checks doctor makes of any node, installed or run from a home of its own (doctor.ts): its enrollment, the
// service and the clock, the token, the database, how its agent runs are isolated. They only read.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { messageOf, SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { Credentials } from '../identity/credentials.js';
import { expiresSoon, expiryOf } from '../identity/token.js';
import { AGENT_ISOLATIONS, readConfigFile, type AgentIsolation } from '../host/config.js';
import { agentSocketPath, type NodePaths } from '../host/location.js';
import { resolveIsolation } from '../runner/isolation.js';
import { isolationReport } from '../runner/isolation-report.js';
import { AGENT_SYSCALL_FILTERS, type AgentSyscallFilter } from '../runner/syscall-filter.js';
import { ServiceClient, type ServicePing } from '../service/service-client.js';
import { integrityFindings } from '../store/file-checks.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  detail: string;
  /** The command that fixes it (failed and warned checks). */
  fix?: string;
}

/** `enroll`: the command that enrolls this node (signed in, it asks the service for the deploy token itself). */
export function checkEnrollment(credentials: Credentials | SvcError, how: { enroll: string }): DoctorCheck {
  if (credentials instanceof SvcError)
    return {
      name: 'enrollment',
      status: 'fail',
      detail: credentials.message,
      ...(credentials.remedy === undefined ? {} : { fix: credentials.remedy }),
    };
  if (credentials.node === undefined) {
    return { name: 'enrollment', status: 'fail', detail: 'the node is not enrolled', fix: how.enroll };
  }
  return { name: 'enrollment', status: 'ok', detail: `node ${credentials.node.node_id} of ${credentials.node.user_id}` };
}

export async function checkService(options: { client: ServiceClient; maxClockSkewSeconds?: number }): Promise<DoctorCheck[]> {
  const { client } = options;
  const url = `${client.baseUrl}${ServiceClient.PING_PATH}`;
  let ping: ServicePing;
  try {
    ping = await client.ping();
  } catch (error) {
    return [
      {
        name: 'service',
        status: 'fail',
        detail: `cannot reach ${url} (${whyUnreachable(error)})`,
        fix: `check the URL and the network: swarm-node config get base_url; curl -sS ${url}`,
      },
    ];
  }
  const reachable: DoctorCheck = { name: 'service', status: 'ok', detail: `${client.baseUrl} answers` };
  if (ping.clockSkewMs === undefined)
    return [reachable, { name: 'clock', status: 'warn', detail: 'the service sent no Date header to compare clocks with' }];
  const skewSeconds = Math.round(Math.abs(ping.clockSkewMs) / 1000);
  const max = options.maxClockSkewSeconds ?? 60;
  const clock: DoctorCheck =
    skewSeconds > max
      ? {
          name: 'clock',
          status: 'fail',
          detail: `this host's clock is ${skewSeconds} s away from the service's (at most ${max} s): token expiry and signatures go wrong`,
          fix: 'timedatectl set-ntp true',
        }
      : { name: 'clock', status: 'ok', detail: `within ${Math.max(skewSeconds, 1)} s of the service` };
  return [reachable, clock];
}

/** The network's code (ECONNREFUSED), or the HTTP status the service answered with. */
function whyUnreachable(error: unknown): string {
  if (error instanceof SvcError && error.code !== 'service_unreachable') return `HTTP ${error.status}`;
  const cause = (error instanceof SvcError ? error.cause : error) as { code?: string; cause?: { code?: string } } | undefined;
  return cause?.code ?? cause?.cause?.code ?? (error as Error).message;
}

export function checkToken(credentials: Credentials | SvcError, clock: Clock): DoctorCheck {
  const fix = 'swarm-node login';
  if (credentials instanceof Error || credentials.jwt === undefined) {
    return { name: 'token', status: 'warn', detail: 'no access token stored yet (needed to run agents)', fix };
  }
  // Decoded, not verified: the node does not hold the signing key; only the expiry is read.
  const exp = expiryOf(credentials.jwt.token);
  if (exp === undefined) return { name: 'token', status: 'fail', detail: 'the stored access token is not a readable JWT', fix };
  const left = exp - Math.floor(clock.now() / 1000);
  const at = new Date(exp * 1000).toISOString();
  if (left <= 0) return { name: 'token', status: 'fail', detail: `the access token expired at ${at}`, fix };
  if (expiresSoon(exp * 1000, clock.now())) return { name: 'token', status: 'warn', detail: `the access token expires at ${at}`, fix };
  return { name: 'token', status: 'ok', detail: `valid until ${at}` };
}

/** `daemon`: the unit to stop first, or for a home, the daemon in words. */
export async function checkDatabase(layout: NodePaths, daemon: string): Promise<DoctorCheck> {
  if (!existsSync(layout.databaseFile))
    return { name: 'database', status: 'ok', detail: 'not created yet (the first command or the daemon creates it)' };
  const latestBackup = backupsIn(join(layout.varDir, 'backups')).sort().at(-1);
  const stop = daemon.endsWith('.service') ? `systemctl stop ${daemon} && ` : `stop ${daemon}, then: `;
  const fix =
    latestBackup === undefined
      ? `move it aside and start afresh: ${stop}mv ${layout.databaseFile} ${layout.databaseFile}.broken`
      : `restore the latest backup: ${stop}cp ${latestBackup} ${layout.databaseFile}`;
  try {
    const findings = await integrityFindings(layout.databaseFile);
    if (findings.length === 1 && findings[0] === 'ok')
      return { name: 'database', status: 'ok', detail: `${layout.databaseFile}: integrity_check ok` };
    return { name: 'database', status: 'fail', detail: `integrity_check: ${findings.slice(0, 3).join('; ')}`, fix };
  } catch (error) {
    return { name: 'database', status: 'fail', detail: `cannot read ${layout.databaseFile}: ${(error as Error).message}`, fix };
  }
}

/** The files of a backups directory; none when it does not exist. */
function backupsIn(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).map((name) => join(dir, name)) : [];
}

/** How agent runs are kept from the node here, and what they are not held to (docs/operations.md "Agent isolation"). */
export function checkIsolation(paths: Pick<NodePaths, 'configFile' | 'name'>): DoctorCheck {
  const file = readConfigFile(paths.configFile);
  const wanted = (AGENT_ISOLATIONS as readonly string[]).includes(file.agent_isolation ?? '')
    ? (file.agent_isolation as AgentIsolation)
    : 'auto';
  const filter = (AGENT_SYSCALL_FILTERS as readonly string[]).includes(file.agent_syscall_filter ?? '')
    ? (file.agent_syscall_filter as AgentSyscallFilter)
    : 'auto';
  let mode;
  const agentSocket = file.agent_socket ?? agentSocketPath(paths.name);
  try {
    mode = resolveIsolation(wanted, agentSocket, filter);
  } catch (error) {
    // Without the release's system-call filter (./syscall-filter.ts): the setting that runs agents without it.
    // Without the tools or the loop devices of a run's state image (../runner/state-image-probe.ts): e2fsprogs.
    const fix = messageOf(error).includes('no system call filter')
      ? 'swarm-node config set agent_syscall_filter optional'
      : messageOf(error).includes('state image')
        ? 'apt-get install e2fsprogs, on a host with loop devices'
        : 'apt-get install bubblewrap';
    return { name: 'isolation', status: 'fail', detail: messageOf(error), fix };
  }
  const report = isolationReport(mode, { agentSocket, name: paths.name });
  const detail = report.cannot.length === 0 ? report.summary : `${report.summary}; not held: ${report.cannot.join('; ')}`;
  if (mode === 'none')
    return {
      name: 'isolation',
      status: 'warn',
      detail,
      fix: 'apt-get install bubblewrap, or install the node with systemd (swarm-node install)',
    };
  return { name: 'isolation', status: 'ok', detail };
}
