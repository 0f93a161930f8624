// The demo's isolation probe (scripts/demo/isolation.mjs, docs/decisions/0036-install-without-curl-or-openssl.md):
// as root, the mode it picks is one whose runs start here. The unshare mode (and bubblewrap's, as root) keeps an
// agent's state in an ext4 image mounted over a loop device (src/node/runner/state-image.ts, run-sandboxed.ts), so
// the probe makes and mounts one as the runner does: on a host without e2fsprogs, or without loop devices (a
// systemd-nspawn container's /dev has none), it falls to `none` and says why in its one line. Before, it tried the
// namespaces and the uid switch only, picked unshare there, and every run of the demo's node failed to start.
import { execa } from 'execa';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pathWithout } from '../helpers/path-without.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { WITHOUT_BUBBLEWRAP } from '../node/sandbox-support.js';

const asRoot = process.getuid?.() === 0;

/**
 * /dev as systemd-nspawn makes it (a tmpfs with the basic devices, no loop devices), in the mount namespace
 * WITHOUT_BUBBLEWRAP made: an argv prefix, as that one is.
 */
const DEV_WITHOUT_LOOP = [
  'sh',
  '-c',
  'mount -t tmpfs -o mode=0755,nosuid swarm-dev /dev && cd /dev && mknod -m 0666 null c 1 3 && mknod -m 0666 zero c 1 5 && ' +
    'mknod -m 0666 full c 1 7 && mknod -m 0666 random c 1 8 && mknod -m 0666 urandom c 1 9 && mknod -m 0666 tty c 5 0 && ' +
    'ln -s /proc/self/fd fd && mkdir shm pts && cd / && exec "$@"',
  'sh',
];

interface Found {
  mode: string;
  why: string;
  config?: string;
  install?: string;
}

/** probeIsolation in a Node of its own, run in `wrapper` with `path`, and what it leaves in its scratch directory. */
async function probe(
  wrapper: readonly string[],
  path = process.env.PATH ?? '/usr/bin:/bin',
): Promise<{ found: Found; line: string; left: string[] }> {
  const scratch = tempDir('probe-scratch-');
  const module = join(REPO_ROOT, 'scripts', 'demo', 'isolation.mjs');
  const script = `import { isolationLine, probeIsolation } from ${JSON.stringify(module)};
const found = probeIsolation(process.argv[1]);
console.log(JSON.stringify({ found, line: isolationLine(found) }));`;
  const argv = [...wrapper, process.execPath, '--input-type=module', '-e', script, scratch];
  const result = await execa(argv[0]!, argv.slice(1), { env: { PATH: path }, extendEnv: false, reject: false, timeout: 60_000 });
  expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
  return { ...(JSON.parse(result.stdout) as { found: Found; line: string }), left: existsSync(scratch) ? readdirSync(scratch) : [] };
}

describe.skipIf(!asRoot)('the demo isolation probe, as root without bubblewrap', { timeout: 90_000 }, () => {
  it('where a state image can be made and mounted: unshare, and the image is gone after', async () => {
    const { found, line, left } = await probe(WITHOUT_BUBBLEWRAP);
    expect(found.mode, line).toBe('unshare');
    expect(found.config).toBe('unshare');
    expect(left).toEqual([]);
  });

  it('without e2fsprogs (no mkfs.ext4): none, naming what is missing and its package', async () => {
    const { found, line, left } = await probe(WITHOUT_BUBBLEWRAP, pathWithout(['mkfs.ext4']));
    expect(found.mode).toBe('none');
    expect(found.config).toBe('none');
    expect(line).toMatch(
      /^agent isolation: none: bubblewrap (is not installed|cannot make a sandbox here \(exit 1\)); unshare can make the namespaces here, but not a run's state image \(mkfs\.ext4 is not installed\): the agents run as root, unsandboxed; apt-get install e2fsprogs makes the state images$/,
    );
    expect(left).toEqual([]);
  });

  it('without loop devices (a /dev as systemd-nspawn makes it): none, saying the loop mount failed', async () => {
    const { found, line, left } = await probe([...WITHOUT_BUBBLEWRAP, ...DEV_WITHOUT_LOOP]);
    expect(found.mode).toBe('none');
    expect(found.config).toBe('none');
    expect(line).toMatch(
      /^agent isolation: none: bubblewrap (is not installed|cannot make a sandbox here \(exit 1\)); unshare can make the namespaces here, but not a run's state image \(its loop mount failed: .+\): the agents run as root, unsandboxed; a host with loop devices gives each run a sandbox \(a container: give it \/dev\/loop-control and \/dev\/loop\*\)$/,
    );
    expect(left).toEqual([]);
  });
});
