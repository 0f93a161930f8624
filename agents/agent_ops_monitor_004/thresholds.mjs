// The default thresholds and the `thresholds` input that overrides them. A value at or above a threshold raises
// the finding to that severity. Kept in step with agent.json's input_schema and docs/sections/starter-agents.md.
import { InputError } from './agent-io.mjs';

export const DEFAULT_THRESHOLDS = Object.freeze({
  // The 5-minute load average divided by the CPU count: 1.0 means every CPU busy with a queue starting.
  load_warning_per_cpu: 1.0,
  load_critical_per_cpu: 2.0,
  // Memory in use: total minus MemAvailable.
  memory_warning_percent: 85,
  memory_critical_percent: 95,
  swap_warning_percent: 80,
  swap_critical_percent: 95,
  // Both block and inode use of every writable filesystem.
  disk_warning_percent: 80,
  disk_critical_percent: 90,
});

const PAIRS = [
  ['load_warning_per_cpu', 'load_critical_per_cpu'],
  ['memory_warning_percent', 'memory_critical_percent'],
  ['swap_warning_percent', 'swap_critical_percent'],
  ['disk_warning_percent', 'disk_critical_percent'],
];

/** The defaults with the caller's overrides; refuses unknown keys, non-numbers, and a warning above its critical. */
export function effectiveThresholds(overrides) {
  if (overrides === undefined) return { ...DEFAULT_THRESHOLDS };
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) throw new InputError('thresholds: must be an object');
  const thresholds = { ...DEFAULT_THRESHOLDS };
  for (const [key, value] of Object.entries(overrides)) {
    if (!(key in DEFAULT_THRESHOLDS)) throw new InputError(`thresholds: unknown key "${key}" (known: ${Object.keys(DEFAULT_THRESHOLDS).join(', ')})`);
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new InputError(`thresholds.${key}: must be a number >= 0`);
    if (key.endsWith('_percent') && value > 100) throw new InputError(`thresholds.${key}: must be a percentage (0 to 100)`);
    thresholds[key] = value;
  }
  for (const [warning, critical] of PAIRS) {
    if (thresholds[warning] > thresholds[critical]) {
      throw new InputError(`thresholds: ${warning} (${thresholds[warning]}) is above ${critical} (${thresholds[critical]})`);
    }
  }
  return thresholds;
}

/** The severity of `value` against a warning/critical pair. */
export function severityOf(value, warningAt, criticalAt) {
  if (value >= criticalAt) return 'critical';
  if (value >= warningAt) return 'warning';
  return 'ok';
}
