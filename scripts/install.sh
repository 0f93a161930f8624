#!/bin/sh
# svc swarm-node host bootstrap, the k3s way (docs/operations.md "With `scripts/install.sh`"): fetched from the
# service and piped to sh,
#
#   curl -fsSL https://svc.example/install.sh | sudo sh -s -- --token-file ./deploy-token
#
# it downloads the newest release for this host, checks its manifest's signature against the keys it trusts and the
# tarball's SHA-256 against the manifest BEFORE unpacking anything, checks every unpacked file, and runs the
# release's own `swarm-node install` with the release's own Node (the host needs none): that enrolls with the deploy
# token, installs /opt/svc/swarm-node/releases/<version>/ and starts the service. A refused token, a bad signature,
# a damaged or truncated download install nothing and say why. Air-gapped: --artifact FILE (docs/operations.md).
# Only verified bytes run as root: every file is copied once (capped) into a private directory, verified there and
# used from there, and no package lying beside the script is ever picked up (--from DIR names one on purpose).
# The deploy token comes from SVC_DEPLOY_TOKEN or --token-file, never from an argument (other users see argv in
# ps), and reaches curl in a header file. Without curl it downloads with the host's Node.js (20 or newer: fetch), and
# without openssl it checks the signature with it (docs/decisions/0036-install-without-curl-or-openssl.md); with
# neither it says what to install. POSIX sh, so `sh -s` runs it on any Linux; everything is inside main(), called on
# the last line: a half-downloaded script defines functions and runs nothing.
set -eu

# The service this script was served by (svc-api writes its own base URL here when it serves /install.sh).
DEFAULT_BASE_URL='http://127.0.0.1:8787'
PROXY_VARIABLES='http_proxy HTTP_PROXY https_proxy HTTPS_PROXY no_proxy NO_PROXY'
INSTALL_PATH=/opt/svc/swarm-node
MANIFEST_MAGIC='svc-swarm-node-release 1'
# What is read of each file before it is checked (src/lib/release-manifest.ts, release-signature.ts hold the same):
# a manifest, its Ed25519 signature, and the ceiling on any tarball; a tarball is capped at its signed size.
MAX_MANIFEST_BYTES=1048576
SIGNATURE_BYTES=64
MAX_ARTIFACT_BYTES=268435456
MAX_LATEST_BYTES=65536

# The release signing keys this script trusts (src/contract/release-keys.ts holds the same; a test compares them).
# Others are trusted with --trust-key FILE or SVC_RELEASE_TRUST_KEY=FILE (docs/operations.md "Releases").
pinned_keys() {
  cat <<'EOF'
-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEASL5/OAYAc/0u8Wlnn3nU9CYAgS6t/aPPCdxiA61Zk88=
-----END PUBLIC KEY-----
EOF
}

say() { printf '%s\n' "$*" >&2; }
warn() { say "warning: $*"; }
# die MESSAGE [EXIT_CODE]: 2 for usage errors, 4 for a refused token, 1 otherwise.
die() {
  say "install.sh: $1"
  exit "${2:-1}"
}

usage() {
  cat >&2 <<'EOF'
usage: install.sh [--token-file FILE] [--base-url URL] [--root DIR] [--name NAME] [--no-start] [--dry-run]
                  [--artifact FILE | --from DIR] [--trust-key FILE] [--no-autoupdate] [--label LABEL]...
                  [--ephemeral [--uninstall-after]]

  --token-file FILE  the deploy token from activation (or set SVC_DEPLOY_TOKEN)
  --base-url URL     the service to download from and enroll with (or set SVC_BASE_URL)
  --root DIR         install under a staging directory instead of / (no root needed, no systemctl)
  --name NAME        install another node beside the default one (swarm-node install --name; then --node NAME)
  --no-start         do not enable and start the service
  --dry-run          download and verify, then print every change and make none
  --artifact FILE    install this downloaded release (.tar.gz, its .manifest and .manifest.sig beside it)
  --from DIR         install this unpacked package as it is, unverified (one you built; never found by itself)
  --trust-key FILE   also trust this Ed25519 public key (PEM) for the release's signature (or SVC_RELEASE_TRUST_KEY)
  --no-autoupdate    the daemon never updates itself (config auto_update false, and --no-autoupdate in the unit)
  --label LABEL      a label the node carries, for routing (repeatable, or comma-separated: swarm-node labels)
  --ephemeral        the node takes one run, then removes itself; --uninstall-after: and removes this install
EOF
}

