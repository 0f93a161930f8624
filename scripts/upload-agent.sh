#!/bin/sh
# upload-agent.sh: the agent upload script (spec §1.4, §5.4; docs/sections/agent-upload.md "The upload script").
# Packs a bundle directory (agent.json at its top) with tar and gzip and uploads it with curl as a new version of
# its agent, the same request as `swarm-node agent upload DIR`. POSIX sh, curl, tar, gzip; nothing else.
#
# The JWT comes from --token-file FILE, --token-stdin, or SVC_TOKEN in the environment; never from an argument
# (every user of the host reads arguments in ps), and it reaches curl on its standard input, never in its argv.
#
# Exit codes (as swarm-node's): 0 uploaded (or the same contents were already), 1 refused, 2 usage or a bad
# bundle, 4 JWT missing, invalid or expired, 5 unknown agent, 6 service unreachable.
set -eu

usage() {
  cat <<'EOF'
Usage: upload-agent.sh [--token-file FILE | --token-stdin] DIR

Uploads the agent bundle in DIR (agent.json and its files) as a new version of its agent, which becomes current.

  --token-file FILE   read the JWT from FILE (keep it mode 0600)
  --token-stdin       read the JWT from standard input
  (neither)           read the JWT from the environment variable SVC_TOKEN

Environment: SVC_BASE_URL, the service (default http://127.0.0.1:8787).

Example:
  SVC_BASE_URL=https://api.example.com ./upload-agent.sh --token-file ~/.config/svc/jwt ./my-agent
EOF
}

fail() {
  code=$1
  shift
  printf 'upload-agent.sh: %s\n' "$*" >&2
  exit "$code"
}

token_file=''
token_stdin=no
dir=''
while [ $# -gt 0 ]; do
  case $1 in
    --token-file)
      [ $# -ge 2 ] || fail 2 '--token-file needs a file'
      token_file=$2
      shift 2
      ;;
    --token-stdin)
      token_stdin=yes
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*) fail 2 "unknown option $1 (see --help)" ;;
    *)
      [ -z "$dir" ] || fail 2 'give one directory'
      dir=$1
      shift
      ;;
  esac
done
[ -n "$dir" ] || fail 2 'say which bundle directory to upload (see --help)'
[ -f "$dir/agent.json" ] || fail 2 "$dir/agent.json does not exist: a bundle directory holds agent.json"
if [ -n "$token_file" ] && [ "$token_stdin" = yes ]; then fail 2 'give one of --token-file and --token-stdin'; fi

if [ -n "$token_file" ]; then
  [ -r "$token_file" ] || fail 2 "cannot read the token file $token_file"
  token=$(cat -- "$token_file")
elif [ "$token_stdin" = yes ]; then
  token=$(cat)
else
  token=${SVC_TOKEN:-}
fi
token=$(printf '%s' "$token" | tr -d ' \t\r\n')
[ -n "$token" ] || fail 4 'no JWT: pass --token-file FILE or --token-stdin, or set SVC_TOKEN (swarm-node login gets one)'

# agent_id without a JSON parser: catalog ids are lowercase letters, digits and underscores.
agent_id=$(tr -d '\n' <"$dir/agent.json" | sed -n 's/.*"agent_id"[[:space:]]*:[[:space:]]*"\([a-z0-9_]*\)".*/\1/p')
[ -n "$agent_id" ] || fail 2 "$dir/agent.json has no agent_id"

base_url=${SVC_BASE_URL:-http://127.0.0.1:8787}
base_url=${base_url%/}

umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
(cd "$dir" && tar -cf - .) | gzip -n -9 >"$work/bundle.tar.gz"

# The header goes to curl on stdin (-H @-): printf is a shell builtin, so the token is in no process's arguments.
status=$(printf 'Authorization: Bearer %s\n' "$token" |
  curl -sS -X POST -H @- -H 'Content-Type: application/gzip' -H 'Accept: application/json' \
    --data-binary @"$work/bundle.tar.gz" -o "$work/answer.json" -w '%{http_code}' \
    "$base_url/v1/swarm/agents/$agent_id/versions") || fail 6 "cannot reach the service at $base_url"

case $status in
  200 | 201)
    cat "$work/answer.json"
    echo
    ;;
  *)
    cat "$work/answer.json" >&2
    echo >&2
    case $status in
      401) fail 4 'the service refused the JWT (HTTP 401): sign in again (swarm-node login)' ;;
      413) if grep -q '"code":"upload_quota_exceeded"' "$work/answer.json"; then
          fail 1 'over your upload quota (HTTP 413): remove versions you no longer need (see the remedy above), then upload again'
        fi
        fail 2 "the service refused the bundle (HTTP $status); see the errors above" ;;
      429) fail 1 'too many uploads (HTTP 429): wait the seconds the answer names, then upload again' ;;
      404) fail 5 "the service knows no agent $agent_id (HTTP 404)" ;;
      415 | 422) fail 2 "the service refused the bundle (HTTP $status); see the errors above" ;;
      *) fail 1 "the service refused the upload (HTTP $status)" ;;
    esac
    ;;
esac
