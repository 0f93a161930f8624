// The install modules on their own: what systemctl is asked to do (through a recording stand-in for the systemctl
// program, since this machine's systemd is not running), the atomic link switch, the release copy and its digest,
// and the service environment file.
import { chmodSync, existsSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { renderEnvironmentFile, proxyVariables } from '../../src/node/install/environment-file.js';
import { settleService } from '../../src/node/install/service-settle.js';
import { INSTALL_PATH } from '../../src/contract/claims.js';
import { installLayout, layoutOfHome, SERVICE_USER, UNIT_NAMES } from '../../src/node/host/location.js';
import { switchLink } from '../../src/node/install/links.js';
import { readPackageSource } from '../../src/node/install/package-source.js';
import type { Change } from '../../src/node/install/plan.js';
import { installedDigest, sourceDigest, writeRelease } from '../../src/node/install/release.js';
import { serviceManager } from '../../src/node/install/systemctl.js';
import { renderUnit, unitOfRelease } from '../../src/node/install/unit-file.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { stagedPackage } from './support.js';

afterAll(() => removeTempDirs());

/** A systemctl that records its arguments, answers is-enabled as told, and fails `restart` when told. */
function recordingSystemctl(options: { enabled: boolean; failRestart?: boolean }): { program: string; calls: () => string[] } {
  const dir = tempDir('systemctl-');
  const log = join(dir, 'calls');
  writeFileSync(log, '');
  const program = join(dir, 'systemctl');
  writeFileSync(
    program,
    `#!/bin/sh
printf '%s\\n' "$*" >> '${log}'
case "$1" in
  is-enabled) ${options.enabled ? 'exit 0' : 'exit 1'} ;;
  restart) ${options.failRestart ? "echo 'Job for svc-swarm-node.service failed' >&2; exit 1" : 'exit 0'} ;;
esac
exit 0
`,
  );
  chmodSync(program, 0o755);
  return { program, calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

const unitFile = '/etc/systemd/system/svc-swarm-node.service';
const agentUnitFile = '/etc/systemd/system/svc-swarm-node-agent@.service';
const unitFiles = [unitFile, '/etc/systemd/system/svc-swarm-node-agent.socket', agentUnitFile];
const change = (path: string, restart: boolean): Change => ({ action: 'update', path, detail: '', restart });

describe('systemctl after install', () => {
  it('a unit not yet enabled: daemon-reload, then enable --now', async () => {
    const systemctl = recordingSystemctl({ enabled: false });
    const services = serviceManager({ noStart: false, onHost: true, systemdRunning: true, systemctl: systemctl.program });
    const outcome = await settleService(services, [change(unitFile, true)], unitFiles);
    expect(outcome).toEqual({ action: 'started', warnings: [] });
    expect(systemctl.calls()).toEqual([
      'is-enabled --quiet svc-swarm-node.service',
      'daemon-reload',
      'enable --now svc-swarm-node-agent.socket svc-swarm-node-egress-agent.socket svc-swarm-node.service',
    ]);
  });

  it("a named node's units (issue 18 item 4): enable, restart and the is-enabled check name gpu's, never the default node's", async () => {
    const systemctl = recordingSystemctl({ enabled: false });
    const layout = installLayout('/', 'gpu');
    const services = serviceManager({
      noStart: false,
      onHost: true,
      systemdRunning: true,
      systemctl: systemctl.program,
      units: layout.units,
    });
    await settleService(services, [change(layout.unitFile, true)], layout.unitFiles);
    expect(systemctl.calls()).toEqual([
      'is-enabled --quiet svc-swarm-node@gpu.service',
      'daemon-reload',
      'enable --now svc-swarm-node-agent-gpu.socket svc-swarm-node-egress-agent-gpu.socket svc-swarm-node@gpu.service',
    ]);
    expect(services.commands.disableNow).toEqual(['disable', '--now', 'svc-swarm-node@gpu.service', 'svc-swarm-node-agent-gpu.socket']);
    expect(services.commands.disableEgress).toEqual(['disable', '--now', 'svc-swarm-node-egress-agent-gpu.socket']);
  });

  it('enabled and nothing changed: no restart', async () => {
    const systemctl = recordingSystemctl({ enabled: true });
    const services = serviceManager({ noStart: false, onHost: true, systemdRunning: true, systemctl: systemctl.program });
    expect(await settleService(services, [change('/opt/svc/swarm-node/uninstall.sh', false)], unitFiles)).toEqual({
      action: 'unchanged',
      warnings: [],
    });
    expect(systemctl.calls()).toEqual(['is-enabled --quiet svc-swarm-node.service']);
  });

  it('enabled, a new release: restart without daemon-reload; an edited unit: daemon-reload first', async () => {
    const release = recordingSystemctl({ enabled: true });
    const services = serviceManager({ noStart: false, onHost: true, systemdRunning: true, systemctl: release.program });
    expect((await settleService(services, [change('/opt/svc/swarm-node/current', true)], unitFiles)).action).toBe('restarted');
    expect(release.calls()).toEqual([
      'is-enabled --quiet svc-swarm-node.service',
      'restart svc-swarm-node-agent.socket svc-swarm-node-egress-agent.socket svc-swarm-node.service',
    ]);

    const unit = recordingSystemctl({ enabled: true });
    const unitServices = serviceManager({ noStart: false, onHost: true, systemdRunning: true, systemctl: unit.program });
    await settleService(unitServices, [change(unitFile, true)], unitFiles);
    expect(unit.calls()).toEqual([
      'is-enabled --quiet svc-swarm-node.service',
      'daemon-reload',
      'restart svc-swarm-node-agent.socket svc-swarm-node-egress-agent.socket svc-swarm-node.service',
    ]);

    // The agent's unit read by systemd at each run's start: an edit of it alone needs the reload too.
    const agentUnit = recordingSystemctl({ enabled: true });
    const agentServices = serviceManager({ noStart: false, onHost: true, systemdRunning: true, systemctl: agentUnit.program });
    await settleService(agentServices, [change(agentUnitFile, true)], unitFiles);
    expect(agentUnit.calls()).toEqual([
      'is-enabled --quiet svc-swarm-node.service',
      'daemon-reload',
      'restart svc-swarm-node-agent.socket svc-swarm-node-egress-agent.socket svc-swarm-node.service',
    ]);
  });

  it('a failing systemctl is a warning, never a failed install', async () => {
    const systemctl = recordingSystemctl({ enabled: true, failRestart: true });
    const services = serviceManager({ noStart: false, onHost: true, systemdRunning: true, systemctl: systemctl.program });
    const outcome = await settleService(services, [change('/opt/svc/swarm-node/current', true)], unitFiles);
    expect(outcome).toEqual({
      action: 'restarted',
      warnings: [
        'systemctl restart svc-swarm-node-agent.socket svc-swarm-node-egress-agent.socket svc-swarm-node.service failed: Job for svc-swarm-node.service failed',
      ],
    });
  });

  it.each([
    [{ noStart: true, onHost: true, systemdRunning: true }, '--no-start was given'],
    [{ noStart: false, onHost: false, systemdRunning: true }, 'the install root is a staging directory, not this host'],
    [{ noStart: false, onHost: true, systemdRunning: false }, 'systemd is not running on this host (/run/systemd/system is absent)'],
  ])('skips systemctl entirely with a reason: %o', async (options, reason) => {
    const systemctl = recordingSystemctl({ enabled: false });
    const services = serviceManager({ ...options, systemctl: systemctl.program });
    expect(await settleService(services, [change(unitFile, true)], unitFiles)).toEqual({ action: 'skipped', reason, warnings: [] });
    expect(systemctl.calls()).toEqual([]);
  });
});

describe('the current link', () => {
  it('is switched by renaming a new link over it: a reader never finds it missing', async () => {
    const dir = tempDir('links-');
    const link = join(dir, 'current');
    symlinkSync('releases/a', link);
    // A second thread reads the link as fast as it can while this one switches it back and forth.
    const reader = new Worker(
      `const { readlinkSync } = require('node:fs');
       const { parentPort, workerData } = require('node:worker_threads');
       let reads = 0, missing = 0, stop = false;
       parentPort.on('message', () => { stop = true; });
       (function loop() {
         for (let i = 0; i < 2000; i += 1) { try { readlinkSync(workerData); reads += 1; } catch { missing += 1; } }
         if (reads + missing === 2000) parentPort.postMessage('reading');
         if (stop) parentPort.postMessage({ reads, missing }); else setImmediate(loop);
       })();`,
      { eval: true, workerData: link },
    );
    // The switching starts once the reader reads (a thread may take a while to start on a loaded machine).
    await new Promise((resolve) => reader.once('message', resolve));
    for (let i = 0; i < 2000; i += 1) switchLink(link, i % 2 === 0 ? 'releases/b' : 'releases/a');
    reader.postMessage('stop');
    const counts = await new Promise<{ reads: number; missing: number }>((resolve) => reader.once('message', resolve));
    await reader.terminate();
    expect(counts.reads).toBeGreaterThan(0);
    expect(counts.missing).toBe(0);
    expect(readlinkSync(link)).toBe('releases/a');
    expect(readdirSync(dir)).toEqual(['current']);
  });
});

describe('a release', () => {
  it('holds the shipped files and only the runtime parts of the external modules', () => {
    const source = readPackageSource(stagedPackage());
    const paths = source.files.map((file) => file.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'bin/swarm-node.js',
        'bin/swarm-node',
        'dist/swarm-node.js',
        'systemd/svc-swarm-node.service',
        'scripts/install.sh',
      ]),
    );
    expect(paths).toEqual(
      expect.arrayContaining([
        'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
        'node_modules/bindings/bindings.js',
        'node_modules/file-uri-to-path/index.js',
      ]),
    );
    expect(
      paths.filter(
        (path) => /better-sqlite3\/(deps|src)\//.test(path) || path.endsWith('.a') || path.startsWith('src/') || path.startsWith('test/'),
      ),
    ).toEqual([]);
  });

  it('is copied whole or not at all, and its digest tells an identical copy from a changed one', () => {
    const source = readPackageSource(stagedPackage());
    const releases = join(tempDir('releases-'), 'releases');
    const target = join(releases, source.version);
    writeRelease(source, target);
    expect(readdirSync(releases)).toEqual([source.version]);
    expect(installedDigest(target)).toBe(sourceDigest(source));
    expect(readlinkSync(join(target, 'bin', 'swarm-node'))).toBe('swarm-node.js');

    writeFileSync(join(target, 'dist', 'swarm-node.js'), '// tampered\n');
    expect(installedDigest(target)).not.toBe(sourceDigest(source));
    writeRelease(source, target);
    expect(installedDigest(target)).toBe(sourceDigest(source));
    expect(readdirSync(releases)).toEqual([source.version]);
  });

  it('a package whose version could escape releases/ is refused', () => {
    const dir = tempDir('bad-version-');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'svc-swarm-node', version: '../../etc' }));
    expect(() => readPackageSource(dir)).toThrow(/no usable version/);
  });
});

