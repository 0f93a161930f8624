// Configuration in force: flags > environment > the node's config file > defaults (docs/operations.md
// "Day to day on the host"). Each value knows where it came from, so `status` and `config get` can say so.
import { readFileSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';
import { formatDuration, parseDuration } from '../agents/duration.js';
import { writeFileAtomic } from './files.js';
import { AGENT_SYSCALL_FILTERS, type AgentSyscallFilter } from '../runner/syscall-filter.js';

export const CONFIG_KEYS = [
  'base_url',
  'wallet_url',
  'merchant_id',
  'timeout_seconds',
  'concurrency',
  'agent_isolation',
  'agent_socket',
  'agent_syscall_filter',
  'health_addr',
  'auto_update',
  'auto_update_interval',
] as const;
export type ConfigKey = (typeof CONFIG_KEYS)[number];
/** node_id: written by install; shown by `config get`, not settable by hand. labels: install --label, `swarm-node labels`. */
export type ConfigFile = Partial<Record<ConfigKey | 'node_id', string>> & { labels?: string[] };

/** Auto-update (docs/operations.md "Auto-update"): on by default, as cloudflared's; a day between checks. */
export const DEFAULT_AUTO_UPDATE_INTERVAL = '24h';
/** Below this a fleet's checks would be load on the service for nothing: a release is not published by the minute. */
export const MIN_AUTO_UPDATE_INTERVAL_SECONDS = 5 * 60;

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8787';
export const DEFAULT_MERCHANT_ID = 'merchant_local';
export const DEFAULT_TIMEOUT_SECONDS = 15;
/** Runs this node executes at once; each takes a run slot (src/node/runner/isolation.ts, at most 32). */
export const DEFAULT_CONCURRENCY = 2;
/**
 * `uid` is what bubblewrap's mode was called before it sandboxed each run: a config saying it keeps working.
 * `unshare` is never what `auto` picks: only a config that names it gets it (docs/decisions/0027-unshare-mode.md).
 */
export const AGENT_ISOLATIONS = ['auto', 'systemd', 'bubblewrap', 'unshare', 'uid', 'none'] as const;
/** Where systemd listens for agent runs (svc-swarm-node-agent.socket): one sandboxed service per run. */
export const DEFAULT_AGENT_SOCKET = '/run/svc-swarm-node/agent.sock';
/**
 * Where systemd listens for the runs of agents that ask for egress (svc-swarm-node-egress-agent.socket), derived from
 * agent_socket so one setting names both: agent.sock -> agent-egress.sock, beside it.
 */
export function egressSocketOf(agentSocket: string): string {
  return agentSocket.endsWith('.sock') ? `${agentSocket.slice(0, -'.sock'.length)}-egress.sock` : `${agentSocket}-egress`;
}
export type AgentIsolation = (typeof AGENT_ISOLATIONS)[number];

const ENV_OF: Partial<Record<ConfigKey, string>> = {
  base_url: 'SVC_BASE_URL',
  wallet_url: 'SVC_WALLET_URL',
  merchant_id: 'SVC_MERCHANT_ID',
  concurrency: 'SWARM_NODE_CONCURRENCY',
  agent_isolation: 'SWARM_AGENT_ISOLATION',
  agent_socket: 'SWARM_AGENT_SOCKET',
  agent_syscall_filter: 'SWARM_AGENT_SYSCALL_FILTER',
  health_addr: 'SWARM_NODE_HEALTH_ADDR',
};

export type ConfigSource = 'flag' | 'env' | 'file' | 'default';

export interface ResolvedConfig {
  base_url: string;
  wallet_url: string;
  merchant_id: string;
  timeout_seconds: number;
  concurrency: number;
  /**
   * auto: systemd's agent socket when it listens, else a bubblewrap sandbox per run when bubblewrap can make one
   * here, else (unprivileged only) the node's own user, unsandboxed (docs/operations.md "Agent isolation").
   */
  agent_isolation: AgentIsolation;
  agent_socket: string;
  /**
   * auto: bubblewrap's runs under the release's system-call filter, which an installed root node will not run agents
   * without; optional: without it where the release has none for this architecture (docs/operations.md "Agent isolation").
   */
  agent_syscall_filter: AgentSyscallFilter;
  /** Where the daemon serves /healthz and /metrics (src/node/daemon/health-server.ts); '' is off, the default. */
  health_addr: string;
  /** The daemon checks the service for a newer release and updates itself (src/node/daemon/auto-update.ts). */
  auto_update: boolean;
  /** Between two checks, as written (24h); autoUpdateIntervalSeconds reads it. */
  auto_update_interval: string;
  node_id: string | undefined;
  sources: Record<ConfigKey, ConfigSource>;
}

export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new SvcError('local_state', `cannot read the config file ${path}: ${(error as Error).message}`);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed as ConfigFile;
  } catch (error) {
    throw new SvcError('local_state', `the config file ${path} is not valid JSON: ${(error as Error).message}`, {
      remedy: `Fix it, or move it aside (mv ${path} ${path}.broken) and set again what you need, a key at a time (how: swarm-node config set --help).`,
    });
  }
}

