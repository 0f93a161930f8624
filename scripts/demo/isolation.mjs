// How the demo's node will keep its agents apart on this machine (docs/operations.md "Agent isolation"), found out
// before the node is installed: bubblewrap when it can make a sandbox here (the node's own `auto` then picks it, as
// on any host); else, as root, util-linux's unshare and setpriv (on every Debian and Ubuntu), which only a config
// that names it gets (`agent_isolation unshare`); else no sandbox (`agent_isolation none`). What is not bubblewrap is
// written into the demo's own scratch home's etc/config.json, as an operator would set it: an installed node's
// `auto` stays as it is, and refuses to run agents as root without bubblewrap.
import { spawnSync } from 'node:child_process';

const INSTALL = 'apt-get install bubblewrap';

/** { mode, why, config }: `config` is the agent_isolation to write into the node's config.json (none: leave `auto`). */
export function probeIsolation() {
  const root = process.getuid?.() === 0;
  const bwrap = tried('bwrap', [...(root ? [] : ['--unshare-user']), '--ro-bind', '/', '/', '--unshare-pid', '--', '/bin/true']);
  if (bwrap.ok) return { mode: 'bubblewrap', why: 'bubblewrap can make a sandbox here: the node picks it itself (agent_isolation auto)' };
  const missing = bwrap.missing ? 'bubblewrap is not installed' : `bubblewrap cannot make a sandbox here (${bwrap.said})`;
  if (!root)
    return {
      mode: 'none',
      config: 'none',
      why: `${missing}, and without root there is no uid of its own to give each agent: the agents run as you, unsandboxed`,
      install: INSTALL,
    };
  // What the node's own probe tries (src/node/runner/isolation.ts unshareSupport).
  const unshare = tried('setpriv', [
    '--pdeathsig',
    'KILL',
    '--',
    'unshare',
    '--pid',
    '--kill-child',
    '--mount-proc',
    '--propagation',
    'private',
    '--ipc',
    '--uts',
    '--cgroup',
    '--net',
    '--',
    'setpriv',
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    '--no-new-privs',
    '--',
    '/bin/true',
  ]);
  if (unshare.ok) {
    return {
      mode: 'unshare',
      config: 'unshare',
      why: `${missing}; as root, util-linux's unshare and setpriv give each run namespaces and a uid of its own (no system-call filter)`,
      install: INSTALL,
    };
  }
  const why = unshare.missing ? "util-linux's setpriv is not installed" : `unshare cannot make namespaces here (${unshare.said})`;
  return { mode: 'none', config: 'none', why: `${missing}, and ${why}: the agents run as root, unsandboxed`, install: INSTALL };
}

/** The one line the demo prints. */
export function isolationLine(found) {
  return `agent isolation: ${found.mode}: ${found.why}${found.install === undefined ? '' : `; ${found.install} gives each run the node's bubblewrap sandbox`}`;
}

function tried(program, args) {
  const result = spawnSync(program, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  if (result.error !== undefined) return { ok: false, missing: result.error.code === 'ENOENT', said: result.error.message };
  const said = result.stderr.toString().trim().split('\n').pop() || `exit ${result.status}`;
  return { ok: result.status === 0, missing: false, said };
}
