// What a freed agent uid still holds on the host, taken away before the uid is claimed again (docs/decisions/
// 0028-freed-uids-are-scrubbed.md, docs/operations.md "Agent isolation"): the kernel keeps a uid's processes, its
// user keyrings and the files it owns outside every namespace a run had, so the next holder of the uid would find
// them, or be signalled by them. As that uid (setpriv, no group, no capability: it can reach only what is its own):
//   processes   kill(-1, SIGKILL), which the kernel sends to every process the uid may signal (its own) at once: a
//               fork under way either is among them or fails; repeated until /proc shows none left
//   keyrings    KEYCTL_CLEAR of its user and user-session keyrings (keyctl, keyutils), which outlive its processes
//   SysV IPC    every object it owns or made (ipcrm --all) in this IPC namespace
//   files       every file and directory it owns in /tmp, /var/tmp and /dev/shm, each whole (find -xdev -uid … -prune,
//               rm -rf), so a link planted there leads nowhere: rm runs as the uid, with its rights alone
// Its state images are not touched: they are the files of its home, removed with it.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Where a uid of ours may have written outside its state: the host's shared temporary directories. */
export const SHARED_TMP_DIRS = ['/tmp', '/var/tmp', '/dev/shm'];

export interface UidScrub {
  /** True when nothing of the uid was found left after it: no process, and the steps that ran said so. */
  clean: boolean;
  /** Why not, or what could not be done (keyutils missing). */
  notes: string[];
}

const SCRIPT = `kill -9 -1 2>/dev/null
if command -v keyctl >/dev/null 2>&1; then
  keyctl clear @u >/dev/null || echo "keyctl clear @u failed"
  keyctl clear @us >/dev/null 2>&1 || true
else
  echo "keyutils is not installed: its keyrings were not cleared (apt-get install keyutils)"
fi
ipcrm --all >/dev/null 2>&1 || true
for dir in "$@"; do
  [ -d "$dir" ] && find "$dir" -xdev -uid "$SCRUB_UID" -prune -exec rm -rf -- {} + 2>/dev/null
done
exit 0
`;

/** Ends every process of `uid`, clears its keyrings and SysV IPC, removes its files in `dirs`. Root only. */
export function scrubUid(uid: number, dirs: readonly string[] = SHARED_TMP_DIRS): UidScrub {
  const notes: string[] = [];
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const step = spawnSync(
      'setpriv',
      [
        `--reuid=${uid}`,
        `--regid=${uid}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--no-new-privs',
        '/bin/sh',
        '-c',
        SCRIPT,
        'swarm-scrub',
        ...dirs,
      ],
      {
        cwd: '/',
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', SCRUB_UID: String(uid) },
        encoding: 'utf8',
        timeout: 60_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    if (step.error !== undefined) return { clean: false, notes: [`setpriv: ${step.error.message}`] };
    if (step.status !== 0)
      return {
        clean: false,
        notes: [`scrubbing uid ${uid} failed: ${step.stderr.trim() || `exit ${String(step.status ?? step.signal)}`}`],
      };
    const said = step.stdout.trim();
    if (said !== '' && !notes.includes(said)) notes.push(said);
    if (processesOfUid(uid).length === 0) return { clean: !notes.some((note) => note.includes('failed')), notes };
  }
  return { clean: false, notes: [...notes, `processes of uid ${uid} are still running: ${processesOfUid(uid).join(', ')}`] };
}

/** Live processes whose real, effective or saved uid is `uid` (a zombie holds nothing and is its parent's to reap). */
export function processesOfUid(uid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      const ids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
      if (ids !== null && ids.slice(1, 4).map(Number).includes(uid)) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
