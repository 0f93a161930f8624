// How the demo pipes the service's install.sh to sh (step 6), as a host does: `curl -fsSL <base_url>/install.sh | sh
// -s -- …`. A host without curl (a fresh minimal Debian with only Node and npm, as scripts/fresh-machine.sh makes)
// has Node: its fetch takes curl's place, a line such a host can type too, and install.sh then downloads the release
// with Node, and checks its signature with Node where openssl is missing
// (docs/decisions/0036-install-without-curl-or-openssl.md).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** `node -e` of this, then a URL: its body on stdout, or, on an HTTP error, nothing and exit 22 (as curl -f). */
const NODE_FETCH = 'fetch(process.argv[1]).then(async (r) => (r.ok ? process.stdout.write(await r.text()) : process.exit(22)))';

/** Whether `program` is on `path` (a PATH) as the shell finds it: an executable file in one of its directories. */
export function onPath(program, path = '') {
  return path.split(delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(join(dir, program), constants.X_OK);
      return statSync(join(dir, program)).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * The pipe for a host whose PATH is `path`: `script` for sh -c ($0 the base URL, then install.sh's arguments), and
 * `shown(baseUrl)`, the command a person types up to install.sh's arguments; `why`, said when it is not curl.
 */
export function installPipe(path) {
  if (onPath('curl', path)) {
    return { script: 'curl -fsSL "$0/install.sh" | sh -s -- "$@"', shown: (baseUrl) => `curl -fsSL ${baseUrl}/install.sh | sh -s --` };
  }
  return {
    script: `node -e '${NODE_FETCH}' "$0/install.sh" | sh -s -- "$@"`,
    shown: (baseUrl) => `node -e '${NODE_FETCH}' ${baseUrl}/install.sh | sh -s --`,
    why: "curl is not installed here: Node's fetch downloads install.sh in its place, as on any host with Node and no curl;\ninstall.sh then downloads the release with Node too (and, without openssl, checks its signature with Node).",
  };
}
