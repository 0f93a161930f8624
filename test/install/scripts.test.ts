// docs/operations.md "With `scripts/install.sh`", "The systemd unit": scripts/install.sh (the host bootstrap),
// shellcheck on it and on the generated uninstall.sh, and systemd-analyze on the installed unit (verify prints
// nothing; security exposure at most 1.5).
import { chmodSync, cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/cli/exit-codes.js';
import { renderUninstallScript } from '../../src/node/install/uninstall-script.js';
import { DEFAULT_AGENT_LIMITS } from '../../src/node/runner/agent-process.js';
import { scaffoldDir } from '../helpers/agent-archives.js';
import { activatedSession, signIn } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { startSvcApi, useSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { filesUnder, homeOf, mode, run, stagedPackage, writeTokenFile } from './support.js';

const AGENT = 'agent_ops_monitor_004';

/** CI installs these with apt-get (.ci/run); a missing one fails the test rather than skipping it. */
async function requireTool(name: string): Promise<void> {
  const found = await run('sh', ['-c', `command -v ${name}`]);
  expect(found.exitCode, `${name} is not installed: apt-get install ${name === 'systemd-analyze' ? 'systemd' : name}`).toBe(0);
}

describe('scripts/install.sh', () => {
  const service = useSvcApi();
  let installSh: string;

  beforeAll(() => {
    // The script as the built package ships it, told to install that package (--from: it never finds one itself).
    installSh = join(stagedPackage(), 'scripts', 'install.sh');
  });

  const token = async () => (await activatedSession(service.baseUrl, uniqueEmail('script'))).deploy_token;
  const installScript = (args: string[], env: Record<string, string | undefined> = {}) =>
    run('bash', [installSh, '--from', stagedPackage(), ...args], { env: { SVC_BASE_URL: service.baseUrl, ...env } });

  it('is clean under shellcheck, and so is the generated uninstall.sh', async () => {
    await requireTool('shellcheck');
    const generated = join(tempDir('uninstall-sh-'), 'uninstall.sh');
    writeFileSync(generated, renderUninstallScript('1.2.3'));
    const named = join(tempDir('uninstall-sh-'), 'uninstall.sh');
    writeFileSync(named, renderUninstallScript('1.2.3', 'gpu'));
    for (const script of [installSh, generated, named]) {
      const result = await run('shellcheck', ['--severity=style', script]);
      expect(result.stdout + result.stderr, script).toBe('');
      expect(result.exitCode).toBe(0);
    }
  });

  it('is a single main call at the end: a truncated download defines functions and runs nothing', () => {
    const text = readFileSync(installSh, 'utf8');
    const lines = text.trimEnd().split('\n');
    expect(lines.at(-1)).toBe('main "$@"');
    expect(text.match(/^main "\$@"$/gm)).toHaveLength(1);
    expect(readFileSync(installSh, 'utf8')).toMatch(/^set -eu$/m);
  });

  it('--dry-run prints every change and makes none, without spending the token', async () => {
    const root = tempDir('script-root-');
    const deployToken = await token();
    const dry = await installScript(['--root', root, '--dry-run'], {
      SVC_DEPLOY_TOKEN: deployToken,
      https_proxy: 'http://proxy.internal:3128',
    });
    expect(dry.exitCode, dry.stderr).toBe(0);
    expect(filesUnder(root)).toEqual([]);
    expect(dry.stderr).toMatch(/dry run: nothing is changed/);
    expect(dry.stderr).toMatch(/proxy variables for the service: https_proxy/);
    expect(dry.stdout).toContain(`+ ${join(homeOf(root), 'etc', 'environment')}`);
    expect(dry.stdout).toContain(`+ ${join(root, 'etc/systemd/system/svc-swarm-node.service')}`);
    expect(dry.stdout + dry.stderr).not.toContain(deployToken);

    const real = await installScript(['--root', root], { SVC_DEPLOY_TOKEN: deployToken });
    expect(real.exitCode, real.stderr).toBe(0);
  });

  it('installs with the token from --token-file, passes proxy variables to the service, and labels and --ephemeral to install', async () => {
    const root = tempDir('script-root-');
    const deployToken = await token();
    const options = ['--label', 'gpu', '--label=zone.eu-1', '--ephemeral', '--uninstall-after'];
    const result = await installScript(['--root', root, '--no-start', '--token-file', writeTokenFile(deployToken), ...options], {
      HTTPS_PROXY: 'http://proxy.internal:3128',
      no_proxy: '127.0.0.1',
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const environment = join(homeOf(root), 'etc', 'environment');
    expect(mode(environment)).toBe(0o600);
    expect(readFileSync(environment, 'utf8')).toMatch(/^HTTPS_PROXY="http:\/\/proxy\.internal:3128"\nno_proxy="127\.0\.0\.1"\n$/m);
    expect(readFileSync(join(root, 'etc/systemd/system/svc-swarm-node.service'), 'utf8')).toContain(
      'EnvironmentFile=-/opt/svc/swarm-node/etc/environment',
    );
    expect(mode(join(homeOf(root), 'etc', 'credentials.json'))).toBe(0o600);
    expect(JSON.parse(readFileSync(join(homeOf(root), 'etc', 'config.json'), 'utf8')).labels).toEqual(['gpu', 'zone.eu-1']);
    expect(JSON.parse(readFileSync(join(homeOf(root), 'etc', 'credentials.json'), 'utf8')).node).toMatchObject({
      ephemeral: true,
      uninstall_after: true,
    });

    // Re-run: no token, nothing to change.
    const again = await installScript(['--root', root, '--no-start'], { HTTPS_PROXY: 'http://proxy.internal:3128', no_proxy: '127.0.0.1' });
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^nothing to change/);
  });

  it('a used token fails clearly and writes nothing', async () => {
    const deployToken = await token();
    expect((await installScript(['--root', tempDir('script-root-')], { SVC_DEPLOY_TOKEN: deployToken })).exitCode).toBe(0);
    const root = tempDir('script-root-');
    const result = await installScript(['--root', root], { SVC_DEPLOY_TOKEN: deployToken });
    expect(result.exitCode).toBe(4);
    expect(result.stderr).toMatch(/the service refused the deploy token/);
    expect(filesUnder(root)).toEqual([]);
  });

  it('refuses the token as an argument, and unknown options', async () => {
    const root = tempDir('script-root-');
    for (const args of [['--token', 'abc'], ['--deploy-token=abc'], ['--bogus']]) {
      const result = await installScript(['--root', root, ...args]);
      expect(result.exitCode, args.join(' ')).toBe(2);
    }
    expect((await installScript(['--token', 'abc'])).stderr).toMatch(/never taken as an argument/);
    expect(filesUnder(root)).toEqual([]);
  });

  it('refuses a Node.js older than 20.18 before doing anything', async () => {
    const root = tempDir('script-root-');
    const bin = tempDir('old-node-');
    writeFileSync(join(bin, 'node'), '#!/bin/sh\necho v18.19.0\n');
    chmodSync(join(bin, 'node'), 0o755);
    const result = await run('bash', [installSh, '--from', stagedPackage(), '--root', root], {
      env: { PATH: `${bin}:/usr/bin:/bin`, SVC_DEPLOY_TOKEN: await token() },
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/Node\.js 20\.18 or newer is needed; .* is 18\.19\.0/);
    expect(filesUnder(root)).toEqual([]);
  });

  it('needs root to install on the host itself', async () => {
    // As nobody, without --root: refused before any check that could write. (A copy nobody can read.)
    const dir = tempDir('nobody-');
    chmodSync(dir, 0o755);
    cpSync(installSh, join(dir, 'install.sh'));
    chmodSync(join(dir, 'install.sh'), 0o755);
    const result = await run('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'bash', join(dir, 'install.sh')], {
      env: { SVC_DEPLOY_TOKEN: 'x'.repeat(43) },
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/installing on this host needs root/);
  });
});

const MiB = 1024 * 1024;

/** systemd-analyze security of a template unit (through an instance of it, `run`), within `threshold` tenths. */
async function templateExposure(template: string, threshold: number): Promise<number> {
  const name = basename(template).replace('@.', '@run.');
  const instance = join(tempDir('template-unit-'), name);
  cpSync(template, instance);
  const result = await run('systemd-analyze', ['security', '--offline=true', `--threshold=${threshold}`, instance]);
  expect(result.exitCode, result.stdout).toBe(0);
  const overall = new RegExp(`Overall exposure level for ${name.replace(/[.@]/g, '\\$&')}: (\\d+\\.\\d+)`).exec(result.stdout);
  expect(overall, result.stdout).not.toBeNull();
  return Number(overall![1]);
}

describe('systemd/ units: the daemon, the agent socket and the agent run service', () => {
  let root: string;
  let unit: string;

  beforeAll(async () => {
    const service = await startSvcApi();
    try {
      root = tempDir('unit-root-');
      const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('unit'));
      const result = await run('node', [join(stagedPackage(), 'bin', 'swarm-node.js'), 'install', '--root', root], {
        env: { SVC_BASE_URL: service.baseUrl, SVC_DEPLOY_TOKEN: deploy_token },
      });
      expect(result.exitCode, result.stderr).toBe(0);
      // And a named node beside it (docs/operations.md "Several nodes on one host"), whose units are files of their
      // own.
      const named = await run('node', [join(stagedPackage(), 'bin', 'swarm-node.js'), 'install', '--root', root, '--name', 'gpu'], {
        env: {
          SVC_BASE_URL: service.baseUrl,
          SVC_DEPLOY_TOKEN: (await activatedSession(service.baseUrl, uniqueEmail('unit-gpu'))).deploy_token,
        },
      });
      expect(named.exitCode, named.stderr).toBe(0);
      unit = join(root, 'etc/systemd/system/svc-swarm-node.service');
      // verify resolves the units ours depends on (network-online.target, …) inside --root.
      mkdirSync(join(root, 'usr/lib/systemd'), { recursive: true });
      cpSync('/usr/lib/systemd/system', join(root, 'usr/lib/systemd/system'), { recursive: true });
    } finally {
      await service.close();
    }
  });
  afterAll(() => removeTempDirs());

  it.each([
    'svc-swarm-node.service',
    'svc-swarm-node-agent.socket',
    'svc-swarm-node-agent@run.service',
    'svc-swarm-node@gpu.service',
    'svc-swarm-node-agent-gpu.socket',
    'svc-swarm-node-agent-gpu@run.service',
    'svc-swarm-node-egress-agent.socket',
    'svc-swarm-node-egress-agent@run.service',
    'svc-swarm-node-egress-agent-gpu.socket',
    'svc-swarm-node-egress-agent-gpu@run.service',
  ])('systemd-analyze verify prints nothing for the installed %s (its ExecStart resolves through current)', async (name) => {
    await requireTool('systemd-analyze');
    const result = await run('systemd-analyze', ['verify', `--root=${root}`, name]);
    expect(result.stdout + result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it('systemd-analyze verify would complain about a broken ExecStart (the check above can fail)', async () => {
    const broken = readFileSync(unit, 'utf8').replace('/current/bin/swarm-node daemon', '/current/bin/no-such-binary daemon');
    writeFileSync(join(root, 'etc/systemd/system/svc-swarm-broken.service'), broken);
    const result = await run('systemd-analyze', ['verify', `--root=${root}`, 'svc-swarm-broken.service']);
    expect(result.stdout + result.stderr).toMatch(/no-such-binary/);
  });

  it('systemd-analyze security --offline scores the exposure at most 1.5', async () => {
    await requireTool('systemd-analyze');
    const result = await run('systemd-analyze', ['security', '--offline=true', '--threshold=15', unit]);
    expect(result.exitCode, result.stdout).toBe(0);
    const overall = /Overall exposure level for svc-swarm-node\.service: (\d+\.\d+)/.exec(result.stdout);
    expect(overall, result.stdout).not.toBeNull();
    const exposure = Number(overall![1]);
    expect(exposure).toBeLessThanOrEqual(1.5);
    // The settings docs/operations.md "The systemd unit" names are all present.
    const text = readFileSync(unit, 'utf8');
    for (const line of [
      'User=svc-swarm',
      'ExecStart=/opt/svc/swarm-node/current/bin/swarm-node daemon',
      // Auto-update's privileged half, outside the sandbox (docs/operations.md "Auto-update").
      'ExecStartPre=+-/opt/svc/swarm-node/current/bin/swarm-node upgrade --pending',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ReadWritePaths=/opt/svc/swarm-node/var',
      'ProtectHome=yes',
      'PrivateTmp=yes',
      'PrivateDevices=yes',
      'PrivateMounts=yes',
      'ProtectKernelTunables=yes',
      'ProtectKernelModules=yes',
      'ProtectKernelLogs=yes',
      'ProtectControlGroups=yes',
      'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX',
      'SystemCallFilter=@system-service',
      'SystemCallArchitectures=native',
      'CapabilityBoundingSet=',
      'UMask=0077',
      'Restart=on-failure',
      // A node removed from its user's nodes exits 8 for good (docs/api.md "Removing a node"): not restarted.
      `RestartPreventExitStatus=${EXIT_CODES.node_removed}`,
      'StartLimitBurst=5',
    ]) {
      expect(text.split('\n'), line).toContain(line);
    }
    expect(text).not.toMatch(/^MemoryDenyWriteExecute=/m);
  });

  it("an agent run is a service of its own: root with only the capabilities to run the agent as its uid, no network, etc/ and var/ out of sight but var/agents, the runner's limits, exposure at most 2.3", async () => {
    await requireTool('systemd-analyze');
    const agentUnit = join(root, 'etc/systemd/system/svc-swarm-node-agent@.service');
    const exposure = await templateExposure(agentUnit, 23);
    // 0.5 when the run was a dynamic user with no capability; what the score rates now is agent-exec before the agent
    // starts (root, CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL, no PrivateUsers=: 1.7), and its mount of the agent's
    // state image (CAP_SYS_ADMIN, @mount, the loop devices, the host's /dev: 2.3), docs/operations.md "Agent isolation".
    expect(exposure).toBeLessThanOrEqual(2.3);
    const lines = readFileSync(agentUnit, 'utf8').split('\n');
    const limits = DEFAULT_AGENT_LIMITS;
    for (const line of [
      'ExecStart=/opt/svc/swarm-node/current/bin/swarm-node agent-exec',
      // What agent-exec needs to run the agent as its uid (runner/agent-ids.ts, keyed by this node's home) in a state
      // directory of its own, and to stop it; nothing else.
      'Environment=SWARM_NODE_HOME=/opt/svc/swarm-node',
      'StateDirectory=svc-swarm-node-agents',
      'StateDirectory=svc-swarm-node',
      'StateDirectoryMode=0711',
      'CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL CAP_SYS_ADMIN',
      'AmbientCapabilities=',
      // The state image's mount (runner/unit-state-image.ts): the loop devices and no other device.
      'DevicePolicy=closed',
      'DeviceAllow=/dev/loop-control rw',
      'DeviceAllow=block-loop rw',
      'SystemCallFilter=@mount',
      'PrivateMounts=yes',
      'SystemCallFilter=setuid setgroups chown fchown fchownat lchown',
      // The figures bubblewrap's cgroups hold elsewhere, from their one source.
      `MemoryMax=${limits.memoryBytes / MiB}M`,
      'MemorySwapMax=0',
      `TasksMax=${limits.processes}`,
      `CPUQuota=${limits.cpuPercent}%`,
      'OOMPolicy=continue',
      'ReadOnlyPaths=/tmp /var/tmp',
      `TemporaryFileSystem=/tmp/run:size=${limits.tmpBytes / MiB}M,mode=1777,nosuid,nodev`,
      'Environment=TMPDIR=/tmp/run',
      `TemporaryFileSystem=/dev/shm:size=${limits.tmpBytes / MiB}M,mode=1777,nosuid,nodev`,
      `TemporaryFileSystem=/tmp/artifacts:size=${limits.artifactsBytes / MiB}M,nr_inodes=10000,mode=1777,nosuid,nodev,noexec`,
      'Environment=ARTIFACTS_DIRECTORY=/tmp/artifacts',
      'PrivateNetwork=yes',
      'IPAddressAllow=localhost',
      'IPAddressDeny=any',
      'StandardInput=socket',
      'InaccessiblePaths=-/opt/svc/swarm-node/etc',
      // var/ is an empty read-only tmpfs for the agent but for the uploaded bundles it runs from.
      'TemporaryFileSystem=/opt/svc/swarm-node/var:ro',
      'BindReadOnlyPaths=-/opt/svc/swarm-node/var/agents',
      'PrivateTmp=yes',
      'NoNewPrivileges=yes',
    ]) {
      expect(lines, line).toContain(line);
    }
    expect(lines.filter((line) => /^(User|Group|DynamicUser|PrivateUsers|CapabilityBoundingSet)=/.test(line))).toEqual([
      'CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL CAP_SYS_ADMIN',
    ]);
    // Node gpu's agents: uids keyed by its own home, its own state directory.
    const gpuLines = readFileSync(join(root, 'etc/systemd/system/svc-swarm-node-agent-gpu@.service'), 'utf8').split('\n');
    for (const line of [
      'Environment=SWARM_NODE_HOME=/opt/svc/swarm-node/nodes/gpu',
      'StateDirectory=svc-swarm-node-agents-gpu',
      'StateDirectory=svc-swarm-node',
    ]) {
      expect(gpuLines, line).toContain(line);
    }
    const socket = readFileSync(join(root, 'etc/systemd/system/svc-swarm-node-agent.socket'), 'utf8').split('\n');
    for (const line of ['ListenStream=/run/svc-swarm-node/agent.sock', 'Accept=yes', 'SocketUser=svc-swarm', 'SocketMode=0600']) {
      expect(socket, line).toContain(line);
    }
    // The daemon's own unit keeps no privilege to switch users: systemd does that for it.
    expect(readFileSync(unit, 'utf8')).not.toMatch(/CAP_SET[UG]ID/);
  });

  it("an egress agent's run is the agent unit but for its network: the host's, no IP filter; exposure at most 2.9", async () => {
    await requireTool('systemd-analyze');
    const egressUnit = join(root, 'etc/systemd/system/svc-swarm-node-egress-agent@.service');
    // What it gives up against the agent unit (2.3): PrivateNetwork= and the IP address filter (docs/operations.md).
    expect(await templateExposure(egressUnit, 29)).toBeLessThanOrEqual(2.9);
    const settings = (file: string) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => !line.startsWith('#') && !line.startsWith('Description='));
    const network = /^(PrivateNetwork|IPAddressAllow|IPAddressDeny)=/;
    const agentSettings = settings(join(root, 'etc/systemd/system/svc-swarm-node-agent@.service'));
    expect(agentSettings.filter((line) => network.test(line))).toEqual([
      'PrivateNetwork=yes',
      'IPAddressAllow=localhost',
      'IPAddressDeny=any',
    ]);
    expect(settings(egressUnit)).toEqual(agentSettings.filter((line) => !network.test(line)));
    expect(settings(egressUnit)).toContain('RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX');
    const socket = readFileSync(join(root, 'etc/systemd/system/svc-swarm-node-egress-agent.socket'), 'utf8').split('\n');
    for (const line of ['ListenStream=/run/svc-swarm-node/agent-egress.sock', 'Accept=yes', 'SocketUser=svc-swarm', 'SocketMode=0600']) {
      expect(socket, line).toContain(line);
    }
    // The daemon starts with both sockets.
    expect(readFileSync(unit, 'utf8').split('\n')).toEqual(
      expect.arrayContaining([
        'After=network-online.target svc-swarm-node-agent.socket svc-swarm-node-egress-agent.socket',
        'Wants=network-online.target svc-swarm-node-agent.socket svc-swarm-node-egress-agent.socket',
      ]),
    );
  });

  it('install --no-autoupdate turns auto-update off in the config and in the unit, which systemd-analyze still verifies; a re-run keeps it', async () => {
    await requireTool('systemd-analyze');
    const install = (args: string[]) =>
      run('node', [join(stagedPackage(), 'bin', 'swarm-node.js'), 'install', '--root', root, '--no-start', ...args]);
    const off = await install(['--no-autoupdate']);
    expect(off.exitCode, off.stderr).toBe(0);
    const home = join(root, 'opt/svc/swarm-node');
    expect(JSON.parse(readFileSync(join(home, 'etc/config.json'), 'utf8'))).toMatchObject({ auto_update: 'false' });
    const lines = readFileSync(unit, 'utf8').split('\n');
    expect(lines).toContain('ExecStart=/opt/svc/swarm-node/current/bin/swarm-node daemon --no-autoupdate');
    const verified = await run('systemd-analyze', ['verify', `--root=${root}`, 'svc-swarm-node.service']);
    expect(verified.stdout + verified.stderr).toBe('');
    expect(verified.exitCode).toBe(0);
    // A re-run without the flag changes nothing: the config's auto_update stands, and the unit with it.
    const again = await install(['--json']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect((again.json as { changes: unknown[] }).changes).toEqual([]);
    expect(readFileSync(unit, 'utf8').split('\n')).toContain('ExecStart=/opt/svc/swarm-node/current/bin/swarm-node daemon --no-autoupdate');
  });
});

describe('scripts/upload-agent.sh (the agent upload script)', () => {
  const service = useSvcApi();
  const script = fileURLToPath(new URL('../../scripts/upload-agent.sh', import.meta.url));
  const upload = (args: string[], env: Record<string, string | undefined> = {}, input?: string) =>
    run('sh', [script, ...args], { env: { SVC_BASE_URL: service.baseUrl, ...env }, ...(input === undefined ? {} : { input }) });

  it('is clean under shellcheck', async () => {
    await requireTool('shellcheck');
    const result = await run('shellcheck', ['--severity=style', script]);
    expect(result.stdout + result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it('uploads a bundle with the JWT from a file, stdin or SVC_TOKEN, never from its arguments', async () => {
    const email = uniqueEmail('upload-sh');
    const token = await signIn(service.baseUrl, email);
    const dir = scaffoldDir(AGENT, '1.0.0');
    const fromFile = await upload(['--token-file', writeTokenFile(token), dir]);
    expect(fromFile.exitCode, fromFile.stderr).toBe(0);
    const answer = JSON.parse(fromFile.stdout) as { version: string; created: boolean; current: boolean; digest: string };
    expect(answer).toMatchObject({ agent_id: AGENT, version: '1.0.0', created: true, current: true });
    const listed = await apiClient(service.baseUrl).get(`/v1/swarm/agents/${AGENT}/versions`, token);
    expect(listed.body.current.digest).toBe(answer.digest);

    // An unchanged directory packs to the same bytes (gzip -n, same files and times): the same version, nothing new.
    const again = await upload(['--token-stdin', dir], {}, `${token}\n`);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ digest: answer.digest, created: false });
    // Other contents under the same version are refused: a version is never replaced.
    writeFileSync(join(dir, 'notes.txt'), 'changed\n');
    const changed = await upload(['--token-stdin', dir], {}, `${token}\n`);
    expect(changed.exitCode).toBe(1);
    expect(changed.stderr).toMatch(/version_exists/);

    writeFileSync(join(dir, 'agent.json'), readFileSync(join(dir, 'agent.json'), 'utf8').replace('"1.0.0"', '"1.0.1"'));
    const fromEnv = await upload([dir], { SVC_TOKEN: token });
    expect(fromEnv.exitCode, fromEnv.stderr).toBe(0);
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ version: '1.0.1', created: true });
    expect(fromEnv.stdout + fromEnv.stderr).not.toContain(token);
  });

  it('fails clearly: no JWT (4), a refused JWT (4), a bad bundle (2), no service (6), an unknown option (2)', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('upload-sh-bad'));
    const dir = scaffoldDir(AGENT);
    const none = await upload([dir], { SVC_TOKEN: undefined });
    expect([none.exitCode, none.stderr]).toEqual([4, expect.stringMatching(/no JWT/)]);
    expect((await upload([dir], { SVC_TOKEN: `${token.slice(0, -4)}AAAA` })).exitCode).toBe(4);
    symlinkSync('/etc/passwd', join(dir, 'passwd'));
    const linked = await upload([dir], { SVC_TOKEN: token });
    expect(linked.exitCode).toBe(2);
    expect(linked.stderr).toMatch(/bundle_invalid.*symlink/);
    expect((await upload([dir], { SVC_TOKEN: token, SVC_BASE_URL: 'http://127.0.0.1:9' })).exitCode).toBe(6);
    expect((await upload(['--token', token, dir])).exitCode).toBe(2);
  });
});

describe('scripts/upload-agent.sh over the upload quota', () => {
  const service = useSvcApi({ uploadQuota: { maxVersions: 1 } });
  const script = fileURLToPath(new URL('../../scripts/upload-agent.sh', import.meta.url));

  it('exits 1 saying what to do, not 2 as for a bad bundle', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('upload-sh-quota'));
    const upload = (dir: string) => run('sh', [script, dir], { env: { SVC_BASE_URL: service.baseUrl, SVC_TOKEN: token } });
    expect((await upload(scaffoldDir(AGENT, '1.0.0'))).exitCode).toBe(0);
    const over = await upload(scaffoldDir(AGENT, '1.0.1'));
    expect(over.exitCode).toBe(1);
    expect(over.stderr).toMatch(/upload_quota_exceeded[\s\S]*over your upload quota \(HTTP 413\)/);
  });
});

describe('scripts/install-test-tools.sh (the test tools in one command)', () => {
  const script = fileURLToPath(new URL('../../scripts/install-test-tools.sh', import.meta.url));

  it('is clean under shellcheck, and --check passes on this machine, where .ci/run installed them', async () => {
    await requireTool('shellcheck');
    const lint = await run('shellcheck', ['--severity=style', script]);
    expect(lint.stdout + lint.stderr).toBe('');
    const check = await run('sh', [script, '--check']);
    expect(check.exitCode, check.stderr).toBe(0);
    // Idempotent: run again (as root here), it installs nothing.
    const again = await run('sh', [script]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe('every test tool is installed');
  });

  it('--check on a machine without the tools names the packages and the one command, and npm test stops there', async () => {
    // A PATH of the few programs the script itself uses, none of the tools.
    const bin = tempDir('bare-path-');
    for (const tool of ['sh', 'sed', 'tr', 'grep', 'uname', 'ls', 'id', 'cat']) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
    const check = await run('/usr/bin/sh', [script, '--check'], { env: { PATH: bin } });
    expect(check.exitCode).toBe(1);
    expect(check.stderr).toMatch(/^the test suite needs tools this machine lacks \(packages: shellcheck python3-bandit .*bubblewrap.*\)$/m);
    expect(check.stderr).toContain('install them with: sudo scripts/install-test-tools.sh');
    const manifest = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts.test).toMatch(/^sh scripts\/install-test-tools\.sh --check && /);
  });
});

describe('scripts/fresh-machine.sh (the README lines on a fresh Debian 12 root)', () => {
  // Only checked here: a run builds a root with debootstrap and runs npm ci twice, minutes (docs/operations.md
  // "A fresh machine"), so it is run by hand and its summary quoted, not run by the suite.
  const script = fileURLToPath(new URL('../../scripts/fresh-machine.sh', import.meta.url));

  it('is clean under shellcheck, prints its usage, and refuses an unknown option before doing anything', async () => {
    await requireTool('shellcheck');
    const lint = await run('shellcheck', ['--severity=style', script]);
    expect(lint.stdout + lint.stderr).toBe('');
    expect(lint.exitCode).toBe(0);
    const help = await run('bash', [script, '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/--cache DIR/);
    const bad = await run('bash', [script, '--bogus']);
    expect([bad.exitCode, bad.stderr.trim()]).toEqual([2, 'unknown option: --bogus (see --help)']);
  });
});
