// An agent's state under systemd, capped (docs/operations.md "Agent isolation"): an ext4 image of its own per node
// and agent, <StateDirectory>/.images/<agent_id>.img (sparse, 0600, in a directory root's alone, 0700), made as under
// bubblewrap (./state-image.ts) and mounted by agent-exec over the agent's state directory in the unit's own mount
// namespace (PrivateMounts=), never on the host: the mount goes with the unit, and the loop device with the mount.
// agent-exec holds CAP_SYS_ADMIN for this alone; the agent, another uid, holds no capability.
//
// State an earlier release kept in the directory itself moves into the image at the agent's first run here, copied
// and then removed as the agent's uid (whose files they are: ./agent-state-dir.ts gave them to it), so root reads
// nothing of the agent's and follows none of its links.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { installCommandOf, nodePaths } from '../host/location.js';
import type { RunIdentity } from './isolation.js';
import { ensureStateImage } from './state-image.js';

const run = promisify(execFile);

/** The directory of a node's agent state images, beside the agents' directories: a name no agent id can take. */
export const STATE_IMAGES_DIR = '.images';

/** The capability bit that mounting takes (linux/capability.h). */
const CAP_SYS_ADMIN = 21;

// As the agent's uid and gid with no group, from this Node.js (the unit's system call filter refuses capset(2), which
// setpriv makes): argv is uid, gid, then the command.
const AS_AGENT = `const [uid, gid, command, ...args] = process.argv.slice(1);
const ran = require('node:child_process').spawnSync(command, args, { uid: Number(uid), gid: Number(gid), stdio: 'inherit' });
process.exit(ran.status ?? 1);`;

// $1 image, $2 lock, $3 staging mount point, $4 the agent's state directory, $5 uid, $6 gid, $7 the cap in MiB, $8
// Node.js, $9 the file that says the directory's own files moved into the image. Under the image's lock
// (./state-image.ts: a concurrent run of this agent in another unit attaches the same loop device, never a second
// one): mounted at the staging point, its root given to the agent (a uid claim given up and claimed again may be
// another number), what the directory held copied in and removed as the agent, then bound over the directory. The
// staging mount goes; the loop device stays while a mount holds it.
const MOUNT = `image=$1; lock=$2; point=$3; dir=$4; uid=$5; gid=$6; cap=$7; node=$8; moved=$9
as_agent() { "$node" -e "$AS_AGENT" "$uid" "$gid" "$@"; }
exec 9>"$lock"
flock -w 60 9 || { echo "the state image's lock $lock was not free within 60 s" >&2; exit 1; }
mount -o loop,nosuid,nodev "$image" "$point" || exit 1
chown "$uid:$gid" "$point" || exit 1
# Once per image: the directory is the agent's, 0700, which root here (no CAP_DAC_READ_SEARCH) does not list.
if [ ! -e "$moved" ]; then
  if [ -n "$(as_agent ls -A "$dir")" ]; then
    as_agent cp -a "$dir/." "$point/" || { umount "$point"; echo "the state kept in $dir does not fit in its image of $cap MiB, or could not be read: remove what it does not need" >&2; exit 2; }
    as_agent find "$dir" -mindepth 1 -delete || { umount "$point"; exit 1; }
  fi
  : > "$moved" || exit 1
fi
mount --bind "$point" "$dir" && umount "$point" && rmdir "$point"`;

export type StateMount = { mounted: true } | { mounted: false; reason: 'too_large' | 'failed'; message: string };

/**
 * The agent's state image mounted over `dir` (its state directory, made by ./agent-state-dir.ts) in this unit's
 * mount namespace. A unit without CAP_SYS_ADMIN (rendered by an earlier release, and not rendered again) runs no
 * agent: its state would go uncapped into the directory, under the image a later run mounts.
 */
export async function mountStateImage(
  parent: string,
  agentId: string,
  dir: string,
  identity: RunIdentity,
  capBytes: number,
  home: string,
): Promise<StateMount> {
  if (!holdsCapability(CAP_SYS_ADMIN)) {
    return {
      mounted: false,
      reason: 'failed',
      message: `this node's agent unit predates agents' state images, which it holds no CAP_SYS_ADMIN to mount (run, as root: ${installCommandOf(nodePaths(home).name)})`,
    };
  }
  try {
    const images = join(parent, STATE_IMAGES_DIR);
    mkdirSync(images, { recursive: true, mode: 0o700 });
    chmodSync(images, 0o700);
    const image = ensureStateImage(images, agentId, identity, capBytes);
    // Where the image is mounted first: in the run's TMPDIR (the unit's tmpfs, 1777), which the agent's uid passes to
    // copy its files in; the directory goes once the image is bound over the state directory.
    const staging = mkdtempSync(join(tmpdir(), '.state-'));
    const args = [
      image.image,
      image.lock,
      staging,
      dir,
      String(identity.uid),
      String(identity.gid),
      String(capBytes / (1024 * 1024)),
      process.execPath,
      `${image.image}.moved`,
    ];
    await run('/bin/sh', ['-c', MOUNT, 'swarm-state-mount', ...args], { env: { ...process.env, AS_AGENT } });
    return { mounted: true };
  } catch (error) {
    const failure = error as { code?: number; stderr?: string; message: string };
    const message = failure.stderr?.trim() || failure.message;
    return { mounted: false, reason: failure.code === 2 ? 'too_large' : 'failed', message };
  }
}

function holdsCapability(bit: number): boolean {
  try {
    const effective = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return effective !== undefined && (BigInt(`0x${effective}`) & (1n << BigInt(bit))) !== 0n;
  } catch {
    return false;
  }
}