check_linux() { [ "$(uname -s)" = "Linux" ] || die "swarm-node runs on Linux bare-metal hosts; this is $(uname -s)"; }

check_root() {
  [ -n "$1" ] || [ "$(id -u)" -eq 0 ] || die "installing on this host needs root: curl -fsSL <base_url>/install.sh | sudo sh -s -- --token-file FILE (or --root DIR to stage)"
}

need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is needed and not on PATH (apt-get install $tool)"
  done
}

platform() {
  case "$(uname -m)" in
    x86_64 | amd64) echo linux-x64 ;;
    aarch64 | arm64) echo linux-arm64 ;;
    *) die "no swarm-node release is built for $(uname -m)" ;;
  esac
}

# A Node.js the package's engines.node admits, for a package that ships no runtime: ">=X.Y.Z" (a checkout), or
# "^X.Y.Z" (a release: its native addon is built for major X, so another major cannot load it).
check_node() {
  manifest="$1"
  required="$(tr -d '\n' <"$manifest" | sed -n 's/.*"engines"[^}]*"node"[[:space:]]*:[[:space:]]*"\([>=^]*\)[[:space:]]*\([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2 \3/p')"
  case "$required" in
    '>= '* | '^ '*) ;;
    *) die "$manifest has no engines.node (\">=X.Y.Z\" or \"^X.Y.Z\") to check Node.js against" ;;
  esac
  operator="${required%% *}"
  required="${required#* }"
  need_major="${required% *}"
  need_minor="${required#* }"
  wanted="${need_major}.${need_minor} or newer"
  [ "$operator" = '>=' ] || wanted="${need_major} (${need_major}.${need_minor} or newer within ${need_major})"
  node="$(command -v node || true)"
  [ -n "$node" ] || die "Node.js ${wanted} is needed and node is not on PATH (a release artifact ships its own: use --artifact or the download)"
  version="$("$node" -v)"
  version="${version#v}"
  major="${version%%.*}"
  rest="${version#*.}"
  minor="${rest%%.*}"
  case "$major$minor" in
    '' | *[!0-9]*) die "cannot read the Node.js version from '$node -v' ($version)" ;;
  esac
  if [ "$major" -lt "$need_major" ] || { [ "$major" -eq "$need_major" ] && [ "$minor" -lt "$need_minor" ]; } ||
    { [ "$operator" = '^' ] && [ "$major" -gt "$need_major" ]; }; then
    die "Node.js ${wanted} is needed; $node is $version"
  fi
  printf '%s\n' "$node"
}

# The value of a manifest line "KEY value…", or empty.
manifest_field() { sed -n "s/^$1 //p" "$2" | head -n 1; }

# Downloads $1 to $2 with the deploy token in a header file, at most $3 + 1 bytes: head cuts the transfer off there
# (curl's --max-filesize alone stops only an announced size), and one byte more than the cap says there was more.
# Prints the HTTP status (000: no answer), which curl writes after its messages on stderr. Without curl, the host's
# Node.js does the same (NODE_FETCH): the header from the file, the body cut off past the cap, the status printed.
fetch() {
  if [ "$downloader" = node ]; then
    status="$(env -u NODE_OPTIONS -u NODE_TLS_REJECT_UNAUTHORIZED "$host_node" -e "$NODE_FETCH" "$1" "$2" "$(($3 + 1))" "$work/auth" 2>"$work/fetch.err" || true)"
    printf '%s\n' "${status:-000}"
    return
  fi
  curl -sS -L --proto '=http,https' --max-filesize "$3" -H "@$work/auth" -o - -w '%{stderr}%{http_code}' "$1" 2>"$work/fetch.err" |
    head -c "$(($3 + 1))" >"$2"
  last="$(sed -n '$p' "$work/fetch.err")"
  printf '%s\n' "${last#"${last%???}"}"
}

