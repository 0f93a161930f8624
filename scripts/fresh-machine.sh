#!/usr/bin/env bash
# The README's two lines on a fresh machine (README "Two commands"): builds a Debian 12 (bookworm) root with
# debootstrap --variant=minbase, adds only Node 20 and npm (the npm registry's node-linux-<arch> package, as a release
# gets its runtime, and its npm package), puts a clean clone of the repository in it (never node_modules or dist),
# and runs the lines as typed in systemd-nspawn, once as root and once as an unprivileged user made in the root.
#
#   sudo scripts/fresh-machine.sh [--commit REV] [--cache DIR] [--keep] [--node RANGE] [--npm VERSION] [--include PKGS]
#
#   --commit REV    what to clone (default HEAD of the repository this script is in)
#   --cache DIR     keep the debootstrap root with Node and npm (and the stand-in addon below) in DIR between runs
#   --keep          leave the work directory (the roots of both cases) in place and print where it is
#   --node RANGE    the node-linux-<arch> version range (default 20: the newest Node 20 on the registry)
#   --npm VERSION   the npm package's version (default 10.8.2, the npm that Node 20's own release ships)
#   --include PKGS  Debian packages to add (comma-separated): to find what else a failing step needs; the machine
#                   is then not fresh, and the summary says so and fails
#
# Per case it runs `npm ci && npm run demo`, then `npm test` alone, which must stop within seconds naming the
# missing tools and `sudo scripts/install-test-tools.sh` (the full test line would install some twenty apt packages,
# Chromium and PostgreSQL among them, and run the whole suite: not what a fresh machine is checked for).
# Exits 0 only when every case passes; prints a summary with times.
set -euo pipefail

# One function called on the last line: bash reads it whole before running any of it.
main() {

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
COMMIT=HEAD
CACHE=''
KEEP=0
NODE_RANGE=20
NPM_VERSION=10.8.2
# The whole of one case (npm ci, the demo, npm test); the demo's own promise is under a minute.
CASE_TIMEOUT=1800
# "Stops within seconds": generous for a loaded 2-core machine, far below the suite's minutes.
TEST_STOP_SECONDS=60
USER_NAME=fresh
INCLUDE=''

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --commit) COMMIT="${2:?--commit needs a revision}"; shift 2 ;;
    --cache) CACHE="${2:?--cache needs a directory}"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --node) NODE_RANGE="${2:?--node needs a version range}"; shift 2 ;;
    --npm) NPM_VERSION="${2:?--npm needs a version}"; shift 2 ;;
    --include) INCLUDE="${2:?--include needs packages}"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
done

START=$SECONDS
step() { printf '\n==> [%4ds] %s\n' "$((SECONDS - START))" "$*"; }
die() { printf 'fresh-machine: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "debootstrap and systemd-nspawn need root: sudo $0"
for tool in debootstrap systemd-nspawn git npm node tar; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is missing here (apt-get install debootstrap systemd-container git nodejs npm)"
done

case "$(uname -m)" in
  x86_64 | amd64) NODE_ARCH=x64 DEB_ARCH=amd64 ;;
  aarch64 | arm64) NODE_ARCH=arm64 DEB_ARCH=arm64 ;;
  *) die "no node-linux package for $(uname -m) (x86_64 and aarch64 only)" ;;
esac

REPO="$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel)"
SHA="$(git -C "$REPO" rev-parse --verify "$COMMIT^{commit}")" || die "no commit $COMMIT in $REPO"
# The mirror apt already uses here (docs: /etc/apt/sources.list.d/debian.sources), else Debian's own.
MIRROR="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

WORK="$(mktemp -d /var/tmp/fresh-machine.XXXXXX)"
STANDIN_PID=''
# shellcheck disable=SC2317 # run by the trap
cleanup() {
  if [ -n "$STANDIN_PID" ]; then kill "$STANDIN_PID" 2>/dev/null || true; fi
  if [ "$KEEP" -eq 1 ]; then
    echo "kept: $WORK"
  else
    rm -rf --one-file-system "$WORK"
  fi
}
trap cleanup EXIT
CACHE="${CACHE:-$WORK/cache}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"

step "resolving node-linux-$NODE_ARCH@$NODE_RANGE and npm@$NPM_VERSION on the npm registry"
# The registry lists them in publishing order, not by version: the highest by sort -V.
NODE_VERSION="$(npm view "node-linux-$NODE_ARCH@$NODE_RANGE" version --json | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log([].concat(JSON.parse(s)).join("\n")));' |
  sort -V | tail -1)"
