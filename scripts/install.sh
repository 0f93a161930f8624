#!/usr/bin/env bash
# svc swarm-node host bootstrap (issue 4 §3). Checks the host, then installs the package this script came with (or
# --from DIR) as a release under /opt/svc/swarm-node by running its own `swarm-node install`, which enrolls with
# the deploy token first and writes nothing when the token is refused.
#
#   SVC_DEPLOY_TOKEN=... sudo --preserve-env=SVC_DEPLOY_TOKEN ./scripts/install.sh
#   sudo ./scripts/install.sh --token-file ./deploy-token
#
# The deploy token comes from SVC_DEPLOY_TOKEN or --token-file, never from an argument (other users see argv in
# ps). Proxy variables (http_proxy, https_proxy, no_proxy, either case) reach the service's environment.
# Everything is inside main(), called on the last line: a half-downloaded script defines functions and runs nothing.
set -euo pipefail

PROXY_VARIABLES=(http_proxy HTTP_PROXY https_proxy HTTPS_PROXY no_proxy NO_PROXY)
# Where systemd looks for `node` when ExecStart runs the release's `#!/usr/bin/env node` shim.
SYSTEMD_PATH_DIRS=(/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin)

say() { printf '%s\n' "$*" >&2; }
warn() { say "warning: $*"; }
# die MESSAGE [EXIT_CODE]: 2 for usage errors, 1 otherwise.
die() {
  say "install.sh: $1"
  exit "${2:-1}"
}

usage() {
  cat >&2 <<'EOF'
usage: install.sh [--token-file FILE] [--root DIR] [--no-start] [--from DIR] [--base-url URL] [--dry-run]

  --token-file FILE  the deploy token from activation (or set SVC_DEPLOY_TOKEN); not needed to re-run
  --root DIR         install under a staging directory instead of / (no root needed, no systemctl)
  --no-start         do not enable and start the service
  --from DIR         the unpacked swarm-node package to install (default: the one this script is in)
  --base-url URL     the service base URL (or set SVC_BASE_URL)
  --dry-run          print every change and make none
EOF
}

check_linux() {
  local kernel
  kernel="$(uname -s)"
  [ "$kernel" = "Linux" ] || die "swarm-node runs on Linux bare-metal hosts; this is $kernel"
}

check_root() {
  local root="$1"
  if [ -z "$root" ] && [ "$(id -u)" -ne 0 ]; then
    die "installing on this host needs root: sudo --preserve-env=SVC_DEPLOY_TOKEN $0 (or --root DIR to stage)"
  fi
}

# The oldest Node.js the package runs on, as "MAJOR MINOR", from its package.json engines.node (">=X.Y.Z"): the one
# source that bin/swarm-node.js and doctor read too. Read with bash alone, since the node on PATH may be too old.
required_node() {
  local manifest="$1" text pattern
  text="$(tr -d '\n' < "$manifest")"
  pattern='"engines"[[:space:]]*:[[:space:]]*[{][^}]*"node"[[:space:]]*:[[:space:]]*">=[[:space:]]*([0-9]+)[.]([0-9]+)'
  [[ $text =~ $pattern ]] || die "$manifest has no engines.node (\">=X.Y.Z\") to check Node.js against"
  printf '%s %s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
}

# Prints the path of a Node.js at least as new as the package's engines.node, or dies saying what is missing.
check_node() {
  local manifest="$1" required need_major need_minor node version major rest minor
  # A subshell: its die ends only itself, so its failure ends this one too.
  required="$(required_node "$manifest")" || exit 1
  need_major="${required% *}"
  need_minor="${required#* }"
  node="$(command -v node || true)"
  [ -n "$node" ] || die "Node.js ${need_major}.${need_minor} or newer is needed and node is not on PATH"
  version="$("$node" -v)"
  version="${version#v}"
  major="${version%%.*}"
  rest="${version#*.}"
  minor="${rest%%.*}"
  case "$major$minor" in
    '' | *[!0-9]*) die "cannot read the Node.js version from '$node -v' ($version)" ;;
  esac
  if [ "$major" -lt "$need_major" ] || { [ "$major" -eq "$need_major" ] && [ "$minor" -lt "$need_minor" ]; }; then
    die "Node.js ${need_major}.${need_minor} or newer is needed; $node is $version"
  fi
  printf '%s\n' "$node"
}

