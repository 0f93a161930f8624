// The checks doctor makes of a node at work (docs/operations.md "Doctor"): that its daemon runs, by the record the
// daemon keeps of itself in the node's database (its pid alive, a tick within five ticks, no stop recorded: what
// `status` reads, src/node/store/daemon-state.ts), and that the service sees the node online (its last poll, asked
// with the node's own credential: GET /v1/swarm/nodes/self). They only read.
import { existsSync } from 'node:fs';
import { normalizeEmail } from '../../contract/email.js';
import { messageOf, SvcError } from '../../contract/errors.js';
import type { NodeSummary } from '../../contract/node-protocol.js';
import type { Clock } from '../../lib/clock.js';
import type { Credentials, NodeEnrollment } from '../identity/credentials.js';
import type { NodePaths } from '../host/location.js';
import { listNodes } from '../service/fleet.js';
import { NodeApi } from '../service/node-api.js';
import type { ServiceClient } from '../service/service-client.js';
import { daemonRecord } from '../store/file-checks.js';
import type { CheckStatus, DoctorCheck } from './doctor-checks.js';

export interface DaemonExpectation {
  /** The command that starts the daemon here: its unit on an installed host, `swarm-node daemon` for a home. */
  start: string | undefined;
  /** The command that enrolls the node here (`--reenroll` enrolls it anew). */
  enroll: string;
  /** 'fail' where the daemon should run here; 'warn' for a staged install (--root), whose host starts it. */
  severity: CheckStatus;
}

export async function checkDaemon(paths: NodePaths, clock: Clock, expected: DaemonExpectation): Promise<DoctorCheck> {
  const fix = expected.start === undefined ? {} : { fix: expected.start };
  const notRunning = (detail: string): DoctorCheck => ({ name: 'daemon', status: expected.severity, detail, ...fix });
  if (!existsSync(paths.databaseFile)) return notRunning('not running: it never ran here (no database yet)');
  let daemon;
  try {
    daemon = await daemonRecord(paths.databaseFile, clock.now());
  } catch (error) {
    return notRunning(`not known to run: its record cannot be read (${messageOf(error)})`);
  }
  if (daemon.running) {
    return {
      name: 'daemon',
      status: 'ok',
      detail: `running (pid ${daemon.pid}, version ${daemon.version ?? '-'}, last tick ${daemon.last_tick_at})`,
    };
  }
  if (daemon.pid === null) return notRunning('not running: it never ran here');
  const stopped = daemon.stopped_at !== null && (daemon.started_at === null || daemon.stopped_at >= daemon.started_at);
  return notRunning(
    stopped
      ? `not running: it stopped at ${daemon.stopped_at}`
      : `not running: pid ${daemon.pid} is gone or hung (last tick ${daemon.last_tick_at ?? 'never'})`,
  );
}

/**
 * What the service says of this node: online (it polled within the service's window) or not, and when it last saw
 * it. Asked with the node's own credential (GET /v1/swarm/nodes/self), so an installed node nobody is signed in on
 * is answered too; a service from before that route (404) is asked, as it was, with the stored JWT of the node's
 * user, whose fleet lists the node. Nothing when the node is not enrolled (the enrollment check says so).
 */
export async function checkOnline(
  credentials: Credentials | SvcError,
  client: ServiceClient,
  clock: Clock,
  expected: DaemonExpectation & { daemonRunning: boolean },
): Promise<DoctorCheck[]> {
  if (credentials instanceof Error || credentials.node === undefined) return [];
  const { node } = credentials;
  if (node.credential !== undefined) {
    try {
      return [judged(node.node_id, await new NodeApi(client, node.credential).self(), expected)];
    } catch (error) {
      // A removed node's credential, or one the service does not know: what its poll gets, with the fix.
      if (error instanceof SvcError && (error.code === 'node_removed' || error.code === 'unauthorized')) {
        return [{ name: 'online', status: 'fail', detail: error.message, fix: `${expected.enroll} --reenroll` }];
      }
      if (!(error instanceof SvcError && error.status === 404))
        return [{ name: 'online', status: 'warn', detail: `cannot ask the service about node ${node.node_id}: ${messageOf(error)}` }];
    }
  }
  return checkOnlineByFleet(credentials.jwt, node, client, clock, expected);
}

/** An older service's answer: the user's fleet, which only the user's sign-in may read. */
async function checkOnlineByFleet(
  jwt: Credentials['jwt'],
  node: NodeEnrollment,
  client: ServiceClient,
  clock: Clock,
  expected: DaemonExpectation & { daemonRunning: boolean },
): Promise<DoctorCheck[]> {
  const login = `swarm-node login --email ${node.user_id}`;
  if (jwt === undefined || jwt.exp * 1000 <= clock.now() || normalizeEmail(jwt.sub) !== normalizeEmail(node.user_id)) {
    const why = jwt === undefined ? 'no sign-in stored' : jwt.exp * 1000 <= clock.now() ? 'the sign-in expired' : `signed in as ${jwt.sub}`;
    return [
      {
        name: 'online',
        status: 'warn',
        detail: `cannot ask the service whether it sees node ${node.node_id} online (${why}; this service answers ${node.user_id}'s sign-in only)`,
        fix: login,
      },
    ];
  }
  let fleet;
  try {
    fleet = await listNodes(client, jwt.token, node.node_id);
  } catch (error) {
    return [{ name: 'online', status: 'warn', detail: `cannot ask the service about node ${node.node_id}: ${messageOf(error)}` }];
  }
  const seen = fleet.nodes.find((each) => each.node_id === node.node_id);
  if (seen === undefined) {
    return [
      {
        name: 'online',
        status: 'fail',
        detail: `the service does not list node ${node.node_id} among ${node.user_id}'s nodes: it was removed`,
        fix: 'swarm-node nodes',
      },
    ];
  }
  return [judged(node.node_id, seen, expected)];
}

function judged(nodeId: string, seen: NodeSummary, expected: DaemonExpectation & { daemonRunning: boolean }): DoctorCheck {
  if (seen.online)
    return { name: 'online', status: 'ok', detail: `the service sees node ${nodeId} online (last seen ${seen.last_seen_at})` };
  // Offline with its daemon running: the daemon's own report says why it does not reach the service.
  const fix = expected.daemonRunning ? 'swarm-node status' : expected.start;
  const when = seen.last_seen_at === null ? 'offline, never seen: its daemon never polled' : `offline (last seen ${seen.last_seen_at})`;
  return {
    name: 'online',
    status: expected.severity,
    detail: `the service sees node ${nodeId} ${when}; it hands the node no runs`,
    ...(fix === undefined ? {} : { fix }),
  };
}