# The download of fetch() in Node.js: argv URL, FILE, LIMIT (the cap + 1), HEADER_FILE ("Name: value"). fetch follows
# redirects over http and https only; its messages go to stderr, the status to stdout, and it always exits 0.
# shellcheck disable=SC2016 # JavaScript: its ${} are its own
NODE_FETCH='const fs = require("fs");
const [url, out, limitText, headerFile] = process.argv.slice(1);
const limit = Number(limitText);
const line = fs.readFileSync(headerFile, "utf8").trim();
const colon = line.indexOf(":");
const fd = fs.openSync(out, "w", 0o600);
const done = (status, message) => {
  if (message) process.stderr.write(`${message}\n`);
  process.stdout.write(`${status}\n`);
  process.exit(0);
};
const why = (error) => String((error && error.cause && (error.cause.message || error.cause.code)) || (error && error.message) || error);
fetch(url, { headers: { [line.slice(0, colon)]: line.slice(colon + 1).trim() } }).then(
  async (response) => {
    let taken = 0;
    try {
      if (response.body) {
        for await (const chunk of response.body) {
          const part = chunk.subarray(0, limit - taken);
          fs.writeSync(fd, part);
          taken += part.length;
          if (taken >= limit) break;
        }
      }
    } catch (error) {
      // Cut off mid-body: no answer, as curl -sS reports it, not the status of a whole file.
      done("000", `the download was cut off: ${why(error)}`);
    }
    done(response.status);
  },
  (error) => done("000", why(error)),
);'

# Checks the Ed25519 signature $3 of the file $2 with the public key (PEM) $1: openssl, else the host's Node.js.
signed_with() {
  if [ "$verifier" = node ]; then
    env -u NODE_OPTIONS "$host_node" -e "$NODE_VERIFY" "$1" "$2" "$3" >/dev/null 2>&1
  else
    openssl pkeyutl -verify -pubin -inkey "$1" -rawin -in "$2" -sigfile "$3" >/dev/null 2>&1
  fi
}

# What openssl pkeyutl -verify does above, in Node.js: exit 0 only for an Ed25519 key that made the signature.
NODE_VERIFY='const crypto = require("crypto"), fs = require("fs");
const [keyFile, dataFile, signatureFile] = process.argv.slice(1);
try {
  const key = crypto.createPublicKey(fs.readFileSync(keyFile));
  const good = key.asymmetricKeyType === "ed25519" && crypto.verify(null, fs.readFileSync(dataFile), key, fs.readFileSync(signatureFile));
  process.exit(good ? 0 : 1);
} catch (error) {
  process.exit(1);
}'

# The host's Node.js (on PATH) when it runs $1, a test of what it can do; else empty.
host_node_that() {
  candidate="$(command -v node || true)"
  if [ -n "$candidate" ] && "$candidate" -e "$1" >/dev/null 2>&1; then printf '%s\n' "$candidate"; fi
}

# How this host downloads: curl, else the host's Node.js 20 or newer (its fetch), unless a proxy is set, which Node's
# fetch does not use; else the remedy. Node 20 or newer: its fetch drops the token's header on a redirect to
# another origin.
choose_downloader() {
  if command -v curl >/dev/null 2>&1; then
    downloader=curl
    return
  fi
  remedy="apt-get install curl, dnf install curl"
  for name in http_proxy HTTP_PROXY https_proxy HTTPS_PROXY; do
    eval "value=\${$name:-}"
    [ -z "$value" ] || die "curl is needed to download the release through the proxy in $name and is not on PATH ($remedy)"
  done
  host_node="$(host_node_that 'process.exit(typeof fetch === "function" && Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)')"
  [ -n "$host_node" ] ||
    die "curl is needed to download the release and is not on PATH ($remedy; Node.js 20 or newer on PATH also does), or install a release at hand with --artifact FILE"
  downloader=node
  say "curl is not on PATH: downloading with Node.js $("$host_node" -v) ($host_node)"
}

