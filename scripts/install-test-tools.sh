#!/bin/sh
# The system tools the test suite uses, in one place (README "Two commands"): installs those missing with apt-get on
# Debian 12 and Ubuntu 24.04, amd64 and arm64, and says what it installs. Idempotent: a second run installs nothing.
#
#   sudo scripts/install-test-tools.sh          install what is missing
#   scripts/install-test-tools.sh --check       list what is missing and exit 1 if anything is (no root needed;
#                                               npm test runs this first, so a machine without them stops at once)
#   scripts/install-test-tools.sh --faketime    print the path of libfaketime for this machine's architecture
set -eu

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
}

# The Debian multiarch triplet of this machine: where libfaketime lives.
multiarch() {
  case "$(uname -m)" in
    x86_64 | amd64) echo x86_64-linux-gnu ;;
    aarch64 | arm64) echo aarch64-linux-gnu ;;
    *) echo "$(uname -m)-linux-gnu" ;;
  esac
}

faketime_library() {
  echo "/usr/lib/$(multiarch)/faketime/libfaketime.so.1"
}

# Ubuntu's chromium package is a shim that installs a snap, which does not work without snapd (containers, CI).
on_ubuntu() {
  [ -r /etc/os-release ] && grep -q '^ID=ubuntu' /etc/os-release
}

has() { command -v "$1" >/dev/null 2>&1; }

# What each test needs, as "package: the check that it is there". Keep in step with the tests that use them:
# ShellCheck (the scripts), bandit (the dev review's Python analyzer), dnsmasq (the outreach agent's MX tests),
# systemd-analyze (the units), chromium (the console in a browser), openssl, curl, binutils, dpkg, python3, make,
# g++ (the release tests build the Node a release ships, and its addon), bubblewrap, e2fsprogs, util-linux (agent
# isolation), systemd-container and debootstrap (the systemd mode booted in nspawn), faketime (clocks moved),
# postgresql (the API suite on PostgreSQL), keyutils (the keyring checks of the hostile agents).
missing_packages() {
  has shellcheck || echo shellcheck
  has bandit || echo python3-bandit
  has dnsmasq || echo dnsmasq-base
  has systemd-analyze || echo systemd
  if ! on_ubuntu; then has chromium || echo chromium; fi
  has openssl || echo openssl
  has curl || echo curl
  has strip || echo binutils
  has dpkg-deb || echo dpkg
  has python3 || echo python3
  has make || echo make
  has g++ || echo g++
  has bwrap || echo bubblewrap
  { has mkfs.ext4 && has debugfs; } || echo e2fsprogs
  { has flock && has setpriv && has nsenter && has unshare; } || echo util-linux
  has systemd-nspawn || echo systemd-container
  has debootstrap || echo debootstrap
  [ -e "$(faketime_library)" ] || echo faketime
  { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || has initdb; } || echo postgresql
  has keyctl || echo keyutils
  # Regenerates the committed system-call filters and compares them (never needed by npm ci).
  # Debian's own python3, where apt installs the module (a python3 of pyenv's earlier on PATH has no such module).
  /usr/bin/python3 -c 'import seccomp' >/dev/null 2>&1 || echo python3-seccomp
}

case "${1:-}" in
  -h | --help)
    usage
    exit 0
    ;;
  --faketime)
    faketime_library
    exit 0
    ;;
  --check)
    need="$(missing_packages | tr '\n' ' ' | sed 's/ $//')"
    if [ -n "$need" ]; then
      echo "the test suite needs tools this machine lacks (packages: $need)" >&2
      echo "install them with: sudo scripts/install-test-tools.sh" >&2
      exit 1
    fi
    if on_ubuntu && ! has chromium; then echo "note: the browser tests need Debian's chromium (Ubuntu's is a snap); they are skipped here" >&2; fi
    exit 0
    ;;
  '') ;;
  *)
    echo "unknown option: $1 (see --help)" >&2
    exit 2
    ;;
esac

need="$(missing_packages | tr '\n' ' ' | sed 's/ $//')"
if [ -z "$need" ]; then
  echo "every test tool is installed"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || {
  echo "installing packages needs root: sudo $0" >&2
  exit 1
}
has apt-get || {
  echo "this script installs with apt-get (Debian 12, Ubuntu 24.04); install by hand: $need" >&2
  exit 1
}
echo "installing: $need"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # one word a package
apt-get install -y -qq --no-install-recommends $need >/dev/null
still="$(missing_packages | tr '\n' ' ' | sed 's/ $//')"
if [ -n "$still" ]; then
  echo "installed, and still missing: $still" >&2
  exit 1
fi
echo "installed: $need"
