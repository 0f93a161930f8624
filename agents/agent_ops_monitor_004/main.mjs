// agent_ops_monitor_004: the health of the host this node runs on, now. See docs/sections/starter-agents.md.
import { hostname, release, uptime } from 'node:os';
import { refuseUnknownFields, runAgent } from './agent-io.mjs';
import { judgeHost, summarise, worstSeverity } from './findings.mjs';
import { readFilesystems, readLoad, readMemory, readNodeDatabase, readSystemd } from './host-facts.mjs';
import { effectiveThresholds } from './thresholds.mjs';

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
  const facts = { load, memory, swap, filesystems: mounts.filesystems, systemd, database };
  const findings = judgeHost(facts, thresholds);
  return {
    summary: summarise(findings),
    status: worstSeverity(findings),
    checked_at: new Date().toISOString(),
    host: { hostname: hostname(), kernel: release(), uptime_seconds: Math.round(uptime()) },
    thresholds,
    ...facts,
    skipped_fstypes: mounts.skipped_fstypes,
    findings,
    truncated: mounts.truncated || Boolean(systemd.failed_units_truncated),
  };
});

// A statfs stuck on a dead network mount holds a libuv thread forever, and with it the process: the answer is
// already written, so leave without waiting for it.
if (hungMount) process.exit();