[ -n "$NODE_VERSION" ] || die "the registry has no node-linux-$NODE_ARCH@$NODE_RANGE"
echo "node-linux-$NODE_ARCH@$NODE_VERSION, npm@$NPM_VERSION, repository $REPO at $SHA"

# --- The base root: debootstrap minbase, then Node and npm; cached whole once it is complete. ----------------------
BASE="$CACHE/bookworm-minbase-$DEB_ARCH-node-$NODE_VERSION-npm-$NPM_VERSION${INCLUDE:+-with-${INCLUDE//,/-}}"
if [ -e "$BASE/.complete" ]; then
  step "base root from the cache: $BASE"
else
  rm -rf --one-file-system "$BASE" "$BASE.partial"
  step "debootstrap --variant=minbase bookworm from $MIRROR (about a minute)"
  debootstrap --variant=minbase --arch="$DEB_ARCH" ${INCLUDE:+--include="$INCLUDE"} bookworm "$BASE.partial" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
    { tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
  step "adding Node $NODE_VERSION (node-linux-$NODE_ARCH) and npm $NPM_VERSION from the npm registry"
  mkdir -p "$WORK/pkgs"
  # npm pack checks each tarball against the registry's dist.integrity as it downloads it.
  (cd "$WORK/pkgs" && npm pack --silent "node-linux-$NODE_ARCH@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  usr="$BASE.partial/usr/local"
  tar -xzf "$WORK/pkgs/node-linux-$NODE_ARCH-$NODE_VERSION.tgz" -C "$WORK/pkgs" --no-same-owner package/bin/node package/include
  install -m 0755 "$WORK/pkgs/package/bin/node" "$usr/bin/node"
  mkdir -p "$usr/include" "$usr/lib/node_modules/npm"
  cp -r "$WORK/pkgs/package/include/node" "$usr/include/node"
  # The layout of Node's own release: lib/node_modules/npm, bin/npm and bin/npx linking to its scripts.
  tar -xzf "$WORK/pkgs/npm-$NPM_VERSION.tgz" -C "$usr/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$usr/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$usr/bin/npx"
  rm -rf "$WORK/pkgs"
  touch "$BASE.partial/.complete"
  mv "$BASE.partial" "$BASE"
fi

# --- better-sqlite3's prebuilt addon. ------------------------------------------------------------------------------
# On a machine on the internet, better-sqlite3's install (prebuild-install) downloads its prebuilt addon from the
# project's GitHub releases. This workplace reaches only the package registries, so where GitHub does not answer,
# a stand-in on 127.0.0.1 serves the same asset, built here once with node-gyp against the runtime's headers, and
# the container (which shares this host's network) is pointed at it with prebuild-install's documented mirror
# variable. Nothing else the container installs comes from anywhere but the npm registry.
SQLITE_VERSION="$(git -C "$REPO" show "$SHA:package-lock.json" | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).packages["node_modules/better-sqlite3"].version));')"
ABI="$(chroot "$BASE" /usr/bin/env -i /usr/local/bin/node -p process.versions.modules)"
ASSET="better-sqlite3-v$SQLITE_VERSION-node-v$ABI-linux-$NODE_ARCH.tar.gz"
STANDIN_ENV=()
if node -e 'require("net").connect({ host: "github.com", port: 443, timeout: 5000 }).on("connect", () => process.exit(0)).on("timeout", () => process.exit(1)).on("error", () => process.exit(1))' 2>/dev/null; then
  step "github.com answers: better-sqlite3's prebuilt addon comes from its release, as on any machine"
else
  ADDONS="$CACHE/prebuilt/v$SQLITE_VERSION"
  if [ ! -e "$ADDONS/$ASSET" ]; then
    step "github.com does not answer here: building $ASSET once with node-gyp on this host (the asset prebuild-install would download)"
    mkdir -p "$WORK/addon" "$ADDONS"
    (cd "$WORK/addon" && npm pack --silent "better-sqlite3@$SQLITE_VERSION" >/dev/null && tar -xzf "better-sqlite3-$SQLITE_VERSION.tgz")
    gyp="$(npm prefix -g)/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
    [ -e "$gyp" ] || gyp="$REPO/node_modules/node-gyp/bin/node-gyp.js"
    (cd "$WORK/addon/package" && env -u npm_config_nodedir node "$gyp" rebuild --release --nodedir="$BASE/usr/local" --jobs=max \
      >"$WORK/addon/build.log" 2>&1) || { tail -20 "$WORK/addon/build.log" >&2; die "node-gyp could not build better-sqlite3 (python3, make, g++)"; }
    tar -czf "$ADDONS/$ASSET.partial" -C "$WORK/addon/package" build/Release/better_sqlite3.node
    mv "$ADDONS/$ASSET.partial" "$ADDONS/$ASSET"
    rm -rf "$WORK/addon"
  fi
  step "stand-in for GitHub's release downloads on 127.0.0.1, serving $ASSET"
  # shellcheck disable=SC2016 # JavaScript, not the shell's
  node -e '
    const http = require("http"), fs = require("fs"), path = require("path");
    const root = process.argv[1];
    const server = http.createServer((req, res) => {
      const file = path.join(root, path.normalize(decodeURIComponent(req.url.split("?")[0])).replace(/^(\.\.[\/\\])+/, ""));
      fs.readFile(file, (err, data) => {
        console.error(`stand-in: GET ${req.url} ${err ? 404 : 200}`);
        if (err) { res.writeHead(404); res.end(); } else { res.writeHead(200); res.end(data); }
      });
    });
    server.listen(0, "127.0.0.1", () => fs.writeFileSync(process.argv[2], String(server.address().port)));
  ' "$CACHE/prebuilt" "$WORK/standin.port" 2>"$WORK/standin.log" &
  STANDIN_PID=$!
  for _ in $(seq 100); do [ -s "$WORK/standin.port" ] && break; sleep 0.1; done
  [ -s "$WORK/standin.port" ] || die "the stand-in did not start: $(cat "$WORK/standin.log")"
  STANDIN_ENV=(--setenv="npm_config_better_sqlite3_binary_host=http://127.0.0.1:$(cat "$WORK/standin.port")")
fi

# --- The network's CA. ---------------------------------------------------------------------------------------------
# Node trusts the registry with the CAs built into it: a fresh machine on the internet needs no CA package. Where
# this host reaches the registry through a TLS-inspecting proxy, its own Node is told of that proxy's CA (npm's
# cafile, else NODE_EXTRA_CA_CERTS); without it npm in the container fails SELF_SIGNED_CERT_IN_CHAIN. That file
# goes into each case's root and NODE_EXTRA_CA_CERTS names it there: part of this network, not of the machine.
HOST_CA="$(npm config get cafile 2>/dev/null || true)"
case "$HOST_CA" in null | undefined | '') HOST_CA="${NODE_EXTRA_CA_CERTS:-}" ;; esac
CA_ENV=()
if [ -n "$HOST_CA" ] && [ -r "$HOST_CA" ]; then
  step "this host reaches the registry trusting $HOST_CA (a TLS-inspecting proxy's CA): the containers trust it too"
  CA_ENV=(--setenv=NODE_EXTRA_CA_CERTS=/usr/local/share/fresh-machine/network-ca.crt)
fi

# --- The cases. ----------------------------------------------------------------------------------------------------
NAMES=()
RESULTS=()
TIMES=()
record() { NAMES+=("$1"); RESULTS+=("$2"); TIMES+=("$3"); }

# In the container: the README's lines with each one's time, then npm test alone, which must stop quickly.
# shellcheck disable=SC2016 # expanded in the container
INSIDE='set -u
cd "$1"
echo "$(id -un) in $(pwd), $(node -v), npm $(npm -v), on $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "registry: $(npm ping 2>&1 | tail -1)"
echo "\$ npm ci && npm run demo"
t=$(date +%s)
npm ci
rc=$?
echo "@@ npm-ci rc=$rc seconds=$(($(date +%s) - t))"
[ "$rc" -eq 0 ] || exit 0
t=$(date +%s)
npm run demo
rc=$?
echo "@@ demo rc=$rc seconds=$(($(date +%s) - t))"
# The test line is a line of its own: it runs whatever the demo did.
echo "\$ npm test"
t=$(date +%s)
npm test >/tmp/npm-test.log 2>&1
rc=$?
cat /tmp/npm-test.log
echo "@@ npm-test rc=$rc seconds=$(($(date +%s) - t))"
if grep -q "install them with: sudo scripts/install-test-tools.sh" /tmp/npm-test.log; then echo "@@ npm-test-names-command yes"; fi
'

run_case() { # name user home
  local name="$1" user="$2" home="$3" root="$WORK/$1" log="$WORK/$1.log" began=$SECONDS
  step "case $name: a copy of the base root, a clone of $SHA in $home/swarm-node"
  cp -a "$BASE" "$root"
  if [ "${#CA_ENV[@]}" -gt 0 ]; then install -D -m 0644 "$HOST_CA" "$root/usr/local/share/fresh-machine/network-ca.crt"; fi
  if [ "$user" != root ]; then
    chroot "$root" useradd --create-home --shell /bin/bash "$user"
  fi
  git clone --quiet --no-checkout "$REPO" "$root$home/swarm-node"
  git -C "$root$home/swarm-node" -c advice.detachedHead=false checkout --quiet --detach "$SHA"
  chroot "$root" chown -R "$user:" "$home/swarm-node"
  # The PATH a login gives each on Debian (login.defs ENV_SUPATH, ENV_PATH): root's has the sbin directories.
  local path=/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games
  [ "$user" != root ] || path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  step "case $name: systemd-nspawn --user=$user: npm ci && npm run demo, then npm test"
  # --register=no --keep-unit: no host D-Bus here. The host's network is shared (no --private-network), and its
  # resolv.conf copied, so npm reaches the registry as the host does. --as-pid2: a stub init reaps the demo's daemons.
  set +e
  timeout "$CASE_TIMEOUT" systemd-nspawn --quiet --register=no --keep-unit --as-pid2 -D "$root" --machine="fresh-$name-$$" \
    --resolv-conf=copy-host --timezone=off --user="$user" --chdir="$home/swarm-node" \
    --setenv=HOME="$home" --setenv=PATH="$path" "${STANDIN_ENV[@]}" "${CA_ENV[@]}" \
    /bin/sh -c "$INSIDE" sh "$home/swarm-node" 2>&1 | tee "$log"
  local nspawn=${PIPESTATUS[0]}
  set -e
  # result NAME: "rc seconds" from the container's @@ lines (the spinner may leave codes before them).
  result() { sed -n "s/.*@@ $1 rc=\([0-9]*\) seconds=\([0-9]*\).*/\1 \2/p" "$log" | tail -1; }
  local ci demo test why
  ci="$(result npm-ci)" demo="$(result demo)" test="$(result npm-test)"
  if [ -z "$ci" ]; then
    record "$name: npm ci && npm run demo" "FAIL (nspawn exit $nspawn before npm ci ended)" "$((SECONDS - began))s"
  elif [ "${ci% *}" -ne 0 ]; then
    record "$name: npm ci && npm run demo" "FAIL (npm ci exit ${ci% *})" "${ci#* }s"
  elif [ -z "$demo" ]; then
    record "$name: npm ci && npm run demo" "FAIL (nspawn exit $nspawn in the demo)" "$((SECONDS - began))s"
  elif [ "${demo% *}" -ne 0 ]; then
    why="$(sed -n 's/.*demo failed at \(step [0-9]*\/[0-9]*\).*/\1/p' "$log" | head -1)"
    record "$name: npm ci && npm run demo" "FAIL (demo exit ${demo% *}${why:+ at $why})" "ci ${ci#* }s + demo ${demo#* }s"
  else
    record "$name: npm ci && npm run demo" PASS "ci ${ci#* }s + demo ${demo#* }s"
  fi
  if [ -z "$test" ]; then
    record "$name: npm test stops naming the command" "NOT RUN (npm ci failed)" -
  elif [ "${test% *}" -ne 0 ] && [ "${test#* }" -le "$TEST_STOP_SECONDS" ] && grep -q '@@ npm-test-names-command yes' "$log"; then
    record "$name: npm test stops naming the command" PASS "${test#* }s"
  else
    record "$name: npm test stops naming the command" "FAIL (exit ${test% *} after ${test#* }s, bound ${TEST_STOP_SECONDS}s)" "${test#* }s"
  fi
}

run_case root root /root
run_case user "$USER_NAME" "/home/$USER_NAME"

step "summary (Debian 12 minbase $DEB_ARCH, Node $NODE_VERSION, npm $NPM_VERSION, commit ${SHA:0:12}, systemd-nspawn)"
failed=0
if [ -n "$INCLUDE" ]; then
  printf '  %-42s %-36s %s\n' "not a fresh machine: --include $INCLUDE" FAIL -
  failed=1
fi
for i in "${!NAMES[@]}"; do
  printf '  %-42s %-36s %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${TIMES[$i]}"
  [ "${RESULTS[$i]}" = PASS ] || failed=1
done
printf '  total %ds\n' "$((SECONDS - START))"
exit "$failed"
}

main "$@"
