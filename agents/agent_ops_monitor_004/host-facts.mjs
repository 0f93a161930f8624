// What the host looks like right now, read from /proc, statfs and systemctl. No judgement here: findings.mjs
// compares these facts with the thresholds.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat, statfs } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';

/** A statfs that has not answered by then is reported as hung: a dead NFS server blocks it forever. */
const STATFS_TIMEOUT_MS = 5_000;
const SYSTEMCTL_TIMEOUT_MS = 5_000;
export const MAX_FILESYSTEMS = 200;
export const MAX_FAILED_UNITS = 100;

/**
 * Filesystem types whose fullness means nothing for the host's health: kernel interfaces (proc, sysfs, cgroup…),
 * device nodes (devtmpfs, devpts), automount triggers (autofs: a statfs would mount them) and read-only images
 * (squashfs snaps are always 100 % full). overlay is kept only at `/` (a container's root); elsewhere it is a
 * container's layer stack whose space is the backing filesystem's, already reported under its own mount.
 */
const PSEUDO_FSTYPES = new Set([
  'proc', 'sysfs', 'devtmpfs', 'devpts', 'cgroup', 'cgroup2', 'securityfs', 'debugfs', 'tracefs', 'pstore', 'bpf',
  'mqueue', 'hugetlbfs', 'configfs', 'fusectl', 'autofs', 'binfmt_misc', 'rpc_pipefs', 'nsfs', 'efivarfs',
  'selinuxfs', 'ramfs', 'squashfs', 'nfsd', 'fuse.gvfsd-fuse', 'fuse.portal', 'fuse.lxcfs',
]);

export async function readLoad() {
  const [one, five, fifteen] = (await readFile('/proc/loadavg', 'utf8')).trim().split(/\s+/).map(Number);
  // The load average counts runnable tasks of the whole host, so it is divided by every online CPU.
  const cpuCount = Math.max(1, cpus().length);
  const perCpu = (value) => round(value / cpuCount, 2);
  return { one, five, fifteen, cpus: cpuCount, per_cpu: { one: perCpu(one), five: perCpu(five), fifteen: perCpu(fifteen) } };
}

/** /proc/meminfo in bytes. "Used" is total minus MemAvailable, the kernel's estimate of what can be had without swapping. */
export async function readMemory() {
  const info = new Map();
  for (const line of (await readFile('/proc/meminfo', 'utf8')).split('\n')) {
    const match = /^(\w+(?:\(\w+\))?):\s+(\d+)(?: kB)?$/.exec(line.trim());
    if (match) info.set(match[1], Number(match[2]) * 1024);
  }
  const total = info.get('MemTotal') ?? 0;
  // Kernels before 3.14 have no MemAvailable: free plus page cache is the older estimate.
  const available = info.get('MemAvailable') ?? (info.get('MemFree') ?? 0) + (info.get('Buffers') ?? 0) + (info.get('Cached') ?? 0);
  const swapTotal = info.get('SwapTotal') ?? 0;
  const swapFree = info.get('SwapFree') ?? 0;
  return {
    memory: { total_bytes: total, available_bytes: available, used_bytes: total - available, used_percent: percent(total - available, total) },
    swap: { total_bytes: swapTotal, free_bytes: swapFree, used_bytes: swapTotal - swapFree, used_percent: percent(swapTotal - swapFree, swapTotal) },
  };
}

/** /proc/mounts escapes space, tab, newline and backslash in paths as octal. */
function unescapeMountField(field) {
  return field.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)));
}

export async function readMounts() {
  const text = await readFile('/proc/mounts', 'utf8');
  // A mount point mounted over again shows the last mount only, so the last line for a path wins.
  const byMountPoint = new Map();
  for (const line of text.split('\n')) {
    const [device, mountPoint, fstype, options] = line.split(' ');
    if (!device || !mountPoint || !fstype || !options) continue;
    const mount = unescapeMountField(mountPoint);
    byMountPoint.delete(mount);
    byMountPoint.set(mount, { device: unescapeMountField(device), mount, fstype, read_only: options.split(',').includes('ro') });
  }
  return [...byMountPoint.values()];
}

function isPseudo(mount) {
  return PSEUDO_FSTYPES.has(mount.fstype) || (mount.fstype === 'overlay' && mount.mount !== '/');
}

function withTimeout(promise, ms, message) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(message), { code: 'ETIMEDOUT' })), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Every real mounted filesystem with its use as df computes it: used = blocks - free, and the percentage is of
 * used + available to unprivileged users, so the root-reserved blocks count as full. Filesystems with no blocks
 * (an empty tmpfs, most pseudo filesystems) are skipped as well.
 */
