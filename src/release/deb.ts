// The .deb of a release (docs/operations.md "The .deb"), built with dpkg-deb: the same tree under
// /opt/svc/swarm-node/releases/<v>/, the rendered systemd units in /usr/lib/systemd/system, /usr/bin/swarm-node, and
// maintainer scripts that add the two service users, the node's directories and the `current` link, and start the
// service once the node is enrolled (`swarm-node install --deploy-token-file F` enrolls a host that has the
// package). Every path in the scripts is under $DPKG_ROOT, so `dpkg --root DIR --force-script-chrootless` installs
// into a scratch root.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INSTALL_PATH } from '../contract/claims.js';
import {
  AGENT_USER,
  SERVICE_USER,
  UNIT_NAME,
  AGENT_SOCKET_UNIT,
  EGRESS_SOCKET_UNIT,
  NODE_UNIT_NAMES,
  VAR_DIR_MODE,
} from '../node/host/location.js';
import { unitOfRelease } from '../node/install/unit-file.js';

const DEB_ARCH: Record<string, string> = { 'linux-x64': 'amd64', 'linux-arm64': 'arm64' };

export interface DebOptions {
  /** The staged release tree (release-tree.ts). */
  treeDir: string;
  workDir: string;
  outFile: string;
  version: string;
  platform: string;
  /** Whether the tree ships its runtime: without, the package depends on the distribution's nodejs. */
  withRuntime: boolean;
  /** The release's package.json engines (`^X.Y.Z`): without a runtime, the distribution's nodejs must match it. */
  engines: { node: string };
}

export function buildDeb(options: DebOptions): string {
  const root = join(options.workDir, 'deb-root');
  const release = join(root, INSTALL_PATH.slice(1), 'releases', options.version);
  mkdirSync(join(root, 'DEBIAN'), { recursive: true, mode: 0o755 });
  cpSync(options.treeDir, release, { recursive: true });
  const unitDir = join(root, 'usr/lib/systemd/system');
  mkdirSync(unitDir, { recursive: true, mode: 0o755 });
  for (const name of NODE_UNIT_NAMES) writeFileSync(join(unitDir, name), unitOfRelease(options.treeDir, name), { mode: 0o644 });
  mkdirSync(join(root, 'usr/bin'), { recursive: true, mode: 0o755 });
  symlinkSync(`${INSTALL_PATH}/current/bin/swarm-node`, join(root, 'usr/bin/swarm-node'));

  const arch = DEB_ARCH[options.platform];
  if (arch === undefined) throw new Error(`no Debian architecture for ${options.platform}`);
  const control = [
    'Package: svc-swarm-node',
    `Version: ${options.version}`,
    `Architecture: ${arch}`,
    'Maintainer: svc <ops@svc.example>',
    'Section: net',
    'Priority: optional',
    ...(options.withRuntime ? [] : [`Depends: ${nodejsDependency(options.engines.node)}`]),
    'Description: svc swarm-node, the bare-metal agent-node runner',
    ' Runs the agents of an svc account on this host. Enroll it with the deploy token from',
    ' activation: sudo swarm-node install --deploy-token-file FILE.',
    '',
  ].join('\n');
  writeFileSync(join(root, 'DEBIAN/control'), control, { mode: 0o644 });
  for (const [name, text] of Object.entries(maintainerScripts(options.version))) {
    writeFileSync(join(root, 'DEBIAN', name), text, { mode: 0o755 });
    chmodSync(join(root, 'DEBIAN', name), 0o755);
  }
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', root, options.outFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return options.outFile;
}

function maintainerScripts(version: string): Record<string, string> {
  const head = `#!/bin/sh
# svc-swarm-node ${version}: paths are under $DPKG_ROOT (empty on a host), so a scratch root installs too.
set -e
root="\${DPKG_ROOT:-}"
home="$root${INSTALL_PATH}"
on_host() { [ -z "$root" ] && [ -d /run/systemd/system ]; }
`;
  const postinst = `${head}
uid_of() { sed -n "s/^$1:[^:]*:\\([0-9]*\\):.*/\\1/p" "$root/etc/passwd"; }
if [ "$1" = configure ]; then
  for user in ${SERVICE_USER} ${AGENT_USER}; do
    if [ -z "$(uid_of "$user")" ]; then
      # --prefix: the users of $root/etc/passwd, not the host's (no chroot, so no shell is needed inside it).
      shell=/usr/sbin/nologin
      [ -x "$root$shell" ] || shell=/bin/false
      if [ -n "$root" ]; then
        useradd --prefix "$root" --system --user-group --no-create-home --home-dir ${INSTALL_PATH} --shell "$shell" --comment "svc swarm-node" "$user"
      else
        useradd --system --user-group --no-create-home --home-dir ${INSTALL_PATH} --shell "$shell" --comment "svc swarm-node" "$user"
      fi
    fi
  done
  mkdir -p "$home/etc" "$home/var"
  chmod 0755 "$home" "$home/etc"
  chmod ${VAR_DIR_MODE.toString(8).padStart(4, '0')} "$home/var"
  uid="$(uid_of ${SERVICE_USER})"
  chown "$uid:$(sed -n "s/^${SERVICE_USER}:[^:]*:\\([0-9]*\\):.*/\\1/p" "$root/etc/group")" "$home/var"
  current="$(readlink "$home/current" || true)"
  if [ -n "$current" ] && [ "$current" != "releases/${version}" ]; then
    ln -sfn "$current" "$home/.previous.new" && mv -Tf "$home/.previous.new" "$home/previous"
  fi
  ln -sfn "releases/${version}" "$home/.current.new" && mv -Tf "$home/.current.new" "$home/current"
  if on_host; then
    systemctl daemon-reload || true
    if [ -f "$home/etc/credentials.json" ]; then
      systemctl enable ${AGENT_SOCKET_UNIT} ${EGRESS_SOCKET_UNIT} ${UNIT_NAME} || true
      systemctl restart ${AGENT_SOCKET_UNIT} ${EGRESS_SOCKET_UNIT} ${UNIT_NAME} || true
    fi
  fi
  if [ ! -f "$home/etc/credentials.json" ]; then
    echo "svc-swarm-node: enroll this host with the deploy token from activation: sudo swarm-node install --deploy-token-file FILE" >&2
  fi
fi
`;
  const prerm = `${head}
if [ "$1" = remove ] && on_host; then
  systemctl disable --now ${UNIT_NAME} ${AGENT_SOCKET_UNIT} ${EGRESS_SOCKET_UNIT} || true
fi
`;
  const postrm = `${head}
case "$1" in
  remove | purge)
    for link in current previous; do
      if [ "$(readlink "$home/$link" || true)" = "releases/${version}" ]; then rm -f "$home/$link"; fi
    done
    ;;
esac
if [ "$1" = purge ]; then
  # The node's own state goes with purge only: its config, credentials, database and backups.
  rm -rf "$home/etc" "$home/var" "$home/current" "$home/previous" "$home/uninstall.sh"
  rmdir "$home/releases" "$home" "$root/opt/svc" 2>/dev/null || true
fi
if on_host; then systemctl daemon-reload || true; fi
`;
  return { postinst, prerm, postrm };
}

/** `^20.20.2` → `nodejs (>= 20.20.2), nodejs (<< 21)`: the major the addon is built for, at least that version. */
function nodejsDependency(range: string): string {
  const version = range.replace(/^\^/, '');
  return `nodejs (>= ${version}), nodejs (<< ${Number(version.split('.')[0]) + 1})`;
}
