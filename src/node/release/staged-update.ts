// What auto-update leaves in var/updates/ (docs/operations.md "Auto-update"). The daemon runs as the service user in
// a sandbox that may write var/ only, so it cannot switch releases itself: it downloads and verifies a newer
// release, stages it here with a request, and stops; the unit's ExecStartPre (`swarm-node upgrade --pending`, as
// root) switches to it through the verified path of `swarm-node upgrade` before the daemon starts again. The other
// files carry what happened back to the daemon: the switch on probation until the new daemon ticks, why an update
// failed, and the version rolled back from (not taken again).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { releaseFileNames } from '../../lib/release-manifest.js';
import { writeFileAtomic } from '../host/files.js';
import type { ObtainedRelease } from './obtain-release.js';

/** The daemon asks for this release to be switched to at the next start; its three files sit beside it. */
export interface UpdateRequest {
  version: string;
  platform: string;
  staged_at: string;
}

/** A switch made by auto-update whose daemon has not ticked yet: at the next start it is rolled back. */
export interface UpdateProbation {
  from_version: string;
  to_version: string;
  switched_at: string;
}

/** Why the last update was not taken: the daemon logs it (update_failed) and removes the file. */
export interface UpdateFailure {
  version: string;
  reason: string;
  at: string;
}

/** A release rolled back from: auto-update does not take it again (a newer one it does). */
export interface RolledBackVersion {
  version: string;
  reason: string;
}

/** When the daemon last asked: a restart does not move the next check (a host rebooted daily still checks). */
export interface LastCheck {
  at: string;
}

const FILES = {
  request: 'request.json',
  probation: 'probation.json',
  failure: 'failure.json',
  rolledBack: 'rolled-back.json',
  checked: 'checked.json',
} as const;
type StateFile = keyof typeof FILES;
type StateOf<K extends StateFile> = {
  request: UpdateRequest;
  probation: UpdateProbation;
  failure: UpdateFailure;
  rolledBack: RolledBackVersion;
  checked: LastCheck;
}[K];

export function updatesDir(varDir: string): string {
  return join(varDir, 'updates');
}

export function readUpdateState<K extends StateFile>(varDir: string, kind: K): StateOf<K> | undefined {
  const path = join(updatesDir(varDir), FILES[kind]);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as StateOf<K>;
  } catch {
    // A torn or foreign file is no request at all: the next check stages anew.
    return undefined;
  }
}

/**
 * In a 0700 directory of the service user's, which nobody else enters. What root writes there at the start takes
 * the directory's owner (files.ts keeps it), so the daemon reads and removes it.
 */
export function writeUpdateState<K extends StateFile>(varDir: string, kind: K, state: StateOf<K>): void {
  mkdirSync(updatesDir(varDir), { recursive: true, mode: 0o700 });
  writeFileAtomic(join(updatesDir(varDir), FILES[kind]), `${JSON.stringify(state)}\n`, 0o644);
}

export function removeUpdateState(varDir: string, kind: StateFile): void {
  rmSync(join(updatesDir(varDir), FILES[kind]), { force: true });
}

/** The release files of a staged update, named as `npm run release` names them (upgrade --from reads them so). */
export function stagedArtifact(varDir: string, request: Pick<UpdateRequest, 'version' | 'platform'>): string {
  return join(updatesDir(varDir), releaseFileNames(request.version, request.platform).artifact);
}

/** A private directory (0700) in var/updates/ for a download: the files are verified there, then staged. */
export function downloadDir(varDir: string): string {
  mkdirSync(updatesDir(varDir), { recursive: true, mode: 0o700 });
  return mkdtempSync(join(updatesDir(varDir), '.download-'));
}

/** The verified release's files (moved from its download directory), then the request: never a request without them. */
export function stageUpdate(varDir: string, release: ObtainedRelease, now: Date): void {
  const { version, platform } = release.manifest;
  clearStagedUpdate(varDir, release.dir);
  const dir = updatesDir(varDir);
  // Each file complete or absent (a rename in one directory); the request comes last.
  for (const name of Object.values(releaseFileNames(version, platform)).filter((name) => !name.endsWith('.sha256')))
    renameSync(join(release.dir, name), join(dir, name));
  rmSync(release.dir, { recursive: true, force: true });
  writeUpdateState(varDir, 'request', { version, platform, staged_at: now.toISOString() });
}

/** The request, every release file and download left; probation, failure and the rolled-back version stay. */
export function clearStagedUpdate(varDir: string, keep?: string): void {
  const dir = updatesDir(varDir);
  if (!existsSync(dir)) return;
  removeUpdateState(varDir, 'request');
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (path === keep) continue;
    if (name.startsWith('swarm-node-') || name.endsWith('.tmp') || name.startsWith('.download-'))
      rmSync(path, { recursive: true, force: true });
  }
}
