// agent_ops_monitor_004 on this very host: its facts are checked against /proc and statfs read by the test.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { inputSchemaValidator, runAgentProcess } from './agent-process.js';

const AGENT = 'agent_ops_monitor_004';

afterAll(() => removeTempDirs());

interface Finding {
  check: string;
  target: string;
  severity: 'ok' | 'warning' | 'critical';
  message: string;
  value?: number;
}

/** The fstype per mount point as /proc/mounts says, the last mount of a point winning. */
function procMounts(): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
    const [, mount, fstype] = line.split(' ');
    if (mount && fstype) mounts.set(mount.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))), fstype);
  }
  return mounts;
}

describe('agent_ops_monitor_004', () => {
  it('reports load, memory, swap and every real filesystem of this host, each matching what the kernel says', async () => {
    const nodeHome = tempDir('ops-node-home-');
    mkdirSync(join(nodeHome, 'var'));
    writeFileSync(join(nodeHome, 'var', 'swarm-node.db'), Buffer.alloc(12_345));
    const run = await runAgentProcess(AGENT, {}, { nodeHome });
    expect(run.exitCode, run.stderr).toBe(0);
    const out = run.json;
    expect(out.summary).toMatch(/^(ok|warning|critical): /);
    expect(out.status).toMatch(/^(ok|warning|critical)$/);

    expect(out.load.cpus).toBe(cpus().length);
    for (const key of ['one', 'five', 'fifteen']) {
      expect(out.load[key]).toBeGreaterThanOrEqual(0);
      expect(out.load.per_cpu[key]).toBeCloseTo(out.load[key] / out.load.cpus, 1);
    }
    const memTotalKb = Number(/^MemTotal:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]);
    expect(out.memory.total_bytes).toBe(memTotalKb * 1024);
    expect(out.memory.used_percent).toBeGreaterThan(0);
    expect(out.memory.used_percent).toBeLessThanOrEqual(100);
    expect(out.swap).toHaveProperty('total_bytes');

    const mounts = procMounts();
    expect(out.filesystems.map((fs: { mount: string }) => fs.mount)).toContain('/');
    for (const fs of out.filesystems) {
      expect(mounts.get(fs.mount), fs.mount).toBe(fs.fstype);
      expect(['proc', 'sysfs', 'cgroup', 'cgroup2', 'devpts']).not.toContain(fs.fstype);
      if (fs.error) continue;
      const kernel = await statfs(fs.mount);
      expect(fs.size_bytes, fs.mount).toBe(kernel.blocks * kernel.bsize);
      expect(fs.inodes_total, fs.mount).toBe(kernel.files);
      // Used space moves while tests run: it is checked within 1 % of the filesystem.
      expect(Math.abs(fs.used_bytes - (kernel.blocks - kernel.bfree) * kernel.bsize)).toBeLessThanOrEqual(fs.size_bytes / 100);
    }
    const findings = out.findings as Finding[];
    const writable = out.filesystems.filter((fs: { read_only: boolean; error?: string }) => !fs.read_only && !fs.error);
    expect(findings.filter((finding) => finding.check === 'filesystem').map((finding) => finding.target).sort()).toEqual(
      writable.map((fs: { mount: string }) => fs.mount).sort(),
    );
    for (const finding of findings) expect(['ok', 'warning', 'critical']).toContain(finding.severity);

    expect(out.database).toMatchObject({ path: join(nodeHome, 'var', 'swarm-node.db'), size_bytes: 12_345, wal_bytes: null });
    expect(findings.find((finding) => finding.check === 'node_database')).toMatchObject({ severity: 'ok' });

    expect(out.systemd.available).toBe(existsSync('/run/systemd/system'));
    if (!out.systemd.available) expect(findings.some((finding) => finding.check === 'node_service')).toBe(false);
  });

  it('raises a finding when a threshold override puts it over, and the defaults come back without one', async () => {
    const strict = await runAgentProcess(AGENT, {
      thresholds: { load_warning_per_cpu: 0, load_critical_per_cpu: 1_000, disk_warning_percent: 0, disk_critical_percent: 0 },
    });
    expect(strict.exitCode, strict.stderr).toBe(0);
    const strictFindings = strict.json.findings as Finding[];
    expect(strictFindings.find((finding) => finding.check === 'load')!.severity).toBe('warning');
    expect(strictFindings.find((finding) => finding.check === 'filesystem' && finding.target === '/')!.severity).toBe('critical');
    expect(strict.json.status).toBe('critical');
    expect(strict.json.summary).toMatch(/^critical: .*\/ is [\d.]+% full/);
    expect(strict.json.thresholds).toMatchObject({ disk_warning_percent: 0, memory_warning_percent: 85 });

    const lax = await runAgentProcess(AGENT, { thresholds: { load_warning_per_cpu: 1_000, load_critical_per_cpu: 1_000 } });
    expect(lax.exitCode, lax.stderr).toBe(0);
    expect((lax.json.findings as Finding[]).find((finding) => finding.check === 'load')!.severity).toBe('ok');
  });

  it('warns when the node home has no database, and reports none without a node home', async () => {
    const run = await runAgentProcess(AGENT, {}, { nodeHome: tempDir('ops-empty-home-') });
    expect(run.exitCode, run.stderr).toBe(0);
    expect((run.json.findings as Finding[]).find((finding) => finding.check === 'node_database')).toMatchObject({
      severity: 'warning',
      message: expect.stringContaining('no node database at'),
    });
  });

  it('keeps a history in its state: forecasts when a filesystem fills from the recorded runs, and says what changed since the last run', async () => {
    const stateDir = tempDir('ops-state-');
    const first = await runAgentProcess(AGENT, {}, { stateDir });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.json.history).toMatchObject({ runs: 1, kept_between_runs: true });
    expect(first.json.changes).toEqual([]);
    expect(first.json.trends).toEqual({ memory: null, load: null });
    const root = (first.json.filesystems as { mount: string; used_percent: number }[]).find((fs) => fs.mount === '/')!;

    // Ten earlier runs, an hour apart, in which / filled half a point an hour up to now, its status ok and no port
    // open; then a port opens.
    const lines = readFileSync(join(stateDir, 'history.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const now = Date.now();
    const earlier = Array.from({ length: 10 }, (_, i) => ({ ...lines[0], at: now - (10 - i) * 3_600_000, status: 'ok', ports: [], filesystems: { '/': root.used_percent - (10 - i) * 0.5 } }));
    writeFileSync(join(stateDir, 'history.jsonl'), `${earlier.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const run = await runAgentProcess(AGENT, { thresholds: { disk_warning_percent: 0, disk_critical_percent: 0 } }, { stateDir });
      expect(run.exitCode, run.stderr).toBe(0);
      const now2 = (run.json.filesystems as { mount: string; full_forecast?: { rate_percent_per_hour: number; hours_to_full: number; full_at: string } }[]).find((fs) => fs.mount === '/')!;
      expect(now2.full_forecast!.rate_percent_per_hour).toBeCloseTo(0.5, 1);
      expect(now2.full_forecast!.hours_to_full).toBeCloseTo((100 - root.used_percent) / 0.5, -1);
      expect(run.json.history).toMatchObject({ runs: 11 });
      expect(run.json.trends.memory).toMatchObject({ samples: 11 });
      expect(run.json.changes).toContainEqual({ what: 'listening_port', change: 'opened', item: `tcp 127.0.0.1:${port}` });
      expect(run.json.changes).toContainEqual({ what: 'status', change: 'ok → critical', item: 'critical' });
      expect(run.json.status_changed).toMatchObject({ from: 'ok', to: 'critical' });
      expect(run.json.summary).toMatch(/ \d+ changes? since the last run: /);
    } finally {
      server.close();
    }
    // A run with the same status has no status change.
    const again = await runAgentProcess(AGENT, { thresholds: { disk_warning_percent: 0, disk_critical_percent: 0 } }, { stateDir });
    expect(again.json.status_changed).toBeNull();
  });

  it('raises a forecast finding for a filesystem that will be full within a week, critical within a day', async () => {
    const stateDir = tempDir('ops-state-');
    const first = await runAgentProcess(AGENT, {}, { stateDir });
    const root = (first.json.filesystems as { mount: string; used_percent: number }[]).find((fs) => fs.mount === '/')!;
    const sample = JSON.parse(readFileSync(join(stateDir, 'history.jsonl'), 'utf8').trim().split('\n')[0]!) as Record<string, unknown>;
    // Filling fast enough to be full within a few hours.
    const rate = (100 - root.used_percent) / 6;
    const earlier = Array.from({ length: 6 }, (_, i) => ({ ...sample, at: Date.now() - (6 - i) * 3_600_000, filesystems: { '/': root.used_percent - (6 - i) * rate } }));
    writeFileSync(join(stateDir, 'history.jsonl'), `${earlier.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const run = await runAgentProcess(AGENT, {}, { stateDir });
    expect((run.json.findings as Finding[]).find((finding) => finding.check === 'filesystem_forecast' && finding.target === '/')).toMatchObject({ severity: 'critical', message: expect.stringMatching(/^\/ fills [\d.]+ points an hour: full in [\d.]+ hours/) });
    expect(run.json.status).toBe('critical');
  });

  it('forecasts nothing from runs minutes apart, however fast the disk filled between them: a file being written is no trend', async () => {
    const stateDir = tempDir('ops-state-');
    const first = await runAgentProcess(AGENT, {}, { stateDir });
    const root = (first.json.filesystems as { mount: string; used_percent: number }[]).find((fs) => fs.mount === '/')!;
    const sample = JSON.parse(readFileSync(join(stateDir, 'history.jsonl'), 'utf8').trim().split('\n')[0]!) as Record<string, unknown>;
    // Three runs in the last twenty minutes, / five points emptier at each: at that rate it would be full within hours.
    const earlier = [20, 10, 1].map((minutes, i) => ({ ...sample, at: Date.now() - minutes * 60_000, filesystems: { '/': root.used_percent - (3 - i) * 5 } }));
    writeFileSync(join(stateDir, 'history.jsonl'), `${earlier.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const run = await runAgentProcess(AGENT, {}, { stateDir });
    expect(run.exitCode, run.stderr).toBe(0);
    expect((run.json.filesystems as { mount: string; full_forecast?: unknown }[]).find((fs) => fs.mount === '/')!.full_forecast ?? null).toBeNull();
    expect((run.json.findings as Finding[]).filter((finding) => finding.check === 'filesystem_forecast')).toEqual([]);
  });

  it('has no history without a state directory, and says so', async () => {
    const run = await runAgentProcess(AGENT, {});
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.history).toEqual({ runs: 1, kept_between_runs: false });
    expect(run.json.status_changed).toBeNull();
  });

  it('refuses bad thresholds with exit 2, a message naming the key, and nothing on stdout', async () => {
    for (const [thresholds, message] of [
      [{ disk_warning_percent: 95 }, /disk_warning_percent \(95\) is above disk_critical_percent \(90\)/],
      [{ disk_full: 1 }, /unknown key "disk_full"/],
      [{ memory_warning_percent: 'high' }, /memory_warning_percent: must be a number/],
      [{ swap_critical_percent: 101 }, /swap_critical_percent: must be a percentage/],
    ] as const) {
      const run = await runAgentProcess(AGENT, { thresholds });
      expect(run.exitCode).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe('');
    }
    const unknown = await runAgentProcess(AGENT, { verbose: true });
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('unknown field "verbose"');
  });

  it("has an input_schema that takes the documented inputs and refuses others", () => {
    const valid = inputSchemaValidator(AGENT);
    expect(valid({})).toBe(true);
    expect(valid({ thresholds: { disk_warning_percent: 70, disk_critical_percent: 85, load_critical_per_cpu: 3 } })).toBe(true);
    expect(valid({ thresholds: { disk_full: 1 } })).toBe(false);
    expect(valid({ thresholds: { memory_warning_percent: 120 } })).toBe(false);
    expect(valid({ thresholds: { load_warning_per_cpu: -1 } })).toBe(false);
    expect(valid({ verbose: true })).toBe(false);
  });
});
