// The monitor's memory between runs: one line of JSON per run in its state directory (SWARM_STATE_DIR), holding what
// trends and changes need (each filesystem's use, memory, load, listening ports, failed units, top processes, the
// status), at most 30 days and 10,000 runs of it. Without a state directory there is no history, and the answer
// says so.
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const FILE = 'history.jsonl';
const MAX_SAMPLES = 10_000;
const MAX_AGE_MS = 30 * 24 * 3_600_000;

export function openHistory(stateDir) {
  if (!stateDir) return { kept: false, samples: [], record() {} };
  const path = join(stateDir, FILE);
  const samples = [];
  if (existsSync(path)) {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      try {
        samples.push(JSON.parse(line));
      } catch {
        // A line cut short by a run that was killed mid-write: the rest of the history stands.
      }
    }
  }
  return {
    kept: true,
    samples,
    /** Adds this run's sample, trimming what is too old or too much (rewritten whole then, renamed into place). */
    record(sample, now) {
      const kept = samples.filter((old) => now - old.at <= MAX_AGE_MS);
      if (kept.length !== samples.length || kept.length >= MAX_SAMPLES) {
        const lines = [...kept.slice(-(MAX_SAMPLES - 1)), sample].map((entry) => JSON.stringify(entry)).join('\n');
        writeFileSync(`${path}.tmp`, `${lines}\n`);
        renameSync(`${path}.tmp`, path);
      } else {
        appendFileSync(path, `${JSON.stringify(sample)}\n`);
      }
    },
  };
}