# The service finds node through systemd's PATH, not the caller's (nvm and the like live in home directories,
# which the unit's ProtectHome hides).
check_node_on_service_path() {
  local dir
  for dir in "${SYSTEMD_PATH_DIRS[@]}"; do
    if [ -x "$dir/node" ]; then
      return 0
    fi
  done
  warn "no node in ${SYSTEMD_PATH_DIRS[*]}: the service will not find it; install Node.js system-wide (e.g. /usr/bin/node)"
}

systemd_running() {
  [ -d /run/systemd/system ]
}

package_dir_of_script() {
  local script_dir
  script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  dirname "$script_dir"
}

main() {
  local root="" token_file="" from="" base_url="" no_start=0 dry_run=0
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --token-file)
        [ "$#" -ge 2 ] || die "--token-file needs a file" 2
        token_file="$2"
        shift
        ;;
      --token-file=*) token_file="${1#--token-file=}" ;;
      --root)
        [ "$#" -ge 2 ] || die "--root needs a directory" 2
        root="$2"
        shift
        ;;
      --root=*) root="${1#--root=}" ;;
      --from)
        [ "$#" -ge 2 ] || die "--from needs a directory" 2
        from="$2"
        shift
        ;;
      --from=*) from="${1#--from=}" ;;
      --base-url)
        [ "$#" -ge 2 ] || die "--base-url needs a URL" 2
        base_url="$2"
        shift
        ;;
      --base-url=*) base_url="${1#--base-url=}" ;;
      --no-start) no_start=1 ;;
      --dry-run) dry_run=1 ;;
      --token | --token=* | --deploy-token | --deploy-token=*)
        die "the deploy token is never taken as an argument (other users can read it in ps); use SVC_DEPLOY_TOKEN or --token-file FILE" 2
        ;;
      -h | --help)
        usage
        exit 0
        ;;
      *)
        usage
        die "unknown option: $1" 2
        ;;
    esac
    shift
  done
  [ "$root" = "/" ] && root=""

  check_linux
  check_root "$root"
  [ -n "$from" ] || from="$(package_dir_of_script)"
  if [ ! -f "$from/package.json" ] || [ ! -f "$from/bin/swarm-node.js" ]; then
    die "$from is not an unpacked swarm-node package; run this script from inside one, or pass --from DIR" 2
  fi
  local node
  node="$(check_node "$from/package.json")"
  [ -n "$root" ] || check_node_on_service_path
  if [ -z "$root" ] && [ "$no_start" -eq 0 ] && ! systemd_running; then
    warn "systemd is not running on this host: installing without starting the service (as with --no-start)"
    no_start=1
  fi

  if [ -n "$token_file" ] && [ ! -r "$token_file" ]; then
    die "cannot read the token file $token_file" 2
  fi

  local args=(install --from "$from")
  [ -z "$root" ] || args+=(--root "$root")
  [ "$no_start" -eq 0 ] || args+=(--no-start)
  [ "$dry_run" -eq 0 ] || args+=(--dry-run)
  [ -z "$token_file" ] || args+=(--deploy-token-file "$token_file")
  [ -z "$base_url" ] || args+=(--base-url "$base_url")

  # Passed on explicitly, so they reach the service even where the caller's shell did not export them.
  local proxy_env=() name
  for name in "${PROXY_VARIABLES[@]}"; do
    if [ -n "${!name:-}" ]; then
      proxy_env+=("$name=${!name}")
    fi
  done

  if [ "$dry_run" -eq 1 ]; then
    say "dry run: nothing is changed"
    say "  host: Linux, node $("$node" -v) at $node"
    if [ "${#proxy_env[@]}" -gt 0 ]; then
      say "  proxy variables for the service: ${proxy_env[*]%%=*}"
    fi
    say "  would run: $node $from/bin/swarm-node.js ${args[*]}"
  fi
  # The token stays in SVC_DEPLOY_TOKEN or in its file; it is never put on this command line.
  env "${proxy_env[@]}" "$node" "$from/bin/swarm-node.js" "${args[@]}"
}

main "$@"
