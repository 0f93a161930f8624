// docs/operations.md "Upgrade", "Rollback", "Uninstall": upgrade to a newer release and roll back; uninstall
// (command and generated uninstall.sh) leaves no file of ours; --purge; both work when the service is gone.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openNodeStore } from '../../src/node/store/database.js';
import { installTestAgents } from '../daemon/agents.js';
import { DaemonProcess, FAST } from '../daemon/support.js';
import { CONTRACT_INPUTS, contractInputFlags } from '../helpers/bundles.js';
import { activatedSession, fundWallet, recentToken, signIn, waitFor } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { REPO_ROOT, useSvcApi } from '../helpers/svc-api.js';
import { KEY, spawnPty, spawnSwarmNodePty, type PtySession } from '../helpers/pty.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { filesUnder, homeOf, relabelledPackage, run, snapshot, swarmNode } from './support.js';

const VERSION = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version as string;
const NEXT = '99.0.0-test';
/** Nothing listens on port 1: the service is gone. */
const GONE = 'http://127.0.0.1:1';
/** Live processes whose environment names `home` as theirs (SWARM_NODE_HOME). */
function processesWithHome(home: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return (
          readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(`SWARM_NODE_HOME=${home}`) &&
          !/^State:\s+Z/m.test(readFileSync(`/proc/${name}/status`, 'utf8'))
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

const AGENT_STATE_FILES = [
  'var/lib/private/svc-swarm-node-agents/agent_research_rag_015/index.json',
  'var/lib/svc-swarm-node-agents/agent_research_rag_015/index.json',
];

describe('upgrade, rollback and uninstall', () => {
  const service = useSvcApi();
  const sessions: PtySession[] = [];
  afterAll(() => {
    for (const session of sessions) session.kill();
  });

  async function installedRoot(): Promise<string> {
    const root = tempDir('lifecycle-root-');
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('lifecycle'));
    const result = await swarmNode(['install', '--root', root], { env: { SVC_BASE_URL: service.baseUrl, SVC_DEPLOY_TOKEN: deploy_token } });
    expect(result.exitCode, result.stderr).toBe(0);
    return root;
  }

  /** A database with a row in it, written through the node's own store. */
  function seedDatabase(root: string): void {
    const db = openNodeStore(join(homeOf(root), 'var', 'swarm-node.db'));
    db.prepare('INSERT INTO daemon_state (key, value, updated_at) VALUES (?, ?, ?)').run('seed', 'kept', 1);
    db.close();
  }

  /** What the agents of the default node left under systemd: their state, and the dynamic user's from before. */
  function seedAgentState(root: string): void {
    for (const file of AGENT_STATE_FILES) {
      mkdirSync(join(root, file, '..'), { recursive: true });
      writeFileSync(join(root, file), 'an index of the corpus');
    }
  }

  describe('upgrade and rollback', () => {
    let root: string;
    let home: string;
    let kept: Record<string, string>;
    const keptFiles = () =>
      Object.fromEntries(
        Object.entries(snapshot(root)).filter(([path]) => /etc\/(config|credentials)\.json$|var\/swarm-node\.db/.test(path)),
      );

    beforeAll(async () => {
      root = await installedRoot();
      home = homeOf(root);
      seedDatabase(root);
      kept = keptFiles();
    });

    it('a newer package becomes a new release; current switches, the previous release stays', async () => {
      const pkg = relabelledPackage(join(home, 'releases', VERSION), NEXT);
      const result = await swarmNode(['upgrade', '--root', root, '--from', pkg, '--json']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.json).toMatchObject({ version: NEXT, enrolled: false, service: { action: 'skipped' } });
      expect(readlinkSync(join(home, 'current'))).toBe(`releases/${NEXT}`);
      expect(readlinkSync(join(home, 'previous'))).toBe(`releases/${VERSION}`);
      expect(existsSync(join(home, 'releases', VERSION, 'bin', 'swarm-node.js'))).toBe(true);
      expect(JSON.parse(readFileSync(join(home, 'releases', NEXT, 'package.json'), 'utf8')).version).toBe(NEXT);
      // No switch leaves its temp link behind.
      expect(filesUnder(home).filter((path) => path.includes('.new'))).toEqual([]);

      // Config, credentials and the database are untouched; the database was snapshotted first, and the copy reads.
      expect(keptFiles()).toEqual(kept);
      const backup = result.json.database_backup as string;
      expect(backup).toMatch(new RegExp(`var/backups/swarm-node\\.db\\.${VERSION.replace(/\./g, '\\.')}\\.`));
      const copy = openNodeStore(backup);
      expect(copy.prepare('SELECT value FROM daemon_state WHERE key = ?').get('seed')).toEqual({ value: 'kept' });
      copy.close();

      // The upgraded node runs the new release through the same link.
      const version = await run(join(root, 'usr/local/bin/swarm-node'), ['--version']);
      expect(version.exitCode, version.stderr).toBe(0);
    });

    it('the same upgrade again changes nothing', async () => {
      const before = snapshot(root);
      const result = await swarmNode(['upgrade', '--root', root, '--from', join(home, 'releases', NEXT)]);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/^nothing to change/);
      expect(snapshot(root)).toEqual(before);
    });

    it('--rollback switches back, and again rolls forward; data stays', async () => {
      const back = await swarmNode(['upgrade', '--rollback', '--root', root, '--json']);
      expect(back.exitCode, back.stderr).toBe(0);
      expect(back.json).toMatchObject({ from_version: NEXT, to_version: VERSION });
      expect(back.json.database_backups_of_target).toEqual([expect.stringContaining(`swarm-node.db.${VERSION}.`)]);
      expect(readlinkSync(join(home, 'current'))).toBe(`releases/${VERSION}`);
      expect(readlinkSync(join(home, 'previous'))).toBe(`releases/${NEXT}`);
      expect(keptFiles()).toEqual(kept);

      const forward = await swarmNode(['upgrade', '--rollback', '--root', root]);
      expect(forward.exitCode, forward.stderr).toBe(0);
      expect(forward.stdout).toMatch(new RegExp(`rolled back from ${VERSION.replace(/\./g, '\\.')} to ${NEXT}`));
      expect(readlinkSync(join(home, 'current'))).toBe(`releases/${NEXT}`);
    });

    it('a third version prunes the release that is neither current nor previous', async () => {
      const third = relabelledPackage(join(home, 'releases', NEXT), '99.1.0-test');
      const result = await swarmNode(['upgrade', '--root', root, '--from', third]);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(readlinkSync(join(home, 'current'))).toBe('releases/99.1.0-test');
      expect(readlinkSync(join(home, 'previous'))).toBe(`releases/${NEXT}`);
      expect(existsSync(join(home, 'releases', VERSION))).toBe(false);
    });

    it('--dry-run of an upgrade lists the switch and changes nothing', async () => {
      const before = snapshot(root);
      const result = await swarmNode([
        'upgrade',
        '--root',
        root,
        '--dry-run',
        '--from',
        relabelledPackage(join(home, 'releases', NEXT), '99.2.0-test'),
      ]);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toContain(`~ ${join(home, 'current')}  (-> releases/99.2.0-test, was releases/99.1.0-test)`);
      expect(snapshot(root)).toEqual(before);
    });
  });

  it('upgrade and rollback refuse a root with no node installed, and a rollback with nothing to go back to', async () => {
    const empty = tempDir('lifecycle-root-');
    const upgrade = await swarmNode(['upgrade', '--root', empty]);
    expect(upgrade.exitCode).toBe(2);
    expect(upgrade.stderr).toMatch(/no node is installed at/);
    expect(filesUnder(empty)).toEqual([]);

    const root = await installedRoot();
    const rollback = await swarmNode(['upgrade', '--rollback', '--root', root]);
    expect(rollback.exitCode).toBe(2);
    expect(rollback.stderr).toMatch(/no previous release to roll back to/);
  });

  describe('uninstall', () => {
    it('removes everything install wrote and keeps var/, the credentials and the config, with the service gone', async () => {
      const root = await installedRoot();
      seedDatabase(root);
      // The unit's ExecStopPost after a removed node's exit 8: this node is not ephemeral, so it changes nothing.
      const untouched = snapshot(root);
      const hook = await swarmNode(['uninstall', '--root', root, '--if-retired-ephemeral'], { env: { EXIT_STATUS: '8' } });
      expect(hook.exitCode, hook.stderr).toBe(0);
      expect(snapshot(root)).toEqual(untouched);
      const credentials = readFileSync(join(homeOf(root), 'etc', 'credentials.json'), 'utf8');
      const result = await swarmNode(['uninstall', '--root', root], { env: { SVC_BASE_URL: GONE } });
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/kept .*config\.json, .*credentials\.json and .*var \(pass --purge to remove them\)/);
      const left = filesUnder(root);
      expect(left.filter((path) => !path.startsWith('opt/svc/swarm-node/var/'))).toEqual([
        'opt/svc/swarm-node/etc/config.json',
        'opt/svc/swarm-node/etc/credentials.json',
      ]);
      expect(left).toContain('opt/svc/swarm-node/var/swarm-node.db');
      expect(readFileSync(join(homeOf(root), 'etc', 'credentials.json'), 'utf8')).toBe(credentials);

      // With the credentials kept, installing again needs no token.
      const again = await swarmNode(['install', '--root', root], { env: { SVC_BASE_URL: service.baseUrl } });
      expect(again.exitCode, again.stderr).toBe(0);
    });

    it('keeps the configuration: install after uninstall, without --base-url or SVC_BASE_URL, keeps base_url and wallet_url', async () => {
      const root = await installedRoot();
      const configFile = join(homeOf(root), 'etc', 'config.json');
      const installed = JSON.parse(readFileSync(configFile, 'utf8'));
      expect(installed).toMatchObject({ base_url: service.baseUrl, wallet_url: `${service.baseUrl}/wallet` });
      expect((await swarmNode(['uninstall', '--root', root])).exitCode).toBe(0);

      const again = await swarmNode(['--json', 'install', '--root', root]);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(JSON.parse(readFileSync(configFile, 'utf8'))).toEqual(installed);
      const shown = await swarmNode(['--json', 'config', 'get'], { env: { SWARM_NODE_HOME: homeOf(root) } });
      expect(shown.json.config).toMatchObject({ base_url: service.baseUrl, wallet_url: `${service.baseUrl}/wallet` });
      expect(shown.json.sources).toMatchObject({ base_url: 'file', wallet_url: 'file' });

      // A base_url given now moves the wallet with it: the old one was only derived from the old base_url.
      const moved = await swarmNode(['install', '--root', root, '--base-url', 'http://127.0.0.1:1']);
      expect(moved.exitCode, moved.stderr).toBe(0);
      expect(JSON.parse(readFileSync(configFile, 'utf8'))).toMatchObject({
        base_url: 'http://127.0.0.1:1',
        wallet_url: 'http://127.0.0.1:1/wallet',
      });
    });

    it("--purge leaves no file at all, the agents' state under systemd included; a second uninstall finds nothing to remove", async () => {
      const root = await installedRoot();
      seedDatabase(root);
      seedAgentState(root);
      const result = await swarmNode(['uninstall', '--root', root, '--purge', '--yes'], { env: { SVC_BASE_URL: GONE } });
      expect(result.exitCode, result.stderr).toBe(0);
      // The service cannot be reached: the purge goes on, and says what stays there.
      expect(result.stderr).toMatch(
        /warning: node [0-9a-f-]{36} stays in your nodes at the service \(cannot reach the service at http:\/\/127\.0\.0\.1:1 .*\): it shows offline there until you remove it \(signed in, on any host: swarm-node nodes remove [0-9a-f-]{36} --yes\) or the service does, after 14 days offline/,
      );
      expect(filesUnder(root)).toEqual([]);
      expect(existsSync(join(root, 'opt', 'svc'))).toBe(false);

      // Nothing left to destroy: nothing to confirm.
      const again = await swarmNode(['uninstall', '--root', root, '--purge']);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/nothing to remove/);
    });

    it("--purge takes the node out of its user's nodes at the service, with its own credential", async () => {
      const email = uniqueEmail('lifecycle-purge');
      const root = tempDir('lifecycle-root-');
      const { deploy_token } = await activatedSession(service.baseUrl, email);
      expect(
        (await swarmNode(['install', '--root', root], { env: { SVC_BASE_URL: service.baseUrl, SVC_DEPLOY_TOKEN: deploy_token } })).exitCode,
      ).toBe(0);
      const token = await recentToken(service.baseUrl, email, 'svc_starter_agents');
      const nodes = async () =>
        (await apiClient(service.baseUrl).get('/v1/swarm/nodes', token)).body.nodes.map((node: { node_id: string }) => node.node_id);
      const nodeId = JSON.parse(readFileSync(join(homeOf(root), 'etc', 'config.json'), 'utf8')).node_id as string;
      expect(await nodes()).toEqual([nodeId]);

      const dryRun = await swarmNode(['uninstall', '--root', root, '--purge', '--dry-run']);
      expect(dryRun.stdout).toContain(`would remove node ${nodeId} from your nodes at the service`);
      expect(await nodes()).toEqual([nodeId]);

      const purged = await swarmNode(['--json', 'uninstall', '--root', root, '--purge', '--yes']);
      expect(purged.exitCode, purged.stderr).toBe(0);
      expect(purged.json.removed_at_service).toEqual({ node_id: nodeId, removed: true });
      expect(purged.stderr).toContain(`removed node ${nodeId} from your nodes at the service`);
      expect(await nodes()).toEqual([]);
      expect(filesUnder(root)).toEqual([]);
    });

    it.each(['swarm-node uninstall', 'uninstall.sh'])(
      '%s --purge stops a daemon of the node started by hand, even with the service out of its reach: no process of it is left, and no run is leased to it after',
      async (tool) => {
        const email = uniqueEmail('lifecycle-daemon');
        const root = tempDir('lifecycle-root-');
        const { deploy_token } = await activatedSession(service.baseUrl, email);
        const token = await signIn(service.baseUrl, email);
        await fundWallet(service.baseUrl, email, 100);
        expect(
          (await swarmNode(['install', '--root', root], { env: { SVC_BASE_URL: service.baseUrl, SVC_DEPLOY_TOKEN: deploy_token } }))
            .exitCode,
        ).toBe(0);
        const home = homeOf(root);
        const node = { home, env: { SWARM_NODE_HOME: home, SVC_BASE_URL: service.baseUrl, NO_COLOR: '1', SWARM_AGENT_ISOLATION: 'none' } };
        installTestAgents(node);
        const bin = join(home, 'current', 'bin', 'swarm-node.js');
        expect((await run('node', [bin, 'login', '--token-stdin'], { env: node.env, input: `${token}\n` })).exitCode).toBe(0);
        expect(
          (await run('node', [bin, 'register', 'agent_ops_monitor_004', ...contractInputFlags('agent_ops_monitor_004')], { env: node.env }))
            .exitCode,
        ).toBe(0);
        const daemon = DaemonProcess.start(node, FAST, bin);
        const fleet = () => httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token });
        await waitFor(async () => ((await fleet()).body.nodes[0]?.online === true ? true : undefined), 'the daemon started by hand online');

        // The purge cannot reach the service (the node stays listed there), so only stopping the daemon ends its polls.
        // The root is given through a link, as on a host whose /opt is one (/opt -> /var/opt): the daemon's open
        // files name the real path.
        const linked = `${root}-link`;
        symlinkSync(root, linked);
        const purged =
          tool === 'uninstall.sh'
            ? await run('sh', [join(home, 'uninstall.sh'), '--root', linked, '--purge', '--yes'])
            : await swarmNode(['uninstall', '--root', linked, '--purge', '--yes'], { env: { SVC_BASE_URL: GONE } });
        rmSync(linked);
        expect(purged.exitCode, purged.stderr).toBe(0);
        expect(purged.stdout + purged.stderr, purged.stderr).toContain(`$ kill ${daemon.pid}`);
        expect((await daemon.child).exitCode).toBe(0);
        expect(processesWithHome(home)).toEqual([]);
        expect(filesUnder(root).filter((path) => !/^opt\/svc\/swarm-node\/(agents|test-agents)\//.test(path))).toEqual([]);
        const ran = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
          method: 'POST',
          token,
          headers: { 'idempotency-key': randomUUID() },
          // Not queued for a node that may come back: it is offline, and nothing else serves the agent.
          body: { user_id: email, agent_id: 'agent_ops_monitor_004', input: CONTRACT_INPUTS.agent_ops_monitor_004, queue_seconds: 0 },
        });
        expect(ran.body, ran.text).toMatchObject({ code: 'no_node_available' });
        expect(daemon.events('run_pulled')).toEqual([]);
      },
    );

    it('--purge without a terminal needs --yes: exit 2 naming it, nothing removed', async () => {
      const root = await installedRoot();
      seedDatabase(root);
      const before = snapshot(root);
      for (const args of [
        ['uninstall', '--root', root, '--purge'],
        ['--json', 'uninstall', '--root', root, '--purge'],
      ]) {
        const result = await swarmNode(args);
        expect(result.exitCode, result.stdout + result.stderr).toBe(2);
        const remedy = args[0] === '--json' ? result.json.error.remedy : result.stderr;
        expect(remedy).toContain('swarm-node uninstall --purge --yes');
        expect(snapshot(root)).toEqual(before);
      }
    });

    it('--purge in a terminal asks first: no (the default) keeps everything, yes removes it', async () => {
      const root = await installedRoot();
      seedDatabase(root);
      const before = snapshot(root);
      const declined = spawnSwarmNodePty(['uninstall', '--root', root, '--purge'], { NO_COLOR: '1' });
      sessions.push(declined);
      await declined.waitFor(`Delete ${join(homeOf(root), 'var')}, ${join(homeOf(root), 'etc', 'credentials.json')} and node `);
      // The node at the service too (the line wraps at the prompt's width).
      await declined.waitFor(/\(from your nodes at the\s+service\) for good\?/);
      await declined.waitFor('(y/N)');
      declined.press(KEY.enter);
      expect((await declined.waitForExit()).exitCode).toBe(1);
      expect(declined.screen()).toContain('not confirmed: nothing was removed');
      expect(snapshot(root)).toEqual(before);

      const confirmed = spawnSwarmNodePty(['uninstall', '--root', root, '--purge'], { NO_COLOR: '1' });
      sessions.push(confirmed);
      await confirmed.waitFor('(y/N)');
      await confirmed.typeLine('y');
      expect((await confirmed.waitForExit()).exitCode).toBe(0);
      expect(filesUnder(root)).toEqual([]);
    });

    it('--dry-run lists what would go and removes nothing', async () => {
      const root = await installedRoot();
      const before = snapshot(root);
      const result = await swarmNode(['uninstall', '--root', root, '--purge', '--dry-run']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(result.stdout).toContain(`- ${join(root, 'etc/systemd/system/svc-swarm-node.service')}`);
      expect(result.stdout).toContain(`- ${join(homeOf(root), 'etc', 'credentials.json')}`);
      expect(snapshot(root)).toEqual(before);
    });

    it('leaves a file at the command link that is not ours', async () => {
      const root = await installedRoot();
      const { rmSync, writeFileSync } = await import('node:fs');
      rmSync(join(root, 'usr/local/bin/swarm-node'));
      writeFileSync(join(root, 'usr/local/bin/swarm-node'), '#!/bin/sh\n');
      const result = await swarmNode(['uninstall', '--root', root, '--purge', '--yes']);
      expect(result.exitCode, result.stderr).toBe(0);
      expect(filesUnder(root)).toEqual(['usr/local/bin/swarm-node']);
    });

    it('the generated uninstall.sh does the same in sh: keeps data, or --purge leaves nothing', async () => {
      const keepRoot = await installedRoot();
      seedDatabase(keepRoot);
      seedAgentState(keepRoot);
      const kept = await run('sh', [join(homeOf(keepRoot), 'uninstall.sh'), '--root', keepRoot]);
      expect(kept.exitCode, kept.stderr).toBe(0);
      expect(kept.stderr).toMatch(
        /kept .*config\.json, .*credentials\.json, .*var and the agents' state .*\/var\/lib\/svc-swarm-node-agents .*\/var\/lib\/private\/svc-swarm-node-agents \(pass --purge to remove them\)/,
      );
      expect(filesUnder(keepRoot).filter((path) => !path.startsWith('opt/svc/swarm-node/var/'))).toEqual([
        'opt/svc/swarm-node/etc/config.json',
        'opt/svc/swarm-node/etc/credentials.json',
        ...AGENT_STATE_FILES,
      ]);

      const purgeRoot = await installedRoot();
      seedDatabase(purgeRoot);
      seedAgentState(purgeRoot);
      const refused = await run('sh', [join(homeOf(purgeRoot), 'uninstall.sh'), `--root=${purgeRoot}/`, '--purge']);
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toMatch(/no terminal to confirm it on; add --yes/);
      expect(filesUnder(purgeRoot)).toContain('opt/svc/swarm-node/var/swarm-node.db');
      const purged = await run('sh', [join(homeOf(purgeRoot), 'uninstall.sh'), `--root=${purgeRoot}/`, '--purge', '--yes']);
      expect(purged.exitCode, purged.stderr).toBe(0);
      expect(purged.stderr).toMatch(/not stopping the service: .* is a staging root/);
      // Without Node it does not call the service: it says which node stays listed there, and how it goes.
      expect(purged.stderr).toMatch(
        /node [0-9a-f-]{36} stays in your nodes at the service: remove it there \(signed in, on any host: swarm-node nodes remove [0-9a-f-]{36} --yes\)/,
      );
      expect(filesUnder(purgeRoot)).toEqual([]);
      expect(existsSync(join(purgeRoot, 'opt', 'svc'))).toBe(false);
    });

    it('uninstall.sh --purge in a terminal asks first, as the command does', async () => {
      const root = await installedRoot();
      const before = snapshot(root);
      const script = join(homeOf(root), 'uninstall.sh');
      const declined = spawnPty('/bin/sh', [script, '--root', root, '--purge'], {});
      sessions.push(declined);
      await declined.waitFor('for good? A later install then needs a new deploy token. [y/N]');
      await declined.typeLine('n');
      expect((await declined.waitForExit()).exitCode).toBe(1);
      expect(snapshot(root)).toEqual(before);

      const confirmed = spawnPty('/bin/sh', [script, '--root', root, '--purge'], {});
      sessions.push(confirmed);
      await confirmed.waitFor('[y/N]');
      await confirmed.typeLine('y');
      expect((await confirmed.waitForExit()).exitCode).toBe(0);
      expect(filesUnder(root)).toEqual([]);
    });

    it('uninstall.sh refuses unknown options and changes nothing', async () => {
      const root = await installedRoot();
      const before = snapshot(root);
      const result = await run('sh', [join(homeOf(root), 'uninstall.sh'), '--root', root, '--purgeall']);
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toMatch(/unknown option: --purgeall/);
      expect(snapshot(root)).toEqual(before);
    });
  });

  // docs/operations.md "Ephemeral nodes": a real daemon of a node installed --ephemeral --uninstall-after takes one
  // run, reports it, removes itself from its user's nodes, exits 8 (which the unit does not restart) and leaves no
  // file of the install.
  it('an ephemeral node takes one run, reports it, removes itself, exits 8 and, with --uninstall-after, its install', async () => {
    const email = uniqueEmail('ephemeral');
    const { deploy_token } = await activatedSession(service.baseUrl, email);
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const env = { SVC_BASE_URL: service.baseUrl, SVC_DEPLOY_TOKEN: deploy_token };
    // Bad input spends nothing: the same token installs right after.
    const refused = tempDir('ephemeral-refused-');
    const misuse = await swarmNode(['install', '--root', refused, '--uninstall-after'], { env });
    expect(misuse.exitCode).toBe(2);
    expect(misuse.stderr).toContain('--uninstall-after is only for an ephemeral node');
    expect(filesUnder(refused)).toEqual([]);

    const root = tempDir('ephemeral-root-');
    const installed = await swarmNode(['install', '--root', root, '--ephemeral', '--uninstall-after', '--json'], { env });
    expect(installed.exitCode, installed.stderr).toBe(0);
    const home = homeOf(root);
    const node = { home, env: { SWARM_NODE_HOME: home, SVC_BASE_URL: service.baseUrl, NO_COLOR: '1', SWARM_AGENT_ISOLATION: 'none' } };
    installTestAgents(node);
    const bin = join(home, 'current', 'bin', 'swarm-node.js');
    const login = await run('node', [bin, 'login', '--token-stdin'], { env: node.env, input: `${token}\n` });
    expect(login.exitCode, login.stderr).toBe(0);
    const registered = await run('node', [bin, 'register', 'agent_ops_monitor_004', ...contractInputFlags('agent_ops_monitor_004')], {
      env: node.env,
    });
    expect(registered.exitCode, registered.stderr).toBe(0);
    const status = await run('node', [bin, 'status', '--json'], { env: node.env });
    expect(JSON.parse(status.stdout).node).toMatchObject({ node_id: installed.json.node_id, ephemeral: true });

    // The unit's ExecStopPost after any stop but an exit 8 (a restart, an upgrade) changes nothing.
    const beforeHook = snapshot(root);
    const hook = await run('node', [bin, 'uninstall', '--if-retired-ephemeral'], { env: { ...node.env, EXIT_STATUS: '0' } });
    expect(hook.exitCode, hook.stderr).toBe(0);
    expect(snapshot(root)).toEqual(beforeHook);

    const daemon = DaemonProcess.start(node, FAST, bin);
    const fleet = () => httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token });
    await waitFor(async () => ((await fleet()).body.nodes[0]?.online === true ? true : undefined), 'the ephemeral node online');
    expect((await fleet()).body.nodes[0]).toMatchObject({
      node_id: installed.json.node_id,
      ephemeral: true,
      agents: ['agent_ops_monitor_004'],
    });
    const ran = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token,
      headers: { 'idempotency-key': randomUUID() },
      body: { user_id: email, agent_id: 'agent_ops_monitor_004', input: CONTRACT_INPUTS.agent_ops_monitor_004 },
    });
    expect(ran.status, ran.text).toBe(200);
    expect(ran.body).toMatchObject({ status: 'succeeded', node_id: installed.json.node_id, charged_cents: 4, balance_cents: 96 });

    expect((await daemon.child).exitCode).toBe(8);
    expect(daemon.events('run_pulled')).toHaveLength(1);
    expect(daemon.events('node_retired')).toEqual([
      expect.objectContaining({ node_id: installed.json.node_id, agents_withdrawn: 'agent_ops_monitor_004' }),
    ]);
    expect(daemon.events('install_removed')).toHaveLength(1);
    expect(daemon.stderr).toContain('took its one run and removed itself');
    // Nothing of the node is left (its credentials, database, releases, units, link); what the operator put in its
    // home (the test's agent bundles and their log) is not install's to remove.
    expect(filesUnder(root).filter((path) => !/^opt\/svc\/swarm-node\/(agents|test-agents)\//.test(path))).toEqual([]);
    expect(filesUnder(root).length).toBeGreaterThan(0);
    expect((await fleet()).body.nodes).toEqual([]);
    const wallet = await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token });
    expect(wallet.body).toMatchObject({ balance_cents: 96 });
  });
});