export async function readFilesystems() {
  const mounts = await readMounts();
  const skipped = new Set();
  const filesystems = [];
  let hung = false;
  for (const mount of mounts) {
    if (isPseudo(mount)) {
      skipped.add(mount.fstype);
      continue;
    }
    if (filesystems.length === MAX_FILESYSTEMS) return { filesystems, skipped_fstypes: [...skipped].sort(), truncated: true, hung };
    try {
      const fs = await withTimeout(statfs(mount.mount), STATFS_TIMEOUT_MS, `statfs did not answer within ${STATFS_TIMEOUT_MS / 1000} s (a hung network mount?)`);
      if (fs.blocks === 0) {
        skipped.add(`${mount.fstype} (empty)`);
        continue;
      }
      const used = fs.blocks - fs.bfree;
      const inodesUsed = fs.files - fs.ffree;
      filesystems.push({
        ...mount,
        size_bytes: fs.blocks * fs.bsize,
        used_bytes: used * fs.bsize,
        available_bytes: fs.bavail * fs.bsize,
        used_percent: percent(used, used + fs.bavail),
        inodes_total: fs.files,
        inodes_used_percent: fs.files > 0 ? percent(inodesUsed, fs.files) : null,
      });
    } catch (error) {
      if (error.code === 'ETIMEDOUT') hung = true;
      filesystems.push({ ...mount, error: `${error.code ?? 'error'}: ${error.message}` });
    }
  }
  return { filesystems, skipped_fstypes: [...skipped].sort(), truncated: false, hung };
}

function systemctl(args) {
  return new Promise((resolve) => {
    execFile('systemctl', [...args, '--no-pager'], { timeout: SYSTEMCTL_TIMEOUT_MS, encoding: 'utf8' }, (error, stdout, stderr) => {
      // `systemctl show` exits 0 for a unit that does not exist; --failed exits 0 with or without failed units.
      resolve({ ok: !error, stdout, error: error ? (stderr.trim() || error.message) : undefined });
    });
  });
}

/** systemd facts where systemd is the init system (/run/systemd/system exists only then), `{available: false}` elsewhere. */
export async function readSystemd(serviceUnit) {
  if (!existsSync('/run/systemd/system')) return { available: false };
  const failed = await systemctl(['--failed', '--plain', '--no-legend']);
  const units = failed.ok
    ? failed.stdout.split('\n').filter((line) => line.trim() !== '').map((line) => {
        const [unit, load, active, sub, ...description] = line.trim().split(/\s+/);
        return { unit, load, active, sub, description: description.join(' ') };
      })
    : [];
  const show = await systemctl(['show', serviceUnit, '--property=LoadState,ActiveState,SubState,NRestarts']);
  const properties = Object.fromEntries(show.stdout.split('\n').filter((line) => line.includes('=')).map((line) => line.split(/=(.*)/s).slice(0, 2)));
  return {
    available: true,
    failed_units: units.slice(0, MAX_FAILED_UNITS),
    failed_units_truncated: units.length > MAX_FAILED_UNITS,
    ...(failed.ok ? {} : { failed_units_error: failed.error }),
    node_service: show.ok
      ? {
          unit: serviceUnit,
          load_state: properties.LoadState ?? 'unknown',
          active_state: properties.ActiveState ?? 'unknown',
          sub_state: properties.SubState ?? 'unknown',
          restarts: properties.NRestarts === undefined ? null : Number(properties.NRestarts),
        }
      : { unit: serviceUnit, error: show.error },
  };
}

/** The node's database and its WAL, by stat only: the agent may not read them, and need not. */
export async function readNodeDatabase(nodeHome) {
  if (!nodeHome) return null;
  const path = join(nodeHome, 'var', 'swarm-node.db');
  const sizeOf = async (file) => {
    try {
      return (await stat(file)).size;
    } catch (error) {
      if (error.code === 'ENOENT') return null;
      throw error;
    }
  };
  try {
    return { path, size_bytes: await sizeOf(path), wal_bytes: await sizeOf(`${path}-wal`) };
  } catch (error) {
    return { path, size_bytes: null, wal_bytes: null, error: `${error.code ?? 'error'}: ${error.message}` };
  }
}

function percent(part, whole) {
  return whole > 0 ? round((part / whole) * 100, 1) : 0;
}

function round(value, digits) {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