describe('layout', () => {
  it('a home under a staging root gives that root back; any other home is refused', () => {
    expect(layoutOfHome('/tmp/stage/opt/svc/swarm-node')).toMatchObject({
      root: '/tmp/stage',
      onHost: false,
      unitFile: '/tmp/stage/etc/systemd/system/svc-swarm-node.service',
    });
    expect(layoutOfHome('/opt/svc/swarm-node')).toMatchObject({ root: '/', onHost: true, binLink: '/usr/local/bin/swarm-node' });
    expect(() => layoutOfHome('/home/dev/.swarm-node')).toThrow(/not an install location/);
    expect(installLayout('/tmp/stage/')).toMatchObject({
      home: '/tmp/stage/opt/svc/swarm-node',
      previousLink: '/tmp/stage/opt/svc/swarm-node/previous',
    });
    expect(existsSync('/tmp/stage')).toBe(false);
    // A named node's home gives its root and name back (a command run from its release acts on it).
    expect(layoutOfHome('/tmp/stage/opt/svc/swarm-node/nodes/gpu')).toMatchObject({
      root: '/tmp/stage',
      name: 'gpu',
      unitFile: '/tmp/stage/etc/systemd/system/svc-swarm-node@gpu.service',
    });
    expect(() => installLayout('/', '../etc')).toThrow(/not a node name/);
  });
});

