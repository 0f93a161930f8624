// docs/operations.md "Uninstall": stop and disable the unit, then remove everything install wrote; var/ (the
// database), the credentials and the config (base_url and wallet_url, no secret: a later install keeps them) stay
// unless --purge.
// --purge also takes the node out of its user's nodes at the service (DELETE /v1/swarm/nodes/self with its own
// credential, the one thing that can, and the last use of it); without the service it goes on offline and says what
// stays there. Without --purge it never calls the service: the enrollment is kept for a later install.
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { releaseKeysDir } from '../release/trusted-keys.js';
import { join, resolve } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { NODE_NAME_PATTERN } from '../../contract/node-name.js';
import { releaseAgentIds } from '../runner/agent-ids.js';
import { AGENT_USER, installLayout, NODES_DIR, type InstallLayout } from '../host/location.js';
import { readStoredCredentials } from './enrollment.js';
import { readLink, relativeLinkText, switchLink } from './links.js';
import { processesUsing, stopProcesses } from './home-processes.js';
import { applySteps, describeChange, type Change, type Step } from './plan.js';
import { removeServiceUser } from './service-user.js';
import { serviceManager, type ServiceManager } from './systemctl.js';

export interface UninstallOptions {
  layout: InstallLayout;
  purge: boolean;
  dryRun: boolean;
  log: (line: string) => void;
  /**
   * Asked before --purge deletes what a later install cannot bring back (the journal, the credentials), with
   * those paths; it throws to refuse. Absent: confirmed already (--yes).
   */
  confirmPurge?: (doomed: string[]) => Promise<void>;
  /** The service manager; by default systemctl on the host (never for a staging root). */
  services?: ServiceManager;
  /**
   * --purge: takes the node out of its user's nodes with its own credential (DELETE /v1/swarm/nodes/self). Absent:
   * the service is not called (an ephemeral node that retired itself is out already).
   */
  removeAtService?: (credential: string) => Promise<unknown>;
}

/** What --purge did at the service: the node removed from its user's nodes, or why it stays listed there. */
export interface ServiceRemoval {
  node_id: string;
  removed: boolean;
  /** Why not: the service could not be reached, or refused. */
  reason?: string;
}

export interface UninstallResult {
  root: string;
  purge: boolean;
  dry_run: boolean;
  changes: Change[];
  kept: string[];
  service: { action: 'stopped' | 'skipped'; reason?: string; warnings: string[] };
  /** --purge of an enrolled node: its removal at the service (null: nothing to remove, or not asked). */
  removed_at_service: ServiceRemoval | null;
}