# How this host checks the release's signature: openssl, else the host's Node.js (Ed25519 in its crypto); else the remedy.
choose_verifier() {
  if command -v openssl >/dev/null 2>&1; then
    verifier=openssl
    return
  fi
  host_node="$(host_node_that 'process.exit(typeof require("crypto").verify === "function" ? 0 : 1)')"
  [ -n "$host_node" ] ||
    die "openssl is needed to check the release's signature and is not on PATH (apt-get install openssl, dnf install openssl; Node.js on PATH also does)"
  verifier=node
  say "openssl is not on PATH: checking the signature with Node.js $("$host_node" -v) ($host_node)"
}

# Copies at most $3 + 1 bytes of the file $1 into $2, reading it once: only the copy is read after (the file at hand
# could be swapped between two reads), and one byte more than the cap says that there was more.
copy_capped() {
  head -c "$(($3 + 1))" <"$1" >"$2" || die "cannot read $1; nothing was installed" 2
}

# $1 (a copy in the private directory) is at most $2 bytes, or nothing is installed.
within() {
  [ "$(wc -c <"$1" | tr -d ' ')" -le "$2" ] || die "$(basename "$1") is larger than $3 ($2 bytes); nothing was installed"
}

# The manifest and its signature of the newest release for this platform, into $work/release; the version the
# service named is what the signed manifest must say.
download_manifest() {
  base_url="$1"
  arch="$2"
  [ -n "$token" ] || die "a deploy token is needed to download the release: --token-file FILE or SVC_DEPLOY_TOKEN (an installed node upgrades with: swarm-node upgrade)" 2
  (umask 077 && printf 'Authorization: Bearer %s\n' "$token" >"$work/auth")
  status="$(fetch "$base_url/v1/swarm/releases/latest?platform=$arch" "$work/latest.json" "$MAX_LATEST_BYTES")"
  case "$status" in
    200) ;;
    401) die "the service refused the deploy token (used, expired or unknown); nothing was installed" 4 ;;
    404) die "$base_url publishes no swarm-node release for $arch; nothing was installed" ;;
    000) die "cannot reach $base_url ($(head -n 1 "$work/fetch.err")); nothing was installed" 6 ;;
    *) die "$base_url answered $status to the release query; nothing was installed" ;;
  esac
  # The top-level "version" wherever it stands and however the JSON is laid out (no other key of the answer is
  # named so: docs/api.md "Releases"); its value is checked for what a version may hold below.
  asked="$(head -c "$MAX_LATEST_BYTES" "$work/latest.json" | tr -d '\r\n' |
    sed -n 's/.*[{,][[:space:]]*"version"[[:space:]]*:[[:space:]]*"\([0-9A-Za-z][0-9A-Za-z.+_-]*\)".*/\1/p')"
  case "$asked" in '' | *..*) die "the service's answer names no usable release version; nothing was installed" ;; esac
  stem="swarm-node-$asked-$arch"
  fetch_capped "$stem.manifest" "$MAX_MANIFEST_BYTES" "a manifest may be"
  fetch_capped "$stem.manifest.sig" "$SIGNATURE_BYTES" "a signature is"
}

# One small file of the release asked for, into $work/release: refused at once past its cap.
fetch_capped() {
  status="$(fetch "$base_url/v1/swarm/releases/$asked/$1" "$work/release/$1" "$2")"
  [ "$status" = 200 ] || die "downloading $1 failed ($status $(head -n 1 "$work/fetch.err")); nothing was installed"
  within "$work/release/$1" "$2" "$3"
}

