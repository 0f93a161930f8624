// The only place that runs systemctl (execa with argument arrays, never a shell string). Install and uninstall never
// fail because of the service manager: a staging root, --no-start or a host without a running systemd (a
// container, an image build) skips it with a reason, and a failing systemctl is reported as a warning.
import { existsSync } from 'node:fs';
import { execa } from 'execa';
import { nodeUnits, type NodeUnits } from '../host/location.js';

export interface ServiceManagerOptions {
  /** --no-start */
  noStart: boolean;
  /** False for a staging --root: the host's systemd has nothing to do with those files. */
  onHost: boolean;
  /** The host's systemd is running (PID 1): `/run/systemd/system` exists (sd_booted(3)). */
  systemdRunning?: boolean;
  /** The systemctl program; tests pass a script that records its arguments. */
  systemctl?: string;
  /** The node's units (location.ts nodeUnits); the default node's when absent. */
  units?: NodeUnits;
}

export interface ServiceManager {
  /** Why systemctl is not used in this run; undefined when it is. */
  readonly skipReason: string | undefined;
  /** Runs `systemctl <args>` when managing; returns a warning line on failure, never throws. */
  run(args: readonly string[]): Promise<string | undefined>;
  /** `systemctl is-enabled`: whether the unit starts at boot (false when not managing). */
  isEnabled(): Promise<boolean>;
  /** The systemctl argument lists for this node's units. */
  readonly commands: SystemctlCommands;
}

export function systemdIsRunning(): boolean {
  return existsSync('/run/systemd/system');
}

export function serviceManager(options: ServiceManagerOptions): ServiceManager {
  const skipReason = options.noStart
    ? '--no-start was given'
    : !options.onHost
      ? 'the install root is a staging directory, not this host'
      : !(options.systemdRunning ?? systemdIsRunning())
        ? 'systemd is not running on this host (/run/systemd/system is absent)'
        : undefined;
  const program = options.systemctl ?? 'systemctl';
  const units = options.units ?? nodeUnits();
  return {
    skipReason,
    commands: systemctlCommands(units),
    async run(args) {
      if (skipReason !== undefined) return undefined;
      const result = await execa(program, [...args], { reject: false, stdin: 'ignore', timeout: 90_000 });
      if (result.exitCode === 0) return undefined;
      const why =
        String(result.stderr ?? '')
          .trim()
          .split('\n')[0] || `exit code ${String(result.exitCode)}`;
      return `systemctl ${args.join(' ')} failed: ${why}`;
    },
    async isEnabled() {
      if (skipReason !== undefined) return false;
      const result = await execa(program, ['is-enabled', '--quiet', units.daemon], { reject: false, stdin: 'ignore', timeout: 30_000 });
      return result.exitCode === 0;
    },
  };
}

export interface SystemctlCommands {
  daemonReload: readonly string[];
  enableNow: readonly string[];
  restart: readonly string[];
  disableNow: readonly string[];
  /** Apart from disableNow: a node whose units predate the egress pair has none, and systemctl then disables nothing. */
  disableEgress: readonly string[];
}

export function systemctlCommands(units: NodeUnits): SystemctlCommands {
  return {
    daemonReload: ['daemon-reload'],
    // The agent sockets with the daemon: the daemon's runs go through them (agent-exec.ts), an egress agent's through
    // the egress one. Their instances need no enabling: each lives for one connection.
    enableNow: ['enable', '--now', units.agentSocket, units.egressSocket, units.daemon],
    restart: ['restart', units.agentSocket, units.egressSocket, units.daemon],
    disableNow: ['disable', '--now', units.daemon, units.agentSocket],
    disableEgress: ['disable', '--now', units.egressSocket],
  };
}

/** The default node's. */
export const SYSTEMCTL = systemctlCommands(nodeUnits());
