// agent_ops_monitor_004 on this very host: its facts are checked against /proc and statfs read by the test.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
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
