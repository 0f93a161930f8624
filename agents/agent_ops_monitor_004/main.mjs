// agent_ops_monitor_004: the health of the host this node runs on, now and over its recorded runs: trends, when a
// filesystem will be full, and what changed since the last run. See docs/sections/starter-agents.md.
import { hostname, release, uptime } from 'node:os';
import { refuseUnknownFields, runAgent } from './agent-io.mjs';
import { changesSince, listeningPorts, topProcesses } from './changes.mjs';
import { forecastFindings, judgeHost, summarise, worstSeverity } from './findings.mjs';
import { openHistory } from './history.mjs';
import { readFilesystems, readLoad, readMemory, readNodeDatabase, readSystemd } from './host-facts.mjs';
import { effectiveThresholds } from './thresholds.mjs';
import { fillForecast, trendOf } from './trends.mjs';

const NODE_SERVICE_UNIT = 'svc-swarm-node.service';

/** The mount holding `path`: the longest mount point that is a prefix of it. */
function filesystemOf(path, filesystems) {
  let best = null;
  for (const fs of filesystems) {
    const prefix = fs.mount === '/' ? '/' : `${fs.mount}/`;
    if ((path === fs.mount || path.startsWith(prefix)) && (best === null || fs.mount.length > best.length)) best = fs.mount;
  }
  return best;
}

let hungMount = false;

await runAgent('agent_ops_monitor_004', async (input) => {
  refuseUnknownFields(input, ['thresholds']);
  const thresholds = effectiveThresholds(input.thresholds);
  const [load, { memory, swap }, mounts, systemd, database] = await Promise.all([
    readLoad(),
    readMemory(),
    readFilesystems(),
    readSystemd(NODE_SERVICE_UNIT),
    readNodeDatabase(process.env.SWARM_NODE_HOME),
  ]);
  hungMount = mounts.hung;
  if (database) database.filesystem = filesystemOf(database.path, mounts.filesystems);
  const now = Date.now();
  const history = openHistory(process.env.SWARM_STATE_DIR);
  const previous = history.samples.at(-1) ?? null;
  const ports = listeningPorts();
  const top = topProcesses();
  const sample = {
    at: now,
    load_per_cpu: load.per_cpu.five,
    memory_percent: memory.used_percent,
    filesystems: Object.fromEntries(mounts.filesystems.filter((fs) => fs.used_percent !== undefined && !fs.read_only).map((fs) => [fs.mount, fs.used_percent])),
    ports,
    failed_units: systemd.available ? systemd.failed_units.map((unit) => unit.unit) : null,
    top: top ? { memory: top.memory.map((p) => p.name), cpu: top.cpu.map((p) => p.name) } : null,
  };
  const samples = [...history.samples, sample];
  const forecasts = Object.keys(sample.filesystems)
    .map((mount) => ({ mount, forecast: fillForecast(samples.filter((old) => old.filesystems?.[mount] !== undefined).map((old) => ({ at: old.at, used_percent: old.filesystems[mount] })), now) }))
    .filter((entry) => entry.forecast !== null);
  for (const fs of mounts.filesystems) {
    const entry = forecasts.find((candidate) => candidate.mount === fs.mount);
    if (entry) fs.full_forecast = entry.forecast;
  }
  const trends = {
    memory: trendOf(samples.map((old) => ({ at: old.at, value: old.memory_percent }))),
    load: trendOf(samples.map((old) => ({ at: old.at, value: old.load_per_cpu }))),
  };
  const facts = { load, memory, swap, filesystems: mounts.filesystems, systemd, database };
  const findings = [...judgeHost(facts, thresholds), ...forecastFindings(forecasts)];
  const status = worstSeverity(findings);
  sample.status = status;
  const changes = changesSince(previous, sample);
  history.record(sample, now);
  return {
    summary: summarise(findings, changes),
    status,
    status_changed: previous?.status !== undefined && previous.status !== status ? { from: previous.status, to: status, since: new Date(previous.at).toISOString() } : null,
    checked_at: new Date(now).toISOString(),
    host: { hostname: hostname(), kernel: release(), uptime_seconds: Math.round(uptime()) },
    thresholds,
    ...facts,
    skipped_fstypes: mounts.skipped_fstypes,
    trends,
    listening_ports: ports ?? { visible: false, note: "the host's sockets are not visible from this agent's network namespace" },
    top_processes: top ?? { visible: false, note: "the host's processes are not visible from this agent's PID namespace" },
    changes,
    history: history.kept ? { runs: samples.length, since: new Date(samples[0].at).toISOString(), kept_between_runs: true } : { runs: 1, kept_between_runs: false },
    findings,
    truncated: mounts.truncated || Boolean(systemd.failed_units_truncated),
  };
});

// A statfs stuck on a dead network mount holds a libuv thread forever, and with it the process: the answer is
// already written, so leave without waiting for it.
if (hungMount) process.exit();
