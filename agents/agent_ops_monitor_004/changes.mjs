// What the host runs, to compare with the last run: the sockets listening (from /proc/net), the processes using the
// most memory and CPU. Read from the host's /proc, which the node may give the agent at SWARM_HOST_PROC when the
// agent's own /proc is its sandbox's (a PID namespace shows the agent only its own processes, a network namespace
// only its own sockets): then the answer says these are not visible rather than that nothing runs.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const TOP = 5;
const TICKS_PER_SECOND = 100;

export function hostProc() {
  return process.env.SWARM_HOST_PROC || '/proc';
}

function decodeAddress(hex) {
  if (hex.length === 8) return hex.match(/../g).reverse().map((byte) => parseInt(byte, 16)).join('.');
  // IPv6 in /proc/net is four 32-bit words, each in host (little-endian) order.
  const words = hex.match(/.{8}/g).map((word) => word.match(/../g).reverse().join(''));
  return `[${words.join('').match(/.{4}/g).map((group) => group.replace(/^0+(?=.)/, '')).join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}]`;
}

/** Whether `proc` shows the host's network: a network namespace of the agent's own has the loopback only. */
export function seesHostNetwork(proc = hostProc()) {
  try {
    const interfaces = readFileSync(join(proc, 'net', 'dev'), 'utf8').split('\n').slice(2).map((line) => line.split(':')[0].trim()).filter(Boolean);
    return interfaces.some((name) => name !== 'lo');
  } catch {
    return false;
  }
}

/** Listening TCP sockets and bound UDP ones, as "tcp 0.0.0.0:22", sorted; null when the host's are not visible. */
export function listeningPorts(proc = hostProc()) {
  if (!seesHostNetwork(proc)) return null;
  const found = new Set();
  for (const [file, protocol, state] of [['tcp', 'tcp', '0A'], ['tcp6', 'tcp', '0A'], ['udp', 'udp', '07'], ['udp6', 'udp', '07']]) {
    let text;
    try {
      text = readFileSync(join(proc, 'net', file), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 4 || fields[3] !== state) continue;
      const [address, port] = fields[1].split(':');
      found.add(`${protocol} ${decodeAddress(address)}:${parseInt(port, 16)}`);
    }
  }
  return [...found].sort();
}

/** Whether `proc` shows the host's processes: in a PID namespace of its own the agent is among a few first pids. */
export function seesHostProcesses(proc = hostProc()) {
  if (proc !== '/proc') return true;
  const pids = readdirSync(proc).filter((name) => /^\d+$/.test(name));
  return !(process.pid < 10 && pids.length < 10);
}

/**
 * The processes using the most memory (RSS) and the most CPU over their life: `{memory: [...], cpu: [...]}`; null
 * when the host's are not visible.
 */
export function topProcesses(proc = hostProc()) {
  if (!seesHostProcesses(proc)) return null;
  const uptime = Number(readFileSync(join(proc, 'uptime'), 'utf8').split(' ')[0]);
  const processes = [];
  for (const name of readdirSync(proc)) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(join(proc, name, 'stat'), 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
      const age = Math.max(1, uptime - Number(fields[19]) / TICKS_PER_SECOND);
      const rss = Number(fields[21]) * 4096;
      processes.push({ pid: Number(name), name: comm, rss_bytes: rss, cpu_percent: Math.round((cpuSeconds / age) * 1000) / 10 });
    } catch {
      // Gone between the listing and the read.
    }
  }
  const top = (key) => [...processes].sort((a, b) => b[key] - a[key]).slice(0, TOP);
  return { memory: top('rss_bytes'), cpu: top('cpu_percent') };
}

/** What differs from the last run: ports opened and closed, units newly failed or recovered, new names at the top. */
export function changesSince(previous, current) {
  if (!previous) return [];
  const changes = [];
  const diff = (before = [], after = [], what, opened, closed) => {
    for (const item of after) if (!before.includes(item)) changes.push({ what, change: opened, item });
    for (const item of before) if (!after.includes(item)) changes.push({ what, change: closed, item });
  };
  if (previous.ports && current.ports) diff(previous.ports, current.ports, 'listening_port', 'opened', 'closed');
  if (previous.failed_units && current.failed_units) diff(previous.failed_units, current.failed_units, 'failed_unit', 'failed', 'recovered');
  for (const key of ['memory', 'cpu']) {
    const before = previous.top?.[key];
    const after = current.top?.[key];
    if (before && after) for (const name of after) if (!before.includes(name)) changes.push({ what: `top_${key}_process`, change: 'new', item: name });
  }
  if (previous.status && previous.status !== current.status) changes.push({ what: 'status', change: `${previous.status} → ${current.status}`, item: current.status });
  return changes;
}
