// A node's health in the words a person reads (docs/api.md "Node health"), the same in the console's nodes page and
// `swarm-node nodes`: sizes in binary units, an uptime in days and hours, the memory in use as a percentage.
import type { NodeHealth } from '../contract/node-protocol.js';

/** Bytes as a person reads a disk's or a memory's size: B, then KiB to PiB with one decimal. */
export function formatSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A span of seconds: "42 s", "3 min", "5 h 2 min", "3 d 4 h". */
export function formatSpan(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  if (whole < 60) return `${whole} s`;
  if (whole < 3600) return `${Math.floor(whole / 60)} min`;
  if (whole < 86_400) return `${Math.floor(whole / 3600)} h ${Math.floor((whole % 3600) / 60)} min`;
  return `${Math.floor(whole / 86_400)} d ${Math.floor((whole % 86_400) / 3600)} h`;
}

/** The share of the memory in use (not available), in whole percent. */
export function memoryUsedPercent(health: Pick<NodeHealth, 'memory_total_bytes' | 'memory_available_bytes'>): number {
  if (health.memory_total_bytes === 0) return 0;
  return Math.round((100 * (health.memory_total_bytes - health.memory_available_bytes)) / health.memory_total_bytes);
}

/** The three load averages, two decimals each: "0.52 / 0.40 / 0.31". */
export function loadText(health: Pick<NodeHealth, 'load_1' | 'load_5' | 'load_15'>): string {
  return [health.load_1, health.load_5, health.load_15].map((value) => value.toFixed(2)).join(' / ');
}