export async function uninstallNode(options: UninstallOptions): Promise<UninstallResult> {
  const { layout, purge } = options;
  if (layout.onHost && process.getuid?.() !== 0 && !options.dryRun) {
    throw new SvcError('usage', 'uninstalling from this host needs root', {
      remedy: 'Run it with sudo, or name a staging directory with --root.',
    });
  }
  if (purge && !options.dryRun && options.confirmPurge !== undefined) {
    const enrolled = options.removeAtService === undefined ? undefined : enrolledNode(layout);
    const doomed = [layout.varDir, layout.credentialsFile, ...layout.agentStateDirs].filter((path) => existsSync(path));
    if (enrolled !== undefined) doomed.push(`node ${enrolled.node_id} (from your nodes at the service)`);
    if (doomed.length > 0) await options.confirmPurge(doomed);
  }
  const services = options.services ?? serviceManager({ noStart: false, onHost: layout.onHost, units: layout.units });
  const warnings: string[] = [];
  const steps: Step[] = [];
  const remove = (path: string, detail: string) => {
    if (!existsSync(path) && readLink(path) === undefined) return;
    steps.push({ change: { action: 'remove', path, detail, restart: false }, apply: () => rmSync(path, { recursive: true, force: true }) });
  };
  const removeOurLink = (path: string, detail: string) => {
    const target = readLink(path);
    if (target === undefined || target === 'not-a-link') return;
    steps.push({
      change: { action: 'remove', path, detail: `${detail} -> ${target}`, restart: false },
      apply: () => rmSync(path, { force: true }),
    });
  };

  for (const unitFile of layout.unitFiles) remove(unitFile, 'systemd unit');
  // The command link is every node's: it goes only when it is this node's, and then to another node when one is left.
  const otherNode = otherNodeCurrent(layout);
  const binLink = readLink(layout.binLink);
  if (binLink === relativeLinkText(layout.binLink, join(layout.currentLink, 'bin', 'swarm-node'))) {
    if (otherNode === undefined) removeOurLink(layout.binLink, 'command link');
    else {
      const target = relativeLinkText(layout.binLink, join(otherNode, 'bin', 'swarm-node'));
      steps.push({
        change: { action: 'update', path: layout.binLink, detail: `-> ${target} (another node of this host)`, restart: false },
        apply: () => switchLink(layout.binLink, target),
      });
    }
  }
  removeOurLink(layout.currentLink, 'current release');
  removeOurLink(layout.previousLink, 'previous release');
  remove(layout.releasesDir, 'releases');
  remove(layout.environmentFile, 'service environment');
  const kept: string[] = [];
  if (purge) {
    remove(layout.configFile, 'config');
    remove(layout.credentialsFile, 'credentials');
    // The keys install.sh --trust-key added (release/trusted-keys.ts): the operator's, gone with the rest of etc/.
    remove(releaseKeysDir(layout.etcDir), 'trusted release keys');
    remove(layout.varDir, 'database and backups');
    for (const dir of layout.agentStateDirs) remove(dir, "agents' state");
  } else {
    for (const path of [layout.configFile, layout.credentialsFile, layout.varDir, ...layout.agentStateDirs])
      if (existsSync(path)) kept.push(path);
  }
  remove(layout.uninstallScript, 'uninstall script');

  // Its daemons started by hand (and any other process with a file of var/ open): systemctl stops only the unit's.
  const running = purge && existsSync(layout.varDir) ? processesUsing(layout.varDir) : [];
  const stops: Change[] = running.map((pid) => ({
    action: 'run',
    path: `kill ${pid}`,
    detail: 'a process of this node (a daemon started by hand): SIGTERM, SIGKILL after 30 s',
    restart: false,
  }));
  const service: UninstallResult['service'] =
    services.skipReason === undefined ? { action: 'stopped', warnings } : { action: 'skipped', reason: services.skipReason, warnings };
  const enrolled = purge && options.removeAtService !== undefined ? enrolledNode(layout) : undefined;
  const result: UninstallResult = {
    root: layout.root,
    purge,
    dry_run: options.dryRun,
    changes: [...stops, ...steps.map((s) => s.change)],
    kept,
    service,
    removed_at_service: enrolled === undefined ? null : { node_id: enrolled.node_id, removed: false, reason: 'dry run' },
  };
  if (options.dryRun) return result;

  // Stopped before its files go, so the daemon never runs from a release that is being deleted.
  pushWarning(warnings, await services.run(services.commands.disableNow));
  if (layout.unitFiles.some((file) => file.endsWith(`/${layout.units.egressSocket}`) && existsSync(file)))
    pushWarning(warnings, await services.run(services.commands.disableEgress));
  if (running.length > 0) {
    for (const stop of stops) options.log(describeChange(stop));
    const { killed } = await stopProcesses(running);
    if (killed.length > 0) warnings.push(`killed ${killed.join(', ')}: still running 30 s after SIGTERM`);
  }
  // Before the credentials go: it is the node's own credential that removes it.
  if (enrolled !== undefined) result.removed_at_service = await removeAtService(enrolled, options.removeAtService!, options.log);
  await applySteps(steps, options.log);
  // Its agents' uids go back to the host with nothing of theirs left (runner/agent-ids.ts releaseAgentIds).
  if (purge) {
    for (const released of releaseAgentIds(layout.home)) {
      if (released.clean) options.log(`released agent uid ${released.uid} (${released.agent_id}): no process, key or file of it is left`);
      else warnings.push(`agent uid ${released.uid} (${released.agent_id}) keeps its claim: ${released.notes.join('; ')}`);
    }
  }
  pushWarning(warnings, await services.run(services.commands.daemonReload));
  const base = installLayout(layout.root).home;
  for (const dir of [layout.etcDir, layout.home, join(base, NODES_DIR), base, resolve(base, '..')]) removeIfEmpty(dir);
  // The users are the host's, shared by its nodes: they go with the last one.
  if (purge && layout.onHost && otherNode === undefined) {
    pushWarning(warnings, await removeServiceUser());
    pushWarning(warnings, await removeServiceUser(AGENT_USER));
  }
  return result;
}

/** The node the credentials file names, with its credential; undefined when it names none (or cannot be read). */
function enrolledNode(layout: InstallLayout): { node_id: string; credential: string } | undefined {
  try {
    const node = readStoredCredentials(layout).node;
    return node?.credential === undefined ? undefined : { node_id: node.node_id, credential: node.credential };
  } catch {
    return undefined;
  }
}

/**
 * The node leaves its user's nodes. Gone already (410) or unknown to the service (401) is as good as done. Any
 * other failure (the service unreachable, above all) does not stop the purge, which works offline: the node then
 * stays listed, offline, until its user removes it or the service does after its offline bound (14 days).
 */
async function removeAtService(
  node: { node_id: string; credential: string },
  remove: (credential: string) => Promise<unknown>,
  log: (line: string) => void,
): Promise<ServiceRemoval> {
  try {
    await remove(node.credential);
  } catch (error) {
    if (error instanceof SvcError && (error.code === 'node_removed' || error.code === 'unauthorized')) {
      log(`node ${node.node_id} is no longer one of your nodes at the service`);
      return { node_id: node.node_id, removed: true };
    }
    return { node_id: node.node_id, removed: false, reason: error instanceof Error ? error.message : String(error) };
  }
  log(`removed node ${node.node_id} from your nodes at the service`);
  return { node_id: node.node_id, removed: true };
}

/** The current link of another node installed on this host, the default node's first; undefined when none is left. */
function otherNodeCurrent(layout: InstallLayout): string | undefined {
  const base = installLayout(layout.root).home;
  const nodesDir = join(base, NODES_DIR);
  const named = existsSync(nodesDir)
    ? readdirSync(nodesDir)
        .filter((name) => NODE_NAME_PATTERN.test(name))
        .sort()
    : [];
  const candidates = [join(base, 'current'), ...named.map((name) => join(nodesDir, name, 'current'))];
  return candidates.find((link) => link !== layout.currentLink && typeof readLink(link) === 'string' && readLink(link) !== 'not-a-link');
}

/** Only directories install made and only when empty: /opt/svc goes when nothing else of ours lives there. */
function removeIfEmpty(dir: string): void {
  try {
    if (existsSync(dir) && readdirSync(dir).length === 0) rmdirSync(dir);
  } catch {
    // Not empty after all, or not ours to remove: either way it stays.
  }
}

function pushWarning(warnings: string[], warning: string | undefined): void {
  if (warning !== undefined) warnings.push(warning);
}