export function writeConfigFile(path: string, config: ConfigFile): void {
  writeFileAtomic(path, `${JSON.stringify(config, null, 2)}\n`, 0o644);
}

export function resolveConfig(input: {
  flags?: Partial<Record<ConfigKey, string | undefined>>;
  env?: NodeJS.ProcessEnv;
  file?: ConfigFile;
}): ResolvedConfig {
  const env = input.env ?? process.env;
  const file = input.file ?? {};
  const sources = {} as Record<ConfigKey, ConfigSource>;
  const pick = (key: ConfigKey, fallback: string, skipFile = false): string => {
    const flag = input.flags?.[key];
    if (flag !== undefined) return ((sources[key] = 'flag'), flag);
    const envName = ENV_OF[key];
    const fromEnv = envName === undefined ? undefined : env[envName];
    if (fromEnv !== undefined && fromEnv !== '') return ((sources[key] = 'env'), fromEnv);
    if (file[key] !== undefined && !skipFile) return ((sources[key] = 'file'), String(file[key]));
    return ((sources[key] = 'default'), fallback);
  };
  const base_url = validateConfigValue('base_url', pick('base_url', DEFAULT_BASE_URL));
  const wallet_url = validateConfigValue(
    'wallet_url',
    pick('wallet_url', `${base_url}/wallet`, walletFollowsBaseUrl(file, sources.base_url)),
  );
  const merchant_id = validateConfigValue('merchant_id', pick('merchant_id', DEFAULT_MERCHANT_ID));
  const timeout_seconds = Number(validateConfigValue('timeout_seconds', pick('timeout_seconds', String(DEFAULT_TIMEOUT_SECONDS))));
  const concurrency = Number(validateConfigValue('concurrency', pick('concurrency', String(DEFAULT_CONCURRENCY))));
  const agent_isolation = validateConfigValue('agent_isolation', pick('agent_isolation', 'auto')) as AgentIsolation;
  const agent_socket = validateConfigValue('agent_socket', pick('agent_socket', DEFAULT_AGENT_SOCKET));
  const agent_syscall_filter = validateConfigValue('agent_syscall_filter', pick('agent_syscall_filter', 'auto')) as AgentSyscallFilter;
  const health_addr = validateConfigValue('health_addr', pick('health_addr', ''));
  const auto_update = validateConfigValue('auto_update', pick('auto_update', 'true')) === 'true';
  const auto_update_interval = validateConfigValue('auto_update_interval', pick('auto_update_interval', DEFAULT_AUTO_UPDATE_INTERVAL));
  return {
    base_url,
    wallet_url,
    merchant_id,
    timeout_seconds,
    concurrency,
    agent_isolation,
    agent_socket,
    agent_syscall_filter,
    health_addr,
    auto_update,
    auto_update_interval,
    node_id: file.node_id,
    sources,
  };
}

/**
 * install writes wallet_url beside base_url. One that is just the file's base_url + /wallet was derived, not
 * chosen: when a flag or the environment gives another base_url, the wallet follows it rather than staying with
 * the old service.
 */
function walletFollowsBaseUrl(file: ConfigFile, baseUrlSource: ConfigSource): boolean {
  if (baseUrlSource === 'file' || baseUrlSource === 'default') return false;
  if (file.wallet_url === undefined || file.base_url === undefined) return false;
  try {
    return validateConfigValue('wallet_url', file.wallet_url) === `${validateConfigValue('base_url', file.base_url)}/wallet`;
  } catch {
    return false;
  }
}

