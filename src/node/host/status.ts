// `status`: one report of the node — the configuration in force and where each value comes from, the
// service's reachability and latency, the token's validity and expiry, registrations, the database, the daemon.
// It reports problems rather than failing on them: a broken part is the thing a status must show.
import { existsSync } from 'node:fs';
import { messageOf } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { ConfigKey, ConfigSource, ResolvedConfig } from './config.js';
import type { Credentials } from '../identity/credentials.js';
import type { NodePaths } from './location.js';
import { formatDuration } from '../agents/duration.js';
import { readDaemonStatus, type DaemonStatus } from '../store/daemon-state.js';
import { readJournalFault, type JournalFault } from '../store/journal-fault.js';
import { processIsAlive } from './process-alive.js';
import type { ServiceClient } from '../service/service-client.js';
import { daysLeft, expiresSoon } from '../identity/token.js';
import { listRegistrations } from '../store/registrations.js';
import { isolationFallback, resolveIsolation, type IsolationMode } from '../runner/isolation.js';
import { isolationReport } from '../runner/isolation-report.js';

export interface NodeStatus {
  config: {
    file: string;
    values: Record<ConfigKey, string | number | boolean>;
    sources: Record<ConfigKey, ConfigSource>;
    node_id: string | null;
  };
  service: { base_url: string; reachable: boolean; latency_ms: number | null; error: string | null };
  token: {
    stored: boolean;
    sub: string | null;
    tier: string | null;
    expires_at: string | null;
    days_left: number | null;
    expiring_soon: boolean;
    /** The service's verdict; null when it could not be asked. */
    valid: boolean | null;
    reason: string | null;
    docs_sections: string[];
  };
  /** This host as a node: enrolled or not, and how its agents are kept apart from it. */
  node: {
    enrolled: boolean;
    node_id: string | null;
    user_id: string | null;
    tier_id: string | null;
    /** install --ephemeral: it takes one run, then removes itself (docs/operations.md "Ephemeral nodes"). */
    ephemeral: boolean;
    isolation: IsolationMode | null;
    isolation_error: string | null;
    /** How each run is kept apart, and what it is not held to here (runner/isolation-report.ts). */
    isolation_summary: string | null;
    isolation_cannot: string[];
    /** Agents run unsandboxed though the config did not ask for it (`auto` fell back to none), why and the fix. */
    isolation_warning: string | null;
  };
  registrations: { count: number; agents: { agent_id: string; every: string | null; daily_cap_cents: number | null }[] };
  database: { path: string; exists: boolean; error: string | null };
  daemon: DaemonStatus;
  /** The running daemon cannot write its journal (a full var/), and why: it takes no run until it can. */
  journal_fault: JournalFault | null;
  problems: string[];
}

export interface StatusDeps {
  config: ResolvedConfig;
  paths: NodePaths;
  clock: Clock;
  credentials: () => Credentials;
  client: () => Promise<ServiceClient>;
  store: () => Promise<SqliteDatabase>;
}