describe('the systemd unit', () => {
  const template = readFileSync(join(stagedPackage(), 'systemd', 'svc-swarm-node.service'), 'utf8');

  it('is a template whose install path and service user come from their one source', () => {
    expect(template).not.toContain(INSTALL_PATH);
    expect(template).not.toMatch(/^(User|Group)=svc-swarm$/m);
    const unit = unitOfRelease(stagedPackage());
    const lines = unit.split('\n');
    for (const line of [
      `User=${SERVICE_USER}`,
      `Group=${SERVICE_USER}`,
      `Environment=SWARM_NODE_HOME=${INSTALL_PATH}`,
      `EnvironmentFile=-${INSTALL_PATH}/etc/environment`,
      `WorkingDirectory=${INSTALL_PATH}/var`,
      `ExecStartPre=+-${INSTALL_PATH}/current/bin/swarm-node upgrade --pending`,
      `ExecStart=${INSTALL_PATH}/current/bin/swarm-node daemon`,
      `ExecStopPost=-+${INSTALL_PATH}/current/bin/swarm-node uninstall --if-retired-ephemeral`,
      `ReadWritePaths=${INSTALL_PATH}/var`,
    ]) {
      expect(lines, line).toContain(line);
    }
    expect(unit.split(INSTALL_PATH)).toHaveLength(8);
    // Auto-update off (install --no-autoupdate): the daemon's ExecStart says so, and nothing else changes.
    const off = unitOfRelease(stagedPackage(), undefined, undefined, { autoUpdate: false }).split('\n');
    expect(off.filter((line, index) => line !== lines[index])).toEqual([
      `ExecStart=${INSTALL_PATH}/current/bin/swarm-node daemon --no-autoupdate`,
    ]);
    // Nothing of the template is left for systemd: no placeholder, no template note.
    expect(unit).not.toMatch(/\{\{|^#%/m);
    expect(unit.startsWith('# swarm-node daemon:')).toBe(true);
  });

  it('renders a unit without placeholders (an older release, on rollback) as it is, and refuses an unknown name', () => {
    const plain = unitOfRelease(stagedPackage());
    expect(renderUnit(plain)).toBe(plain);
    expect(() => renderUnit(template.replace('{{service_user}}', '{{service_group}}'))).toThrow(/\{\{service_group\}\}/);
  });

  // An installed swarm-node renders the next release's templates when it upgrades to it, and refuses a placeholder it
  // does not know: the templates name only those that released programs (0.1.0 on) fill. What is newer (a named
  // node's lines, --no-autoupdate) is written into the rendered unit by unit-file.ts instead.
  it('names only the placeholders every released swarm-node fills, so an older node can upgrade to this release', () => {
    const released = ['agent_socket', 'agent_user', 'install_path', 'max_runs', 'service_user'];
    for (const name of UNIT_NAMES) {
      const template = readFileSync(join(stagedPackage(), 'systemd', name), 'utf8').replace(/^#%.*\n/gm, '');
      const placeholders = [...template.matchAll(/\{\{(\w+)\}\}/g)].map((match) => match[1]);
      expect(
        placeholders.filter((placeholder) => !released.includes(placeholder!)),
        name,
      ).toEqual([]);
    }
  });
});

describe('the service environment file', () => {
  it('takes the proxy variables that are set, quoted for systemd', () => {
    const variables = proxyVariables({ http_proxy: 'http://a:b\\c@p:1', NO_PROXY: '', HTTPS_PROXY: 'http://"q"', PATH: '/bin' });
    expect(variables).toEqual([
      ['http_proxy', 'http://a:b\\c@p:1'],
      ['HTTPS_PROXY', 'http://"q"'],
    ]);
    expect(renderEnvironmentFile(variables).split('\n').slice(1)).toEqual([
      'http_proxy="http://a:b\\\\c@p:1"',
      'HTTPS_PROXY="http://\\"q\\""',
      '',
    ]);
  });

  it('refuses a value with a line break, which would smuggle in another variable', () => {
    expect(() => proxyVariables({ https_proxy: 'http://p:1\nLD_PRELOAD=/tmp/x.so' })).toThrow(/line break/);
  });
});
