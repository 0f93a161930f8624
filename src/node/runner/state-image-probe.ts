// Whether a root sandbox can keep an agent's state here (./state-image.ts): every run of bubblewrap's root mode and
// of the unshare mode makes and mounts an image of the agent's own, so a host that has the namespaces but lacks
// e2fsprogs, or loop devices (a container such as systemd-nspawn's has none), would fail every run at its start. The
// node finds that out once, before it takes a run, by making and mounting a small image the runner's own way: the
// image through ensureStateImage, the mount as run-sandboxed.ts's prelude makes it (a loop device, nosuid and nodev,
// in a mount namespace of its own, so nothing stays mounted on the host).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureStateImage } from './state-image.js';

/** The uid the probe's image is made for: nobody's, as the runner makes one for an agent's uid. */
const NOBODY = 65534;
/** The smallest image the runner makes (state-image.ts imageBytes adds its 4 MiB margin). */
const PROBE_CAP_BYTES = 1024 * 1024;
/** Where the programs a state image needs come from on Debian and Ubuntu, for the reason given. */
const PACKAGE_OF: Record<string, string> = { 'mkfs.ext4': 'e2fsprogs', debugfs: 'e2fsprogs', truncate: 'coreutils' };

/** Whether a kind of sandbox can be made here, and why not (./isolation.ts, which imports this module, says it too). */
export type SandboxSupport = { available: true } | { available: false; reason: string };

let found: SandboxSupport | undefined;

/** Tried once per process. */
export function stateImageSupport(): SandboxSupport {
  found ??= probe();
  return found;
}

function probe(): SandboxSupport {
  const dir = mkdtempSync(join(tmpdir(), 'swarm-node-image-probe-'));
  try {
    let image;
    try {
      image = ensureStateImage(dir, 'probe', { uid: NOBODY, gid: NOBODY }, PROBE_CAP_BYTES);
    } catch (error) {
      const message = (error as Error).message;
      const missing = Object.keys(PACKAGE_OF).find((tool) => message.includes(`spawnSync ${tool} ENOENT`));
      return {
        available: false,
        reason: missing
          ? `${missing} is not installed (apt-get install ${PACKAGE_OF[missing]}), and each run's state image needs it`
          : `a run's state image cannot be made here: ${message.replace(/^cannot make the state image [^:]*: /, '')}`,
      };
    }
    mkdirSync(image.mountPoint, { recursive: true, mode: 0o700 });
    const mounted = spawnSync(
      'unshare',
      ['--mount', '--propagation', 'private', '--', 'mount', '-o', 'loop,nosuid,nodev', image.image, image.mountPoint],
      { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 },
    );
    if (mounted.error === undefined && mounted.status === 0) return { available: true };
    // mount(8) names the mount point first ("mount: <dir>: …"): the probe's own, of no use to the reader.
    const said = (mounted.error?.message ?? mounted.stderr.toString().trim().split('\n').pop() ?? '').replace(/^mount: [^:]*: /, '');
    return {
      available: false,
      reason: `a run's state image cannot be mounted here (${said || `exit ${String(mounted.status)}`}): a host with loop devices runs agents as root in a sandbox (a container needs /dev/loop-control and /dev/loop*)`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