export async function nodeStatus(deps: StatusDeps): Promise<NodeStatus> {
  const problems: string[] = [];
  const { config } = deps;
  const status: NodeStatus = {
    config: {
      file: deps.paths.configFile,
      values: {
        base_url: config.base_url,
        wallet_url: config.wallet_url,
        merchant_id: config.merchant_id,
        timeout_seconds: config.timeout_seconds,
        concurrency: config.concurrency,
        agent_isolation: config.agent_isolation,
        agent_socket: config.agent_socket,
        agent_syscall_filter: config.agent_syscall_filter,
        health_addr: config.health_addr,
        auto_update: config.auto_update,
        auto_update_interval: config.auto_update_interval,
      },
      sources: config.sources,
      node_id: config.node_id ?? null,
    },
    service: { base_url: config.base_url, reachable: false, latency_ms: null, error: null },
    token: {
      stored: false,
      sub: null,
      tier: null,
      expires_at: null,
      days_left: null,
      expiring_soon: false,
      valid: null,
      reason: null,
      docs_sections: [],
    },
    node: {
      enrolled: false,
      node_id: null,
      user_id: null,
      tier_id: null,
      ephemeral: false,
      isolation: null,
      isolation_error: null,
      isolation_summary: null,
      isolation_cannot: [],
      isolation_warning: null,
    },
    registrations: { count: 0, agents: [] },
    database: { path: deps.paths.databaseFile, exists: existsSync(deps.paths.databaseFile), error: null },
    daemon: {
      running: false,
      pid: null,
      version: null,
      started_at: null,
      last_tick_at: null,
      stopped_at: null,
      paused: null,
      drained_since: null,
      agents: [],
      state: {},
    },
    journal_fault: null,
    problems,
  };

  const client = await deps.client();
  try {
    const ping = await client.ping();
    status.service.reachable = true;
    status.service.latency_ms = Math.round(ping.latencyMs);
  } catch (error) {
    status.service.error = messageOf(error);
    problems.push(`the service at ${config.base_url} is not reachable`);
  }

  let credentials: Credentials = {};
  try {
    credentials = deps.credentials();
  } catch (error) {
    problems.push(messageOf(error));
  }
  status.config.node_id ??= credentials.node?.node_id ?? null;
  const node = credentials.node;
  if (node?.credential === undefined) {
    problems.push('this host is not an enrolled node: agents cannot run here (swarm-node install, or swarm-node enroll)');
  } else {
    Object.assign(status.node, {
      enrolled: true,
      node_id: node.node_id,
      user_id: node.user_id,
      tier_id: node.tier_id,
      ephemeral: node.ephemeral === true,
    });
  }
  try {
    status.node.isolation = resolveIsolation(config.agent_isolation, config.agent_socket, config.agent_syscall_filter);
    const report = isolationReport(status.node.isolation, { agentSocket: config.agent_socket, name: deps.paths.name });
    status.node.isolation_summary = report.summary;
    status.node.isolation_cannot = report.cannot;
    status.node.isolation_warning = isolationFallback(config.agent_isolation, status.node.isolation) ?? null;
    if (status.node.isolation_warning !== null) problems.push(status.node.isolation_warning);
  } catch (error) {
    status.node.isolation_error = messageOf(error);
    problems.push(messageOf(error));
  }
  const jwt = credentials.jwt;
  if (jwt === undefined) {
    problems.push('not signed in (swarm-node login)');
  } else {
    const now = deps.clock.now();
    Object.assign(status.token, {
      stored: true,
      sub: jwt.sub,
      tier: jwt.tier,
      expires_at: new Date(jwt.exp * 1000).toISOString(),
      days_left: daysLeft(jwt.exp * 1000, now),
    });
    if (jwt.exp * 1000 <= now) {
      status.token.valid = false;
      status.token.reason = 'expired';
      problems.push('the stored token has expired (swarm-node login)');
    } else {
      status.token.expiring_soon = expiresSoon(jwt.exp * 1000, now);
      if (status.token.expiring_soon) problems.push(`the stored token expires in ${status.token.days_left} day(s); sign in again soon`);
      if (status.service.reachable) {
        try {
          const verdict = await client.verify(jwt.token);
          status.token.valid = verdict.valid;
          status.token.reason = verdict.reason ?? null;
          status.token.docs_sections = verdict.docs_sections ?? [];
          if (!verdict.valid) problems.push(`the service rejects the stored token: ${verdict.reason ?? 'invalid'}`);
        } catch (error) {
          problems.push(`could not verify the token: ${messageOf(error)}`);
        }
      }
    }
  }

  if (status.database.exists) {
    try {
      const db = await deps.store();
      const registrations = listRegistrations(db);
      status.registrations = {
        count: registrations.length,
        agents: registrations.map((r) => ({
          agent_id: r.agent_id,
          every: r.every_seconds === null ? null : formatDuration(r.every_seconds),
          daily_cap_cents: r.daily_cap_cents,
        })),
      };
      status.daemon = readDaemonStatus(db, deps.clock.now());
      // Its ticks are not recorded while it cannot write: a live daemon that says so runs all the same.
      const fault = readJournalFault(deps.paths.varDir);
      if (fault !== undefined && fault.pid === status.daemon.pid && processIsAlive(fault.pid)) {
        status.journal_fault = fault;
        status.daemon.running = true;
        problems.push(
          `the daemon cannot write its journal since ${fault.since} (${fault.reason}: ${fault.error}); it takes no run until it can: free space under ${deps.paths.varDir}`,
        );
      }
      // A hold is a problem only while the daemon runs (a stopped daemon holds nothing); a daily cap is no problem.
      if (status.daemon.running && status.daemon.paused !== null)
        problems.push(`the daemon holds every agent: ${status.daemon.paused.reason}`);
    } catch (error) {
      status.database.error = messageOf(error);
      problems.push(messageOf(error));
    }
  }
  return status;
}