# The tarball the verified manifest describes, capped at its signed size.
download_artifact() {
  status="$(fetch "$base_url/v1/swarm/releases/$version/$stem.tar.gz" "$work/release/$stem.tar.gz" "$want_size")"
  # Cut off past the cap: curl's own complaint is about the cut, not the cause; check_and_unpack names it.
  [ "$status" = 200 ] || die "downloading $stem.tar.gz failed ($status $(head -n 1 "$work/fetch.err")); nothing was installed"
  rm -f "$work/auth"
}

# The manifest and signature beside --artifact FILE, copied into $work/release.
copy_manifest() {
  manifest="${artifact%.tar.gz}.manifest"
  if [ ! -f "$manifest" ] || [ ! -f "$manifest.sig" ]; then die "$manifest and $manifest.sig must sit beside the artifact; nothing was installed" 2; fi
  copy_capped "$manifest" "$work/release/manifest" "$MAX_MANIFEST_BYTES"
  copy_capped "$manifest.sig" "$work/release/manifest.sig" "$SIGNATURE_BYTES"
}

# The signature of the copied manifest, then what it says: the version asked for (the service's, or the artifact's
# name), the platform, and the tarball's digest and size, which the tarball is checked against once it is here.
verify_manifest() {
  manifest="$1"
  signature="$1.sig"
  within "$manifest" "$MAX_MANIFEST_BYTES" "a manifest may be"
  within "$signature" "$SIGNATURE_BYTES" "a signature is"
  mkdir "$work/keys"
  pinned_keys | awk -v dir="$work/keys" '/BEGIN PUBLIC KEY/ { n++ } { print > (dir "/pinned-" n ".pem") }'
  if [ -n "$trust_key" ]; then
    [ -r "$trust_key" ] || die "cannot read the key file $trust_key" 2
    cp "$trust_key" "$work/keys/trusted.pem"
  fi
  signed_by=""
  for key in "$work"/keys/*.pem; do
    if signed_with "$key" "$manifest" "$signature"; then
      signed_by="$key"
      break
    fi
  done
  [ -n "$signed_by" ] || die "the release's signature does not verify with any key this script trusts: it was not signed by a trusted key, or the manifest was altered; nothing was installed (a release signed with your own key: run this again with --trust-key FILE, its public key in PEM)"
  [ "$(head -n 1 "$manifest")" = "$MANIFEST_MAGIC" ] || die "the manifest is not a swarm-node release manifest; nothing was installed"
  version="$(manifest_field version "$manifest")"
  case "$version" in '' | *..* | */*) die "the signed manifest's version is not usable; nothing was installed" ;; esac
  stem="swarm-node-$version-$(manifest_field platform "$manifest")"
  line="$(manifest_field artifact "$manifest")"
  want_sha="${line%% *}"
  line="${line#* }"
  want_size="${line%% *}"
  case "$want_size" in '' | *[!0-9]*) die "the manifest's artifact line is malformed; nothing was installed" ;; esac
  [ "${line#* }" = "$stem.tar.gz" ] || die "the manifest's artifact line does not name $stem.tar.gz; nothing was installed"
  [ "$want_size" -le "$MAX_ARTIFACT_BYTES" ] || die "the signed manifest lists a tarball of $want_size bytes, more than a release may have; nothing was installed"
}

