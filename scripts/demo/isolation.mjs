// How the demo's node will keep its agents apart on this machine (docs/operations.md "Agent isolation"), found out
// before the node is installed: bubblewrap when it can make a sandbox here (the node's own `auto` then picks it, as
// on any host); else, as root, util-linux's unshare and setpriv (on every Debian and Ubuntu), which only a config
// that names it gets (`agent_isolation unshare`); else no sandbox (`agent_isolation none`). What is not bubblewrap is
// written into the demo's own scratch home's etc/config.json, as an operator would set it: an installed node's
// `auto` stays as it is, and refuses to run agents as root without bubblewrap.
//
// As root either sandbox keeps an agent's state in a file system image of its own, made with mkfs.ext4 and mounted
// over a loop device in the run's own mount namespace (src/node/runner/state-image.ts, run-sandboxed.ts): the probe
// makes and mounts a small one the same way, since a host that has the namespaces may lack e2fsprogs, or loop
// devices (a container such as systemd-nspawn's has none), and every run there would fail to start
// (docs/decisions/0036-install-without-curl-or-openssl.md).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const INSTALL = "apt-get install bubblewrap gives each run the node's bubblewrap sandbox";
/** The uid the probe's image is made for: nobody's, as the runner makes one for the agent's uid. */
const NOBODY = 65534;
/** Small, as the runner's smallest (src/node/runner/state-image.ts imageBytes: the cap plus at least 4 MiB). */
const PROBE_IMAGE_BYTES = 8 * 1024 * 1024;
/** Where each program the probe runs comes from on Debian and Ubuntu. */
const PACKAGE_OF = { 'mkfs.ext4': 'e2fsprogs', debugfs: 'e2fsprogs', truncate: 'coreutils' };

/**
 * { mode, why, config, install }: `config` is the agent_isolation to write into the node's config.json (none: leave
 * `auto`); `install` what gives the runs a sandbox. `scratch`: the demo's scratch directory, where the probe's image
 * is made and removed.
 */
export function probeIsolation(scratch) {
  const root = process.getuid?.() === 0;
  const bwrap = tried('bwrap', [...(root ? [] : ['--unshare-user']), '--ro-bind', '/', '/', '--unshare-pid', '--', '/bin/true']);
  const missing = bwrap.missing ? 'bubblewrap is not installed' : `bubblewrap cannot make a sandbox here (${bwrap.said})`;
  if (!root) {
    if (bwrap.ok) return { mode: 'bubblewrap', why: 'bubblewrap can make a sandbox here: the node picks it itself (agent_isolation auto)' };
    return {
      mode: 'none',
      config: 'none',
      why: `${missing}, and without root there is no uid of its own to give each agent: the agents run as you, unsandboxed`,
      install: INSTALL,
    };
  }
  if (!bwrap.ok) {
    // What the node's own probe tries (src/node/runner/isolation.ts unshareSupport).
    const unshare = tried('setpriv', [
      '--pdeathsig',
      'KILL',
      '--',
      'unshare',
      '--pid',
      '--kill-child',
      '--mount-proc',
      '--propagation',
      'private',
      '--ipc',
      '--uts',
      '--cgroup',
      '--net',
      '--',
      'setpriv',
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      '--no-new-privs',
      '--',
      '/bin/true',
    ]);
    if (!unshare.ok) {
      const why = unshare.missing ? "util-linux's setpriv is not installed" : `unshare cannot make namespaces here (${unshare.said})`;
      return { mode: 'none', config: 'none', why: `${missing}, and ${why}: the agents run as root, unsandboxed`, install: INSTALL };
    }
  }
  const image = stateImage(scratch);
  if (!image.ok) {
    const sandbox = bwrap.ok ? 'bubblewrap can make a sandbox here' : `${missing}; unshare can make the namespaces here`;
    return {
      mode: 'none',
      config: 'none',
      why: `${sandbox}, but not a run's state image (${image.said}): the agents run as root, unsandboxed`,
      install: image.install,
    };
  }
  if (bwrap.ok) return { mode: 'bubblewrap', why: 'bubblewrap can make a sandbox here: the node picks it itself (agent_isolation auto)' };
  return {
    mode: 'unshare',
    config: 'unshare',
    why: `${missing}; as root, util-linux's unshare and setpriv give each run namespaces and a uid of its own (no system-call filter)`,
    install: INSTALL,
  };
}

/** The one line the demo prints. */
export function isolationLine(found) {
  return `agent isolation: ${found.mode}: ${found.why}${found.install === undefined ? '' : `; ${found.install}`}`;
}

/**
 * A state image as the runner makes one (src/node/runner/state-image.ts ensureStateImage: sparse, ext4, no blocks
 * kept for root, its root directory the agent's and 0700) and mounts it (run-sandboxed.ts PRELUDE: under its lock,
 * over a loop device, nosuid and nodev, in a mount namespace of its own, so nothing stays mounted on the host).
 * { ok } or { ok: false, said, install }: what failed, and what would fix it.
 */
function stateImage(scratch) {
  const dir = mkdtempSync(join(scratch, 'isolation-probe-'));
  try {
    const image = join(dir, 'probe.img');
    const point = join(dir, 'mount');
    mkdirSync(point, { mode: 0o700 });
    const steps = [
      ['truncate', ['-s', String(PROBE_IMAGE_BYTES), image]],
      ['mkfs.ext4', ['-q', '-F', '-m', '0', '-E', `root_owner=${NOBODY}:${NOBODY}`, image]],
      ['debugfs', ['-w', '-f', '-', image], 'rmdir lost+found\nsif <2> mode 040700\n'],
    ];
    for (const [program, args, input] of steps) {
      const made = tried(program, args, input);
      if (made.ok) continue;
      return made.missing
        ? { ok: false, said: `${program} is not installed`, install: `apt-get install ${PACKAGE_OF[program]} makes the state images` }
        : { ok: false, said: `${program} failed: ${made.said}`, install: 'docs/operations.md "Agent isolation" says what a run needs' };
    }
    const mounted = tried('unshare', [
      '--mount',
      '--propagation',
      'private',
      '--',
      'flock',
      '-w',
      '60',
      join(dir, 'probe.lock'),
      'mount',
      '-o',
      'loop,nosuid,nodev',
      image,
      point,
    ]);
    if (mounted.ok) return { ok: true };
    return {
      ok: false,
      // mount(8) names the mount point first ("mount: <dir>: mount failed: …"): the probe's, of no use to the reader.
      said: `its loop mount failed: ${mounted.said.replace(/^mount: [^:]*: /, '')}`,
      install: 'a host with loop devices gives each run a sandbox (a container: give it /dev/loop-control and /dev/loop*)',
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function tried(program, args, input) {
  const result = spawnSync(program, args, {
    stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'],
    timeout: 10_000,
    ...(input === undefined ? {} : { input }),
  });
  if (result.error !== undefined) return { ok: false, missing: result.error.code === 'ENOENT', said: result.error.message };
  const said = result.stderr.toString().trim().split('\n').pop() || `exit ${result.status}`;
  return { ok: result.status === 0, missing: false, said };
}
