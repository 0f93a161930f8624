// What an agent keeps between its runs, under bubblewrap as root (docs/operations.md "Agent isolation"): a file
// system image of its own per (home, agent), var/state/<agent_id>.img, made by the daemon (ext4, sparse, its root
// directory the agent's uid 0700), so a run can fill its state and nothing else: var/ and the node's database keep
// their room. The images are sparse: they take on disk what the agents wrote. A run mounts it in a mount namespace of its own (./run-sandboxed.ts), never on the host, so nothing
// stays mounted when the run is over, or when the daemon dies.
//
// var/state is the daemon's, 0700: no agent can make, replace or enter another agent's state there.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface StateImage {
  image: string;
  /** Taken around the mount: mount(8) then finds the image's loop device and mounts that again (util-linux ≥ 2.29). */
  lock: string;
  /** An empty directory of the daemon's, where a run's mount namespace mounts the image. */
  mountPoint: string;
}

export const STATE_DIR_MODE = 0o700;

/**
 * var/state as the daemon keeps it: 0700, holding only images and the mount point. A directory an earlier release
 * let agents make there (the uid mode's var/state/<agent_id>, 2770, in a 1733 var/state) goes.
 */
export function prepareStateDir(varDir: string): string {
  const dir = join(varDir, 'state');
  mkdirSync(dir, { recursive: true, mode: STATE_DIR_MODE });
  chmodSync(dir, STATE_DIR_MODE);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory() && entry.name !== '.mount') rmSync(join(dir, entry.name), { recursive: true, force: true });
  }
  mkdirSync(join(dir, '.mount'), { recursive: true, mode: STATE_DIR_MODE });
  return dir;
}

/**
 * Room an image has beyond its cap: a block filesystem refuses a large write whole while it still has room left (and
 * keeps some for itself), so a run's "over the cap" is more than the cap in use when it ends, and the filesystem's
 * own end, later, is the hard stop. ext4's own structures take about a tenth of a small image (its journal, inode
 * tables, the clusters it keeps back): measured, an image of 1.125 times the cap ends before the cap (255 MiB of 256),
 * one of 1.25 times it holds about 1.11 times the cap, so a full image is always over the cap.
 */
export function imageBytes(cap: number): number {
  return cap + Math.max(4 * 1024 * 1024, Math.ceil(cap / 4));
}

/** The agent's image, made now (empty, room for `cap` and imageBytes' margin, its root the agent's) when it has none. */
export function ensureStateImage(stateDir: string, agentId: string, identity: { uid: number; gid: number }, cap: number): StateImage {
  const image = join(stateDir, `${agentId}.img`);
  const made = { image, lock: join(stateDir, `${agentId}.lock`), mountPoint: join(stateDir, '.mount') };
  if (existsSync(image) && statSync(image).size > 0) return made;
  const draft = join(stateDir, `.${agentId}.img.${process.pid}`);
  try {
    execFileSync('truncate', ['-s', String(imageBytes(cap)), draft], { stdio: 'pipe' });
    // -m 0: no blocks kept for root, so a full image is full for the agent too; root_owner: the agent's, 0700.
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', `root_owner=${identity.uid}:${identity.gid}`, draft], { stdio: 'pipe' });
    execFileSync('debugfs', ['-w', '-f', '-', draft], {
      input: 'rmdir lost+found\nsif <2> mode 040700\n',
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    chmodSync(draft, 0o600);
    // link, not rename: a run of this agent in another process may have made one meanwhile, and keeps it.
    linkSync(draft, image);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
      throw new Error(`cannot make the state image ${image}: ${stderr || (error as Error).message}`);
    }
  } finally {
    rmSync(draft, { force: true });
  }
  return made;
}