# The tarball (a copy in $work/release) against the signed manifest, then every unpacked file: nothing runs before all pass.
check_and_unpack() {
  size="$(wc -c <"$artifact" | tr -d ' ')"
  [ "$size" -ge "$want_size" ] || die "the download is truncated: $size of $want_size bytes; nothing was installed (download it again)"
  [ "$size" -le "$want_size" ] || die "$stem.tar.gz is larger than its signed size ($want_size bytes); nothing was installed"
  actual="$(sha256sum "$artifact" | cut -d ' ' -f 1)"
  [ "$actual" = "$want_sha" ] || die "the artifact's SHA-256 is $actual, the signed manifest says $want_sha: it was altered or damaged; nothing was installed"

  # Only the release's own top directory, regular files and directories: a listing check before anything is written.
  if tar -tvzf "$artifact" | grep -qv '^[-d]'; then die "the artifact holds links or special files; nothing was installed"; fi
  if tar -tzf "$artifact" | grep -qv "^$stem/"; then die "the artifact holds files outside $stem/; nothing was installed"; fi
  if tar -tzf "$artifact" | grep -q '\(^\|/\)\.\.\(/\|$\)'; then die "the artifact holds a path with ..; nothing was installed"; fi
  mkdir "$work/unpacked"
  tar -xzf "$artifact" -C "$work/unpacked" --no-same-owner
  sed -n 's/^file \([0-9a-f]*\) [0-9]* [0-7]* \(.*\)$/\1  \2/p' "$manifest" >"$work/sums"
  (cd "$work/unpacked/$stem" && sha256sum -c --quiet --strict "$work/sums" >/dev/null 2>"$work/sums.err") ||
    die "a file of the release differs from the signed manifest ($(head -n 1 "$work/sums.err")); nothing was installed"
  listed="$(wc -l <"$work/sums" | tr -d ' ')"
  found="$(cd "$work/unpacked/$stem" && find . -type f | wc -l | tr -d ' ')"
  [ "$listed" = "$found" ] || die "the release holds $found files, its manifest lists $listed; nothing was installed"
  from="$work/unpacked/$stem"
  say "verified swarm-node $version ($stem.tar.gz, signed by $(basename "$signed_by" .pem))"
}

# A release, verified: its files copied once into $work/release (downloaded there, or read from --artifact's path
# once), verified there and used from there; the file at hand is never read again (a racer could swap it).
obtain_release() {
  mkdir "$work/release"
  if [ -n "$artifact" ]; then
    [ -f "$artifact" ] || die "no artifact at $artifact" 2
    copy_manifest
    verify_manifest "$work/release/manifest"
    # What was asked for is the version in the artifact's name: its signed manifest must say the same.
    [ "$(basename "$artifact")" = "$stem.tar.gz" ] ||
      die "$(basename "$artifact") is not what its signed manifest describes ($stem.tar.gz); nothing was installed"
    copy_capped "$artifact" "$work/release/$stem.tar.gz" "$want_size"
  else
    choose_downloader
    download_manifest "$base_url" "$(platform)"
    verify_manifest "$work/release/$stem.manifest"
    [ "$version" = "$asked" ] ||
      die "the service named swarm-node $asked, and the signed manifest is of $version: another release than the one named; nothing was installed"
    download_artifact
  fi
  artifact="$work/release/$stem.tar.gz"
  check_and_unpack
}

