// docs/operations.md "What install does, in order": `swarm-node install` (the built binary) into a scratch --root
// against the real svc-api.
import { chmodSync, existsSync, mkdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { unitOfRelease } from '../../src/node/install/unit-file.js';
import { MovableClock } from '../helpers/clock.js';
import { activatedSession, fundWallet } from '../helpers/funnel.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import { REPO_ROOT, useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { filesUnder, homeOf, mode, run, snapshot, swarmNode, writeTokenFile } from './support.js';

const VERSION = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version as string;

describe('swarm-node install', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock });

  const deployToken = async () => (await activatedSession(service.baseUrl, uniqueEmail('install'))).deploy_token;
  const install = (root: string, args: string[] = [], env: Record<string, string | undefined> = {}) =>
    swarmNode(['install', '--root', root, ...args], { env: { SVC_BASE_URL: service.baseUrl, ...env } });

  describe('a first install', () => {
    let root: string;
    let token: string;
    let first: Awaited<ReturnType<typeof install>>;

    beforeAll(async () => {
      root = tempDir('install-root-');
      token = await deployToken();
      first = await install(root, ['--deploy-token-file', writeTokenFile(token)]);
    });

    it('enrolls and lays out the release, current, config, credentials, var, unit, link and uninstall.sh', () => {
      expect(first.exitCode, first.stderr).toBe(0);
      const home = homeOf(root);
      expect(readlinkSync(join(home, 'current'))).toBe(`releases/${VERSION}`);
      for (const file of ['bin/swarm-node.js', 'dist/swarm-node.js', 'package.json', 'systemd/svc-swarm-node.service']) {
        expect(existsSync(join(home, 'releases', VERSION, file)), file).toBe(true);
      }
      expect(readlinkSync(join(home, 'releases', VERSION, 'bin', 'swarm-node'))).toBe('swarm-node.js');
      expect(existsSync(join(home, 'releases', VERSION, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'))).toBe(
        true,
      );
      // Only what runs: not the addon's C sources or build objects.
      expect(existsSync(join(home, 'releases', VERSION, 'node_modules', 'better-sqlite3', 'deps'))).toBe(false);
      expect(existsSync(join(home, 'releases', VERSION, 'node_modules', 'better-sqlite3', 'src'))).toBe(false);

      const config = JSON.parse(readFileSync(join(home, 'etc', 'config.json'), 'utf8'));
      expect(config).toMatchObject({ base_url: service.baseUrl, wallet_url: expect.any(String), node_id: expect.any(String) });
      const credentials = JSON.parse(readFileSync(join(home, 'etc', 'credentials.json'), 'utf8'));
      expect(credentials.node).toMatchObject({ node_id: config.node_id, tier_id: 'svc_starter_agents' });
      expect(service.db.prepare('SELECT COUNT(*) AS n FROM nodes WHERE node_id = ?').get(config.node_id)).toEqual({ n: 1 });

      expect(statSync(join(home, 'var')).isDirectory()).toBe(true);
      expect(readFileSync(join(root, 'etc/systemd/system/svc-swarm-node.service'), 'utf8')).toBe(unitOfRelease(REPO_ROOT));
      // Relative links: they resolve inside the scratch root, and the same on the host.
      expect(readlinkSync(join(root, 'usr/local/bin/swarm-node'))).toBe('../../../opt/svc/swarm-node/current/bin/swarm-node');
      expect(realpathSync(join(root, 'usr/local/bin/swarm-node'))).toBe(
        realpathSync(join(home, 'releases', VERSION, 'bin', 'swarm-node.js')),
      );
      expect(existsSync(join(home, 'uninstall.sh'))).toBe(true);
    });

    it('creates credentials 0600, var/ 0711, the environment-free unit 0644 and uninstall.sh 0755', () => {
      const home = homeOf(root);
      expect(mode(join(home, 'etc', 'credentials.json'))).toBe(0o600);
      expect(mode(join(home, 'var'))).toBe(0o711);
      expect(mode(join(root, 'etc/systemd/system/svc-swarm-node.service'))).toBe(0o644);
      expect(mode(join(home, 'uninstall.sh'))).toBe(0o755);
      expect(mode(join(home, 'etc', 'config.json'))).toBe(0o644);
      expect(existsSync(join(home, 'etc', 'environment'))).toBe(false);
    });

    it('never writes the deploy token, and never prints it', () => {
      for (const path of filesUnder(root)) {
        const full = join(root, path);
        if (statSync(full, { throwIfNoEntry: false })?.isFile()) expect(readFileSync(full).includes(token), path).toBe(false);
      }
      expect(first.stdout + first.stderr).not.toContain(token);
    });

    it('says that the service was not started, and why', () => {
      expect(first.stderr).toMatch(/not starting the service: the install root is a staging directory/);
      expect(first.stdout).toMatch(new RegExp(`installed swarm-node ${VERSION.replace(/\./g, '\\.')} under ${root}`));
    });

    it('runs as installed: the release loads its own better-sqlite3, and the installed binary answers', async () => {
      const release = join(homeOf(root), 'releases', VERSION);
      const sqlite = await run(
        'node',
        [
          '-e',
          "const D = require('better-sqlite3'); process.stdout.write(String(new D(':memory:').prepare('select 41 + 1 AS n').get().n))",
        ],
        { cwd: release },
      );
      expect(sqlite.stdout, sqlite.stderr).toBe('42');
      const version = await run(join(root, 'usr/local/bin/swarm-node'), ['--version']);
      expect(version.stdout.trim(), version.stderr).toBe(VERSION);
    });

    it("keeps the node credential 0600 and never signs in with it: `swarm-node login` on the installed node takes the code mailed to the node's user", async () => {
      const credentials = JSON.parse(readFileSync(join(homeOf(root), 'etc', 'credentials.json'), 'utf8'));
      expect(credentials.node.credential).toMatch(/^svcn_[A-Za-z0-9_-]{43}$/);
      expect(first.stdout + first.stderr).not.toContain(credentials.node.credential);
      const bin = join(root, 'usr/local/bin/swarm-node');
      // No --email off a terminal: the address this node knows (its user's); the code is the inbox's, on stdin.
      const sent = await run(bin, ['--json', 'login', '--send-code']);
      expect(sent.exitCode, sent.stderr + sent.stdout).toBe(0);
      expect(sent.json.email).toBe(credentials.node.user_id);
      const mail = await nextMailTo(credentials.node.user_id, {
        match: (each) => each.text.includes(`reference ${String(sent.json.challenge_id).slice(0, 8)}`),
      });
      const login = await run(bin, ['--json', 'login'], { input: `${signInCodeOf(mail)}\n` });
      expect(login.exitCode, login.stderr + login.stdout).toBe(0);
      expect(login.json).toMatchObject({ sub: credentials.node.user_id, tier: 'svc_starter_agents' });
      expect(login.stdout + login.stderr).not.toContain(credentials.node.credential);
      const signedIn = JSON.parse(readFileSync(join(homeOf(root), 'etc', 'credentials.json'), 'utf8'));
      expect(signedIn.node).toEqual(credentials.node);
      expect(signedIn.jwt.sub).toBe(credentials.node.user_id);
    });

    it("the wizard on the installed node signs in as the node's user with the mailed code (--code-file), then runs here", async () => {
      const bin = join(root, 'usr/local/bin/swarm-node');
      const node = JSON.parse(readFileSync(join(homeOf(root), 'etc', 'credentials.json'), 'utf8')).node;
      // The scratch root stands for the host's /, which every user may traverse: a run under a uid of its own
      // (this test runs as root, so the node isolates each run) reaches var/runs through it.
      chmodSync(root, 0o755);
      await fundWallet(service.baseUrl, node.user_id, 10);
      expect((await run(bin, ['logout'])).exitCode).toBe(0);
      // Signed out, unattended: it names what it needs to sign in, before anything is sent.
      const missing = await run(bin, ['--json', 'wizard', '--agent', 'agent_ops_monitor_004', '--yes', '--no-register']);
      expect(missing.exitCode).toBe(2);
      expect(missing.json.error.missing_flags).toEqual(['--email', '--code-file']);
      const sent = await run(bin, ['--json', 'login', '--email', node.user_id, '--send-code']);
      const mail = await nextMailTo(node.user_id, {
        match: (each) => each.text.includes(`reference ${String(sent.json.challenge_id).slice(0, 8)}`),
      });
      const codeFile = join(tempDir('install-code-'), 'code');
      writeFileSync(codeFile, signInCodeOf(mail));
      const wizard = await run(bin, [
        '--json',
        'wizard',
        '--email',
        node.user_id,
        '--code-file',
        codeFile,
        '--agent',
        'agent_ops_monitor_004',
        '--yes',
        '--no-register',
      ]);
      expect(wizard.exitCode, wizard.stderr + wizard.stdout).toBe(0);
      // The installed node ran the real agent on this host.
      expect(wizard.json).toMatchObject({
        user_id: node.user_id,
        signed_in_now: true,
        node: { node_id: node.node_id, enrolled_now: false },
        run: { status: 'succeeded', charged_cents: 4, output: { host: { hostname: hostname() } } },
      });
      expect(wizard.stderr).toContain(`Using the sign-in code sent to ${node.user_id} earlier`);
    });

    it('a re-run needs no token, changes nothing and says so', async () => {
      const before = snapshot(root);
      const again = await install(root);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^nothing to change/);
      expect(snapshot(root)).toEqual(before);

      const json = await install(root, ['--json']);
      expect(json.json).toMatchObject({ changes: [], enrolled: false, service: { action: 'unchanged' } });
    });

    it('a re-run with the used token still set ignores it and changes nothing', async () => {
      const before = snapshot(root);
      const again = await install(root, [], { SVC_DEPLOY_TOKEN: token });
      expect(again.exitCode, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/already enrolled as node .*the deploy token was not used/);
      expect(snapshot(root)).toEqual(before);
    });

    it('a re-run restores an edited unit and a loosened credentials mode, and says what it changed', async () => {
      const unit = join(root, 'etc/systemd/system/svc-swarm-node.service');
      const shipped = readFileSync(unit, 'utf8');
      writeFileSync(unit, shipped.replace('NoNewPrivileges=yes', 'NoNewPrivileges=no'));
      const credentials = join(homeOf(root), 'etc', 'credentials.json');
      chmodSync(credentials, 0o644);

      const again = await install(root, ['--json']);
      expect(again.exitCode, again.stderr).toBe(0);
      const paths = again.json.changes.map((change: { path: string }) => change.path);
      expect(paths).toEqual(expect.arrayContaining([unit, credentials]));
      expect(again.json.changes).toHaveLength(2);
      // The unit changed, so the service would restart; on a staging root systemctl is skipped and that is said.
      expect(again.json.service).toMatchObject({ action: 'skipped' });
      expect(readFileSync(unit, 'utf8')).toBe(shipped);
      expect(mode(credentials)).toBe(0o600);
    });

    it('--label sets the labels in the config file (the daemon sends them when it starts); a re-run without keeps them; a bad one changes nothing', async () => {
      const configFile = join(homeOf(root), 'etc', 'config.json');
      const labelled = await install(root, ['--json', '--label', 'GPU,linux-x64', '--label', 'zone.eu-1']);
      expect(labelled.exitCode, labelled.stderr).toBe(0);
      expect(labelled.json.changes).toEqual([expect.objectContaining({ path: configFile, detail: 'labels gpu,linux-x64,zone.eu-1' })]);
      const config = readFileSync(configFile, 'utf8');
      expect(JSON.parse(config)).toMatchObject({
        base_url: service.baseUrl,
        node_id: expect.any(String),
        labels: ['gpu', 'linux-x64', 'zone.eu-1'],
      });
      expect((await install(root)).stdout).toMatch(/^nothing to change/);
      const bad = await install(root, ['--label', 'gpu,no way']);
      expect(bad.exitCode).toBe(2);
      expect(bad.stderr).toContain('"no way" is not a label');
      expect(readFileSync(configFile, 'utf8')).toBe(config);
      // What a node reads back: `swarm-node labels` on the installed node.
      const listed = await run(join(root, 'usr/local/bin/swarm-node'), ['--json', 'labels']);
      expect(listed.json, listed.stderr).toMatchObject({ labels: ['gpu', 'linux-x64', 'zone.eu-1'] });
    });
  });

  describe('refuses before anything is written', () => {
    it('a used deploy token: exit 4, a clear error, the root left empty', async () => {
      const token = await deployToken();
      const firstRoot = tempDir('install-root-');
      expect((await install(firstRoot, ['--deploy-token-file', writeTokenFile(token)])).exitCode).toBe(0);

      const root = tempDir('install-root-');
      const result = await install(root, ['--deploy-token-file', writeTokenFile(token)]);
      expect(result.exitCode).toBe(4);
      expect(result.stderr).toMatch(
        /the service refused the deploy token .*unknown, expired, revoked or already used.*nothing was installed/,
      );
      expect(result.stderr).toMatch(
        /Get a fresh deploy token: activate the session again, or sign in and let install or enroll ask the service for one \(.*swarm-node login/,
      );
      expect(result.stdout + result.stderr).not.toContain(token);
      expect(filesUnder(root)).toEqual([]);
    });

    it('an expired deploy token (16 minutes later): exit 4, the root left empty', async () => {
      const token = await deployToken();
      const root = tempDir('install-root-');
      clock.advance(16 * 60 * 1000);
      const result = await install(root, [], { SVC_DEPLOY_TOKEN: token });
      expect(result.exitCode).toBe(4);
      expect(result.stderr).toMatch(/the service refused the deploy token/);
      expect(filesUnder(root)).toEqual([]);
    });

    it('no token and no sign-in on a node that is not enrolled: exit 4, says to sign in or where the token goes', async () => {
      const root = tempDir('install-root-');
      const result = await install(root);
      expect(result.exitCode).toBe(4);
      expect(result.stderr).toMatch(/not enrolled yet, no deploy token was given, and it is not signed in/);
      expect(result.stderr).toMatch(
        new RegExp(
          `Sign in \\(SWARM_NODE_HOME=${root}/opt/svc/swarm-node swarm-node login .*\\), then run the install again.*--deploy-token-file.*SVC_DEPLOY_TOKEN`,
        ),
      );
      expect(filesUnder(root)).toEqual([]);
    });

    it('a token as an argument is refused, in --json as one error document', async () => {
      const root = tempDir('install-root-');
      const result = await install(root, ['--json', '--deploy-token', 'AAAAAAAAAAAAAAAAAAAAAAAA']);
      expect(result.exitCode).toBe(2);
      expect(result.json.error).toMatchObject({ code: 'usage', message: expect.stringMatching(/never taken as an argument/) });
      expect(filesUnder(root)).toEqual([]);
    });

    it('a token file that is missing, or holds something else, is refused without quoting it', async () => {
      const root = tempDir('install-root-');
      const missing = await install(root, ['--deploy-token-file', join(root, 'nope')]);
      expect(missing.exitCode).toBe(2);
      expect(missing.stderr).toMatch(/cannot read the deploy token file .*nope \(ENOENT\)/);

      const junk = 'not a token; rm -rf / <secret>';
      const malformed = await install(root, ['--deploy-token-file', writeTokenFile(junk)]);
      expect(malformed.exitCode).toBe(2);
      expect(malformed.stderr).toMatch(/is not a deploy token/);
      expect(malformed.stderr).not.toContain('secret');
      expect(filesUnder(root)).toEqual([]);
    });

    it('a service that cannot be reached: exit 6, nothing written', async () => {
      const root = tempDir('install-root-');
      const token = await deployToken();
      const result = await swarmNode(['install', '--root', root, '--base-url', 'http://127.0.0.1:1'], { env: { SVC_DEPLOY_TOKEN: token } });
      expect(result.exitCode).toBe(6);
      expect(result.stderr).toMatch(/cannot reach the service/);
      expect(filesUnder(root)).toEqual([]);
    });

    it('--dry-run lists every change, writes nothing and leaves the token unspent', async () => {
      const root = tempDir('install-root-');
      const token = await deployToken();
      const dry = await install(root, ['--dry-run'], { SVC_DEPLOY_TOKEN: token });
      expect(dry.exitCode, dry.stderr).toBe(0);
      expect(filesUnder(root)).toEqual([]);
      const home = homeOf(root);
      for (const path of [
        join(home, 'etc', 'credentials.json'),
        join(home, 'releases', VERSION),
        join(home, 'current'),
        join(home, 'etc', 'config.json'),
        join(root, 'etc/systemd/system/svc-swarm-node.service'),
        join(root, 'usr/local/bin/swarm-node'),
        join(home, 'uninstall.sh'),
      ]) {
        expect(dry.stdout).toContain(`+ ${path}`);
      }
      expect(dry.stdout).toMatch(/would install/);
      // The token was not used: a real install with it still enrolls.
      const real = await install(root, [], { SVC_DEPLOY_TOKEN: token });
      expect(real.exitCode, real.stderr).toBe(0);
    });

    it('a file where the command link goes is refused before enrolling; the token stays unspent', async () => {
      const root = tempDir('install-root-');
      const token = await deployToken();
      mkdirSync(join(root, 'usr/local/bin'), { recursive: true });
      writeFileSync(join(root, 'usr/local/bin/swarm-node'), '#!/bin/sh\n');
      const result = await install(root, [], { SVC_DEPLOY_TOKEN: token });
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toMatch(/usr\/local\/bin\/swarm-node exists and is not a link; it is not ours to replace/);
      expect(filesUnder(root)).toEqual(['usr/local/bin/swarm-node']);
      rmSync(join(root, 'usr/local/bin/swarm-node'));
      expect((await install(root, [], { SVC_DEPLOY_TOKEN: token })).exitCode).toBe(0);
    });

    it('an install that stops after enrolling keeps the enrollment: the re-run needs no token and finishes', async () => {
      const root = tempDir('install-root-');
      // A file where etc/systemd/ should be: nothing to refuse up front, writing the unit fails.
      mkdirSync(join(root, 'etc'), { recursive: true });
      writeFileSync(join(root, 'etc', 'systemd'), '');
      const stopped = await install(root, [], { SVC_DEPLOY_TOKEN: await deployToken() });
      expect(stopped.exitCode).toBe(1);
      expect(stopped.stderr).toMatch(/the install stopped: .*ENOTDIR/);
      expect(stopped.stderr).toMatch(
        new RegExp(
          `The node is enrolled \\(.+\\); fix the cause and re-run swarm-node install --root ${root}( --base-url \\S+)?, which needs no token now`,
        ),
      );
      expect(mode(join(homeOf(root), 'etc', 'credentials.json'))).toBe(0o600);

      rmSync(join(root, 'etc', 'systemd'));
      const finished = await install(root);
      expect(finished.exitCode, finished.stderr).toBe(0);
      expect(existsSync(join(root, 'etc/systemd/system/svc-swarm-node.service'))).toBe(true);
      expect((await install(root)).stdout).toMatch(/^nothing to change/);
    });

    it('a --from that is not a swarm-node package is refused before enrolling', async () => {
      const root = tempDir('install-root-');
      const token = await deployToken();
      const result = await install(root, ['--from', tempDir('not-a-package-')], { SVC_DEPLOY_TOKEN: token });
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toMatch(/is not a swarm-node package: no package.json/);
      expect(filesUnder(root)).toEqual([]);
      expect((await install(root, [], { SVC_DEPLOY_TOKEN: token })).exitCode).toBe(0);
    });
  });

  it('passes proxy variables to the service in etc/environment, 0600', async () => {
    const root = tempDir('install-root-');
    const token = await deployToken();
    const result = await install(root, ['--no-start'], {
      SVC_DEPLOY_TOKEN: token,
      https_proxy: 'http://user:p"w@proxy.internal:3128',
      NO_PROXY: 'localhost,127.0.0.1',
    });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/not starting the service: --no-start was given/);
    const file = join(homeOf(root), 'etc', 'environment');
    expect(mode(file)).toBe(0o600);
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(lines).toEqual(['https_proxy="http://user:p\\"w@proxy.internal:3128"', 'NO_PROXY="localhost,127.0.0.1"']);
  });
});
