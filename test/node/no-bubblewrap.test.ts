// A host without bubblewrap (docs/operations.md "Agent isolation"). An installed root node's `auto` refuses to run
// agents rather than run them as root, until its config names a mode it has (agent_isolation unshare); an
// unprivileged node's `auto` runs them unsandboxed, as the node's user, and says so in `status` (JSON and human) and
// on every `run`, not only in the docs.
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { activatedSession } from '../helpers/funnel.js';
import { packageForOtherUsers } from '../helpers/staged-for-others.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { run, swarmNode, writeTokenFile } from '../install/support.js';
import { bubblewrapInstalled, NOBODY, openDir, WITHOUT_BUBBLEWRAP } from './sandbox-support.js';

const asRoot = process.getuid?.() === 0;
/** Hiding a bwrap takes root; a host without one needs nothing hidden. */
const hide = asRoot ? WITHOUT_BUBBLEWRAP : [];
const canHide = asRoot || !bubblewrapInstalled;
const NO_SANDBOX = /^bubblewrap (cannot make a sandbox here( \(user namespaces\))?: exit 1|is not installed \(bwrap\))$/;

interface Status {
  node: { isolation: string | null; isolation_error: string | null; isolation_warning: string | null };
  problems: string[];
}

describe.skipIf(!asRoot)('an installed node (install --root) as root without bubblewrap', () => {
  const service = useSvcApi();

  it('refuses to run agents under auto, says why and how to fix it, and runs them under unshare once its config says so', async () => {
    const root = tempDir('no-bwrap-root-');
    const token = (await activatedSession(service.baseUrl, uniqueEmail('no-bwrap'))).deploy_token;
    const installed = await swarmNode(['install', '--root', root, '--no-start', '--deploy-token-file', writeTokenFile(token)], {
      env: { SVC_BASE_URL: service.baseUrl },
    });
    expect(installed.exitCode, installed.stderr).toBe(0);
    const bin = join(root, 'usr', 'local', 'bin', 'swarm-node');
    const cli = (args: string[]) => run(hide[0]!, [...hide.slice(1), bin, ...args]);

    const status = JSON.parse((await cli(['--json', 'status'])).stdout) as Status;
    expect(status.node.isolation, JSON.stringify(status.node)).toBeNull();
    const reason = /^agents cannot run isolated on this host: (.*)$/.exec(status.node.isolation_error ?? '')?.[1];
    expect(reason, String(status.node.isolation_error)).toMatch(NO_SANDBOX);
    const refused = await cli(['run', 'agent_ops_monitor_004']);
    expect(refused.exitCode, refused.stderr).not.toBe(0);
    expect(refused.stderr).toContain('agents cannot run isolated on this host: bubblewrap');
    expect(refused.stderr).toContain('apt-get install bubblewrap');

    const set = await cli(['config', 'set', 'agent_isolation', 'unshare']);
    expect(set.exitCode, set.stderr).toBe(0);
    const unshare = JSON.parse((await cli(['--json', 'status'])).stdout) as Status;
    expect([unshare.node.isolation, unshare.node.isolation_warning], JSON.stringify(unshare.node)).toEqual(['unshare', null]);
  }, 120_000);
});

describe.skipIf(!canHide)('an unprivileged node without bubblewrap', () => {
  it('runs agents unsandboxed under auto, and says so in status (JSON and human) and on every run', async () => {
    const pkg = packageForOtherUsers();
    // An enrolled node's home of an ordinary user (nobody, when the test runs as root): its runs execute here.
    const home = join(openDir('no-bwrap-home-'), 'node');
    mkdirSync(join(home, 'etc'), { recursive: true });
    mkdirSync(join(home, 'var'));
    const credentials = join(home, 'etc', 'credentials.json');
    const node = {
      node_id: '00000000-0000-4000-8000-000000000001',
      user_id: 'u@example.com',
      tier_id: 'svc_starter_agents',
      enrolled_at: new Date().toISOString(),
      credential: 'svcn_test',
    };
    writeFileSync(credentials, JSON.stringify({ node }), { mode: 0o600 });
    chmodSync(credentials, 0o600);
    if (asRoot) for (const path of [home, join(home, 'etc'), join(home, 'var'), credentials]) chownSync(path, NOBODY, NOBODY);
    const asUser = asRoot ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--'] : [];
    const argv = [...hide, ...asUser, pkg.node, join(pkg.root, 'bin', 'swarm-node.js')];
    const cli = (args: string[]) =>
      run(argv[0]!, [...argv.slice(1), ...args], { env: { SWARM_NODE_HOME: home, HOME: home, SVC_BASE_URL: 'http://127.0.0.1:9' } });

    const json = await cli(['--json', 'status']);
    const status = JSON.parse(json.stdout) as Status;
    expect(status.node.isolation, json.stdout).toBe('none');
    const warning = status.node.isolation_warning ?? '';
    const why =
      /^agents run unsandboxed, as the node's own user \(agent_isolation auto fell back to none: (.*)\); apt-get install bubblewrap gives each run a sandbox$/.exec(
        warning,
      )?.[1];
    expect(why, warning).toMatch(NO_SANDBOX);
    expect(status.problems).toContain(warning);

    const human = await cli(['status']);
    expect(human.stdout).toMatch(new RegExp(`^ {2}warning +${warning.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));

    // The run goes nowhere (no service answers), but the node says first how it would run the agent.
    const ran = await cli(['run', 'agent_ops_monitor_004']);
    expect(ran.stderr).toContain(`warning: ${warning}`);
    const ranJson = await cli(['--json', 'run', 'agent_ops_monitor_004']);
    expect(ranJson.stderr).toContain(`warning: ${warning}`);
  }, 60_000);
});