main() {
  root="" node_name="" token_file="" from="" artifact="" base_url="" no_start=0 dry_run=0 no_autoupdate=0
  labels="" ephemeral=""
  trust_key="${SVC_RELEASE_TRUST_KEY:-}"
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --token-file | --root | --name | --from | --base-url | --artifact | --trust-key | --label)
        [ "$#" -ge 2 ] || die "$1 needs a value" 2
        case "$1" in
          --token-file) token_file="$2" ;;
          --root) root="$2" ;;
          --name) node_name="$2" ;;
          --from) from="$2" ;;
          --base-url) base_url="$2" ;;
          --artifact) artifact="$2" ;;
          --trust-key) trust_key="$2" ;;
          --label) labels="${labels:+$labels,}$2" ;;
        esac
        shift
        ;;
      --token-file=*) token_file="${1#*=}" ;;
      --root=*) root="${1#*=}" ;;
      --name=*) node_name="${1#*=}" ;;
      --from=*) from="${1#*=}" ;;
      --base-url=*) base_url="${1#*=}" ;;
      --artifact=*) artifact="${1#*=}" ;;
      --trust-key=*) trust_key="${1#*=}" ;;
      --no-start) no_start=1 ;;
      --dry-run) dry_run=1 ;;
      --no-autoupdate) no_autoupdate=1 ;;
      --label=*) labels="${labels:+$labels,}${1#*=}" ;;
      --ephemeral | --uninstall-after) ephemeral="$ephemeral $1" ;;
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
  [ -n "$base_url" ] || base_url="${SVC_BASE_URL:-$DEFAULT_BASE_URL}"
  base_url="${base_url%/}"

  check_linux
  check_root "$root"
  if [ -n "$token_file" ]; then
    [ -r "$token_file" ] || die "cannot read the token file $token_file" 2
    token="$(tr -d ' \r\n' <"$token_file")"
  else
    token="$(printf '%s' "${SVC_DEPLOY_TOKEN:-}" | tr -d ' \r\n')"
  fi
  # No package is ever found beside the script: what runs as root is a verified release, or the --from DIR named.
  [ -z "$from" ] || [ -z "$artifact" ] || die "--from and --artifact do not go together" 2

  umask 022
  work="$(mktemp -d "${TMPDIR:-/tmp}/swarm-node-install.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
  chmod 700 "$work"

  if [ -z "$from" ]; then
    need sha256sum tar gzip head
    choose_verifier
    obtain_release
  fi
  if [ ! -f "$from/package.json" ] || [ ! -f "$from/bin/swarm-node.js" ]; then
    die "$from is not an unpacked swarm-node package; pass --from DIR, --artifact FILE, or let the script download one" 2
  fi
  if [ -x "$from/runtime/bin/node" ]; then
    node="$from/runtime/bin/node"
    "$node" -v >/dev/null 2>&1 || die "the release's own Node.js does not run on this host (it needs glibc 2.28 or newer: ldd --version); nothing was installed"
  else
    node="$(check_node "$from/package.json")"
  fi
  if [ -z "$root" ] && [ "$no_start" -eq 0 ] && [ ! -d /run/systemd/system ]; then
    warn "systemd is not running on this host: installing without starting the service (as with --no-start)"
    no_start=1
  fi

  set -- install --from "$from" --base-url "$base_url"
  [ -z "$root" ] || set -- "$@" --root "$root"
  [ -z "$node_name" ] || set -- "$@" --name "$node_name"
  [ "$no_start" -eq 0 ] || set -- "$@" --no-start
  [ "$dry_run" -eq 0 ] || set -- "$@" --dry-run
  [ "$no_autoupdate" -eq 0 ] || set -- "$@" --no-autoupdate
  [ -z "$labels" ] || set -- "$@" --label "$labels"
  # shellcheck disable=SC2086 # each word is one of the two flags above
  [ -z "$ephemeral" ] || set -- "$@" $ephemeral
  [ -z "$token_file" ] || set -- "$@" --deploy-token-file "$token_file"
  proxies=""
  for name in $PROXY_VARIABLES; do
    eval "value=\${$name:-}"
    # Exported, so they reach `swarm-node install`, which writes them into the service's environment file.
    if [ -n "$value" ]; then export "${name?}" && proxies="$proxies $name"; fi
  done
  if [ "$dry_run" -eq 1 ]; then
    say "dry run: nothing is changed"
    say "  host: Linux, node $("$node" -v) at $node"
    [ -z "$proxies" ] || say "  proxy variables for the service:$proxies"
    say "  would run: $node $from/bin/swarm-node.js $*"
  fi
  # The token stays in SVC_DEPLOY_TOKEN or in its file; it is never put on this command line.
  "$node" "$from/bin/swarm-node.js" "$@"
  if [ -n "$trust_key" ] && [ "$dry_run" -eq 0 ]; then
    # `swarm-node upgrade` trusts the keys in etc/release-keys/ besides its pinned ones.
    keys="$root$INSTALL_PATH${node_name:+/nodes/$node_name}/etc/release-keys"
    mkdir -p "$keys"
    chmod 755 "$keys"
    # The copy the release was verified with, not the file again.
    cp "$work/keys/trusted.pem" "$keys/$(basename "$trust_key")"
    chmod 644 "$keys/$(basename "$trust_key")"
  fi
}

main "$@"