/** Checks one value; returns it normalised (URLs without a trailing slash). */
export function validateConfigValue(key: ConfigKey, value: string): string {
  switch (key) {
    case 'base_url':
    case 'wallet_url': {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        throw new SvcError('usage', `${key} must be an http(s) URL, got "${value}"`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new SvcError('usage', `${key} must be an http(s) URL, got "${value}"`);
      if (url.username || url.password || url.search || url.hash) {
        throw new SvcError('usage', `${key} must not carry credentials, a query or a fragment`);
      }
      return url.toString().replace(/\/+$/, '');
    }
    case 'merchant_id':
      if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(value)) throw new SvcError('usage', `merchant_id must be 1-128 letters, digits or _.:-`);
      return value;
    case 'timeout_seconds': {
      const seconds = Number(value);
      if (!Number.isInteger(seconds) || seconds < 1 || seconds > 600)
        throw new SvcError('usage', 'timeout_seconds must be a whole number from 1 to 600');
      return String(seconds);
    }
    case 'concurrency': {
      const runs = Number(value);
      if (!Number.isInteger(runs) || runs < 1 || runs > 32) throw new SvcError('usage', 'concurrency must be a whole number from 1 to 32');
      return String(runs);
    }
    case 'agent_isolation':
      if (!(AGENT_ISOLATIONS as readonly string[]).includes(value))
        throw new SvcError('usage', `agent_isolation must be one of ${AGENT_ISOLATIONS.join(', ')}`);
      return value;
    case 'agent_socket':
      // sun_path holds 108 bytes with its terminating NUL; the egress socket beside it (egressSocketOf) is 7 longer.
      if (!value.startsWith('/') || Buffer.byteLength(egressSocketOf(value)) > 107)
        throw new SvcError('usage', 'agent_socket must be an absolute path of at most 100 bytes');
      return value;
    case 'agent_syscall_filter':
      if (!(AGENT_SYSCALL_FILTERS as readonly string[]).includes(value)) {
        throw new SvcError('usage', `agent_syscall_filter must be one of ${AGENT_SYSCALL_FILTERS.join(', ')}`);
      }
      return value;
    case 'health_addr': {
      if (value === '' || value === 'off') return '';
      const address = parseHealthAddr(value);
      if (address === undefined)
        throw new SvcError(
          'usage',
          `health_addr must be PORT, :PORT or HOST:PORT (a port from 0 to 65535; off to turn it off), got "${value}"`,
        );
      return `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
    }
    case 'auto_update': {
      // A hand-written config may hold a JSON boolean (`"auto_update": false`): it reaches here as its string.
      const normalized = value.trim().toLowerCase();
      if (['true', 'on', 'yes', '1'].includes(normalized)) return 'true';
      if (['false', 'off', 'no', '0'].includes(normalized)) return 'false';
      throw new SvcError('usage', `auto_update must be true or false, got "${value}"`);
    }
    case 'auto_update_interval':
      // Checked, and kept as written: 24h stays 24h (the README's and the default's word), not 1d.
      autoUpdateIntervalSeconds(value);
      return value.trim();
  }
}

/** Whether a node's config file leaves auto-update on (absent: on, the default). */
export function autoUpdateOfFile(file: ConfigFile): boolean {
  return file.auto_update === undefined || validateConfigValue('auto_update', String(file.auto_update)) === 'true';
}

/** "24h" → 86400: a duration (5m to 7d) in the syntax of register --every. */
export function autoUpdateIntervalSeconds(value: string): number {
  const seconds = parseDuration(value);
  if (seconds < MIN_AUTO_UPDATE_INTERVAL_SECONDS) {
    throw new SvcError(
      'usage',
      `auto_update_interval must be at least ${formatDuration(MIN_AUTO_UPDATE_INTERVAL_SECONDS)}, got "${value}"`,
      {
        remedy: 'Choose an interval from 5m to 7d; 24h is the default.',
      },
    );
  }
  return seconds;
}

/**
 * The daemon's health listener: a port alone (or `:PORT`) listens on loopback only, 127.0.0.1; any other host is
 * the operator saying otherwise (`0.0.0.0:9465`, `[::]:9465`).
 */
export function parseHealthAddr(value: string): { host: string; port: number } | undefined {
  const match = /^(?:(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)?:)?(\d{1,5})$/.exec(value.trim());
  if (match === null) return undefined;
  const port = Number(match[2]);
  if (port > 65535) return undefined;
  return { host: (match[1] ?? '127.0.0.1').replace(/^\[|\]$/g, ''), port };
}

/** `config set`: one key checked, normalised and written into the config file, the others kept. */
export function setConfigValue(path: string, key: string, value: string): { key: ConfigKey; value: string } {
  const known = configKey(key);
  const normalized = validateConfigValue(known, value);
  writeConfigFile(path, { ...readConfigFile(path), [known]: normalized });
  return { key: known, value: normalized };
}

/** `key` as a config key, or a usage error naming the keys there are. */
export function configKey(key: string): ConfigKey {
  if (!isConfigKey(key)) throw new SvcError('usage', `unknown config key "${key}"`, { remedy: `Use one of: ${CONFIG_KEYS.join(', ')}` });
  return key;
}

export function isConfigKey(value: string): value is ConfigKey {
  return (CONFIG_KEYS as readonly string[]).includes(value);
}
