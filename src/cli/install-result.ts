// What install and upgrade share: the deps they give installPackage (from the command's context), and how the
// result reads.
import type { ChalkInstance } from 'chalk';
import type { InstallResult } from '../node/install/install-node.js';
import type { InstallPackageDeps } from '../node/install/install-package.js';
import { describeChange } from '../node/install/plan.js';
import type { InstallLayout } from '../node/host/location.js';
import type { CommandContext } from './context.js';

/** What installPackage is given, shared by install and upgrade. */
export function installDeps(ctx: CommandContext, layout: InstallLayout): InstallPackageDeps {
  return {
    layout,
    config: () => ctx.config(),
    client: () => ctx.client(),
    env: ctx.env,
    clock: ctx.clock,
    log: (line) => ctx.output.info(line),
  };
}

/** `daemonStarted`: upgrade started the daemon itself (started by hand, without systemd): no service to start. */
export function renderInstall(ctx: CommandContext, result: InstallResult, verb: string, daemonStarted = false): void {
  for (const warning of result.service.warnings) ctx.output.warn(warning);
  if (result.service.action === 'skipped' && !daemonStarted) {
    const start = `systemctl daemon-reload && systemctl enable --now ${ctx.layout().units.daemon.replace(/\.service$/, '')}`;
    ctx.output.warn(
      result.dry_run
        ? `the service would not be started: ${result.service.reason}`
        : `not starting the service: ${result.service.reason}; on the host, start it with: ${start}`,
    );
  }
  ctx.output.result(result, (data, style) => humanInstall(data, style, verb));
}

function humanInstall(result: InstallResult, style: ChalkInstance, verb: string): string {
  const where = result.root === '/' ? '' : ` under ${result.root}`;
  if (result.changes.length === 0) return `nothing to change: swarm-node ${result.version} is installed${where} as node ${result.node_id}`;
  const lines = result.dry_run ? result.changes.map(describeChange) : [];
  const node = result.node_id === null ? (result.enrolled ? 'enrolling with the deploy token first' : '') : `node ${result.node_id}`;
  lines.push(
    style.green(
      `${verb} swarm-node ${result.version}${where}${node === '' ? '' : `, ${node}`}: ${result.changes.length} change(s); service ${result.service.action}`,
    ),
  );
  if (result.database_backup !== null) lines.push(`database backed up to ${result.database_backup}`);
  return lines.join('\n');
}
