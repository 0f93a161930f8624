// Judges the host facts against the thresholds: one finding per check, each ok, warning or critical.
import { severityOf } from './thresholds.mjs';

const RANK = { ok: 0, warning: 1, critical: 2 };

export function worstSeverity(findings) {
  return findings.reduce((worst, finding) => (RANK[finding.severity] > RANK[worst] ? finding.severity : worst), 'ok');
}

function measured(check, target, value, warningAt, criticalAt, message) {
  return { check, target, severity: severityOf(value, warningAt, criticalAt), value, warning_at: warningAt, critical_at: criticalAt, message };
}

function filesystemFinding(fs, t) {
  if (fs.error) {
    // Only a statfs that never answered is the host's problem; a mount the agent may not look into is not.
    return fs.error.startsWith('ETIMEDOUT') ? { check: 'filesystem', target: fs.mount, severity: 'critical', message: `${fs.mount}: ${fs.error}` } : null;
  }
  if (fs.read_only) return null; // nothing writes there, so fullness is no risk
  const blocks = measured('filesystem', fs.mount, fs.used_percent, t.disk_warning_percent, t.disk_critical_percent, `${fs.mount} is ${fs.used_percent}% full (${mib(fs.available_bytes)} free)`);
  if (fs.inodes_used_percent === null) return blocks;
  const inodes = severityOf(fs.inodes_used_percent, t.disk_warning_percent, t.disk_critical_percent);
  if (RANK[inodes] <= RANK[blocks.severity]) return { ...blocks, inodes_used_percent: fs.inodes_used_percent };
  return { ...blocks, severity: inodes, inodes_used_percent: fs.inodes_used_percent, message: `${fs.mount} has used ${fs.inodes_used_percent}% of its inodes (${fs.used_percent}% of its space)` };
}

function systemdFindings(systemd) {
  if (!systemd.available) return [];
  const findings = systemd.failed_units.map((unit) => ({ check: 'systemd', target: unit.unit, severity: 'warning', message: `systemd unit ${unit.unit} has failed (${unit.sub})` }));
  if (systemd.failed_units_error) findings.push({ check: 'systemd', target: 'failed units', severity: 'warning', message: `systemctl --failed did not answer: ${systemd.failed_units_error}` });
  if (findings.length === 0) findings.push({ check: 'systemd', target: 'failed units', severity: 'ok', message: 'no failed systemd units' });
  const service = systemd.node_service;
  if (service.error) {
    findings.push({ check: 'node_service', target: service.unit, severity: 'warning', message: `systemctl show ${service.unit} failed: ${service.error}` });
  } else if (service.load_state === 'not-found') {
    findings.push({ check: 'node_service', target: service.unit, severity: 'warning', message: `${service.unit} is not installed as a systemd service` });
  } else {
    const state = service.active_state;
    const severity = state === 'active' ? 'ok' : state === 'activating' || state === 'reloading' ? 'warning' : 'critical';
    findings.push({ check: 'node_service', target: service.unit, severity, message: `${service.unit} is ${state} (${service.sub_state})` });
  }
  return findings;
}

function databaseFinding(database) {
  if (database === null) return null;
  if (database.error) return { check: 'node_database', target: database.path, severity: 'warning', message: `cannot stat the node database: ${database.error}` };
  if (database.size_bytes === null) return { check: 'node_database', target: database.path, severity: 'warning', message: `no node database at ${database.path}` };
  const wal = database.wal_bytes ? ` (WAL ${mib(database.wal_bytes)})` : '';
  const where = database.filesystem ? ` on ${database.filesystem}` : '';
  return { check: 'node_database', target: database.path, severity: 'ok', value: database.size_bytes, message: `node database is ${mib(database.size_bytes)}${wal}${where}` };
}

export function judgeHost(facts, t) {
  const findings = [
    measured('load', '5-minute load per CPU', facts.load.per_cpu.five, t.load_warning_per_cpu, t.load_critical_per_cpu, `load ${facts.load.per_cpu.five} per CPU over 5 minutes (${facts.load.five} on ${facts.load.cpus} CPUs)`),
    measured('memory', 'memory', facts.memory.used_percent, t.memory_warning_percent, t.memory_critical_percent, `memory ${facts.memory.used_percent}% used (${mib(facts.memory.available_bytes)} available)`),
  ];
  if (facts.swap.total_bytes > 0) {
    findings.push(measured('swap', 'swap', facts.swap.used_percent, t.swap_warning_percent, t.swap_critical_percent, `swap ${facts.swap.used_percent}% used`));
  }
  for (const fs of facts.filesystems) {
    const finding = filesystemFinding(fs, t);
    if (finding) findings.push(finding);
  }
  findings.push(...systemdFindings(facts.systemd));
  const database = databaseFinding(facts.database);
  if (database) findings.push(database);
  return findings;
}

/** Hours before a filesystem is full at which its forecast is critical, and a warning. */
const FULL_CRITICAL_HOURS = 24;
const FULL_WARNING_HOURS = 7 * 24;

/** A finding for each filesystem that will be full within a week at its recorded rate. */
export function forecastFindings(forecasts) {
  return forecasts
    .filter(({ forecast }) => forecast.hours_to_full < FULL_WARNING_HOURS)
    .map(({ mount, forecast }) => ({
      check: 'filesystem_forecast',
      target: mount,
      severity: forecast.hours_to_full < FULL_CRITICAL_HOURS ? 'critical' : 'warning',
      value: forecast.hours_to_full,
      message: `${mount} fills ${forecast.rate_percent_per_hour} points an hour: full in ${forecast.hours_to_full < 48 ? `${forecast.hours_to_full} hours` : `${(forecast.hours_to_full / 24).toFixed(1)} days`} (${forecast.full_at})`,
    }));
}

/** One line: the overall status, the count of checks, the worst findings by name, and how many things changed. */
export function summarise(findings, changes = []) {
  const changed = changes.length > 0 ? ` ${changes.length} change${changes.length === 1 ? '' : 's'} since the last run: ${changes.slice(0, 3).map((change) => `${change.what.replace(/_/g, ' ')} ${change.item} ${change.change}`).join('; ')}${changes.length > 3 ? '; …' : ''}.` : '';
  return `${summaryOf(findings)}${changed}`;
}

function summaryOf(findings) {
  const status = worstSeverity(findings);
  const problems = findings.filter((finding) => finding.severity !== 'ok').sort((a, b) => RANK[b.severity] - RANK[a.severity]);
  if (problems.length === 0) {
    const valueOf = (check) => findings.find((finding) => finding.check === check)?.value;
    const fullest = findings.filter((finding) => finding.check === 'filesystem').sort((a, b) => b.value - a.value)[0];
    const disk = fullest ? `, fullest filesystem ${fullest.target} at ${fullest.value}%` : '';
    return `ok: ${findings.length} checks within thresholds (load ${valueOf('load')}/CPU, memory ${valueOf('memory')}% used${disk})`;
  }
  const shown = problems.slice(0, 3).map((finding) => finding.message).join('; ');
  const more = problems.length > 3 ? `; and ${problems.length - 3} more` : '';
  return `${status}: ${problems.length} of ${findings.length} checks need attention: ${shown}${more}`;
}

function mib(bytes) {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}
